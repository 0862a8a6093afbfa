// Reading what the reference is written from: the binary's --help, a metrics exposition, the
// sources' event names, the events' meanings, and the generated blocks of a page.
#include "tests/unit/ReferenceDocs.h"

#include <filesystem>
#include <regex>
#include <sstream>

#include "tests/unit/Process.h"
#include "tests/unit/SourceTree.h"

namespace reclaimd::testing {

namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(' ');
  const std::size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "--log-level LEVEL:{trace,debug}=info" into its parts.
HelpOption parseSpec(const std::string& spec) {
  HelpOption o;
  const std::size_t space = spec.find(' ');
  o.names = spec.substr(0, space);
  std::string rest = space == std::string::npos ? "" : spec.substr(space + 1);
  if (const std::size_t eq = rest.find('='); eq != std::string::npos) {
    o.fallback = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  if (const std::size_t brace = rest.find(":{"); brace != std::string::npos) {
    o.choices = rest.substr(brace + 2, rest.size() - brace - 3);
    rest = rest.substr(0, brace);
  }
  o.placeholder = rest;
  return o;
}

}  // namespace

std::string HelpOption::longName() const {
  const std::size_t comma = names.rfind(',');
  return comma == std::string::npos ? names : names.substr(comma + 1);
}

HelpCommand parseHelp(const std::string& text) {
  HelpCommand cmd;
  std::vector<HelpOption>* section = nullptr;
  const std::vector<std::string> all = lines(text);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const std::string& line = all[i];
    if (line == "Options:") section = &cmd.options;
    if (line == "Positionals:") section = &cmd.positionals;
    if (line == "Subcommands:") section = nullptr;
    if (!section || line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ') continue;
    // The spec ends at the first run of two spaces; a long one has its help on the next line.
    const std::size_t gap = line.find("  ", 2);
    HelpOption o = parseSpec(trim(line.substr(2, gap == std::string::npos ? std::string::npos : gap - 2)));
    o.help = gap == std::string::npos ? "" : trim(line.substr(gap));
    if (o.help.empty() && i + 1 < all.size() && all[i + 1].compare(0, 10, "          ") == 0) o.help = trim(all[++i]);
    if (section == &cmd.positionals) {
      o.placeholder = o.names;  // "FILE REQUIRED": the name is what the user writes
      o.names.clear();
    }
    section->push_back(o);
  }
  return cmd;
}

std::vector<std::string> parseSubcommands(const std::string& text) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : lines(text)) {
    if (line == "Subcommands:") {
      in = true;
    } else if (in && line.compare(0, 2, "  ") == 0 && line.size() > 2 && line[2] != ' ') {
      out.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (in && line.empty()) {
      in = false;
    }
  }
  return out;
}

std::vector<HelpCommand> readCommandLine(const std::string& binary) {
  std::vector<HelpCommand> out;
  const auto [code, top] = runCommand({binary, "--help"});
  HelpCommand main = parseHelp(top);
  main.description = lines(top).empty() ? "" : lines(top).front();
  out.push_back(main);
  for (const std::string& name : parseSubcommands(top)) {
    const auto [subCode, text] = runCommand({binary, name, "--help"});
    HelpCommand sub = parseHelp(text);
    sub.name = name;
    sub.description = lines(text).empty() ? "" : lines(text).front();
    out.push_back(sub);
  }
  return out;
}

std::vector<Metric> parseExposition(const std::string& text) {
  std::vector<Metric> out;
  const std::regex help(R"(^# HELP (\w+) (.*)$)"), type(R"(^# TYPE (\w+) (\w+)$)"), sample(R"(^(\w+)\{(.*)\} )");
  const std::regex label(R"re((\w+)="(?:[^"\\]|\\.)*")re");
  for (const std::string& line : lines(text)) {
    std::smatch m;
    if (std::regex_search(line, m, help)) {
      out.push_back(Metric{m[1], "", m[2], {}});
    } else if (std::regex_search(line, m, type) && !out.empty() && out.back().name == m[1].str()) {
      out.back().type = m[2];
    } else if (std::regex_search(line, m, sample) && !out.empty() && out.back().name == m[1].str() &&
               out.back().labels.empty()) {
      const std::string labels = m[2];
      for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label); it != std::sregex_iterator(); ++it)
        out.back().labels.push_back((*it)[1]);
    }
  }
  return out;
}

std::map<std::string, std::set<std::string>> eventsInSources(const std::string& root) {
  // Event(Severity::Info, "start"), emit(Severity::Info, "held"), a severity chosen by a condition
  // (cond ? Severity::Error : Severity::Info, "reclaim_step"), a name chosen by one
  // (Severity::Error, failed ? "config_invalid" : "setup_failed"), and spdlog::warn("event=x ...").
  const std::regex direct(R"re(Severity::(\w+)\s*,\s*"([a-z_]+)")re");
  const std::regex either(R"re(Severity::(\w+)\s*:\s*Severity::\w+\s*,\s*"([a-z_]+)")re");
  const std::regex chosen(R"re(Severity::(\w+)\s*,\s*[^,;"()]*\?\s*"([a-z_]+)"\s*:\s*"([a-z_]+)")re");
  const std::regex logged(R"re(spdlog::(\w+)\(\s*"event=([a-z_]+))re");
  std::map<std::string, std::set<std::string>> out;
  auto lower = [](std::string s) {
    for (char& ch : s)
      ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s == "warning" ? std::string("warn") : s;
  };
  for (const char* dir : {"base", "proc", "cgroup", "psi", "policies", "controller"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root + "/" + dir)) {
      const std::string ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".h") continue;
      const std::string text = readSource(entry.path());
      for (const std::regex* r : {&direct, &either, &logged}) {
        for (auto it = std::sregex_iterator(text.begin(), text.end(), *r); it != std::sregex_iterator(); ++it)
          out[(*it)[2]].insert(lower((*it)[1]));
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), chosen); it != std::sregex_iterator(); ++it) {
        out[(*it)[2]].insert(lower((*it)[1]));
        out[(*it)[3]].insert(lower((*it)[1]));
      }
    }
  }
  return out;
}

std::map<std::string, std::string> readMeanings(const std::string& path) {
  std::map<std::string, std::string> out;
  for (const std::string& line : lines(readSource(path))) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t colon = line.find(": ");
    if (colon != std::string::npos) out[line.substr(0, colon)] = line.substr(colon + 2);
  }
  return out;
}

std::optional<std::string> blockBetween(const std::string& text, const std::string& begin, const std::string& end) {
  const std::size_t b = text.find(begin + "\n");
  if (b == std::string::npos) return std::nullopt;
  const std::size_t from = b + begin.size() + 1;
  const std::size_t e = text.find(end + "\n", from);
  if (e == std::string::npos) return std::nullopt;
  return text.substr(from, e - from);
}

std::string replaceBlock(const std::string& text, const std::string& begin, const std::string& end,
                         const std::string& content) {
  const std::size_t b = text.find(begin + "\n");
  if (b == std::string::npos) return text;
  const std::size_t from = b + begin.size() + 1;
  const std::size_t e = text.find(end + "\n", from);
  if (e == std::string::npos) return text;
  return text.substr(0, from) + content + text.substr(e);
}

}  // namespace reclaimd::testing
