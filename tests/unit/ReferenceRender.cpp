// Writing the reference: roff for deploy/man/reclaimd.8, markdown for the README.
#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include "controller/ExitCodes.h"
#include "policies/Keys.h"
#include "tests/unit/ReferenceDocs.h"

namespace reclaimd::testing {

namespace {

// One UTF-8 sequence at text[i] as its code point; i moves past it.
unsigned codePoint(const std::string& text, std::size_t& i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(k < text.size() ? text[k] : 0); };
  const unsigned lead = byte(i);
  const int extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : 1;
  unsigned cp = lead & (extra == 3 ? 0x07 : extra == 2 ? 0x0F : 0x1F);
  for (int k = 1; k <= extra; ++k)
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  i += extra;
  return cp;
}

std::string md(const std::string& text) {
  std::string out;
  for (char c : text)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string joined(const std::set<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

// The options of every subcommand, each once, with the subcommands that take it.
struct Seen {
  HelpOption option;
  std::vector<std::string> commands;
};

std::vector<Seen> distinctOptions(const std::vector<HelpCommand>& commands) {
  std::vector<Seen> out;
  for (const HelpCommand& c : commands) {
    for (const HelpOption& o : c.options) {
      auto same = [&](const Seen& s) { return s.option.names == o.names && s.option.help == o.help; };
      auto it = std::find_if(out.begin(), out.end(), same);
      if (it == out.end()) it = out.insert(out.end(), Seen{o, {}});
      it->commands.push_back(c.name.empty() ? "reclaimd" : c.name);
    }
  }
  return out;
}

// A man page's sentences begin with a capital: "where procfs is mounted" -> "Where ...".
std::string sentence(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 'a' + 'A');
  return text;
}

std::string commandList(const std::vector<std::string>& commands, bool roff) {
  std::string out;
  for (const std::string& c : commands)
    out += (out.empty() ? "" : ", ") + (roff ? "\\fB" + roffInline(c) + "\\fR" : "`" + c + "`");
  return out;
}

}  // namespace

std::string roffInline(const std::string& markdown) {
  std::string out;
  bool code = false;
  for (std::size_t i = 0; i < markdown.size(); ++i) {
    const char c = markdown[i];
    if (c == '`') {
      out += code ? "\\fR" : "\\fB";
      code = !code;
    } else if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\[u%04X]", codePoint(markdown, i));
      out += buf;
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

std::string roffSynopsis(const std::vector<HelpCommand>& commands) {
  std::string out;
  for (const HelpCommand& c : commands) {
    if (c.name.empty()) continue;
    const bool isDefault = c.description.find("(the default)") != std::string::npos;
    out += ".SY reclaimd\n" + std::string(isDefault ? ".RB [ " : ".B ") + roffInline(c.name) + (isDefault ? " ]" : "") +
           "\n";
    for (const HelpOption& p : c.positionals)
      out += ".I " + roffInline(p.placeholder) + "\n";
    for (const HelpOption& o : c.options) {
      if (o.longName() == "--help") continue;
      out +=
          ".OP " + roffInline(o.longName()) + (o.placeholder.empty() ? "" : " \"" + roffInline(o.placeholder) + "\"");
      out += "\n";
    }
    out += ".YS\n";
  }
  return out +
         ".SY reclaimd\n.BR \\-\\-version \" | \" \\-\\-help\n.YS\n.SY reclaimd\n.I subcommand\n.B \\-\\-help\n.YS\n";
}

std::string roffOptions(const std::vector<HelpCommand>& commands) {
  std::string out;
  for (const Seen& s : distinctOptions(commands)) {
    const HelpOption& o = s.option;
    std::string names = roffInline(o.names);
    names = std::regex_replace(names, std::regex(","), ", ");
    out += ".TP\n";
    out +=
        o.placeholder.empty() ? ".B " + names + "\n" : ".BI \"" + names + " \" \"" + roffInline(o.placeholder) + "\"\n";
    out += roffInline(sentence(o.help)) + ".\n";
    if (!o.choices.empty())
      out += "One of: " + roffInline(std::regex_replace(o.choices, std::regex(","), ", ")) + ".\n";
    if (!o.fallback.empty()) out += "Default: \\fB" + roffInline(o.fallback) + "\\fR.\n";
    out += "Taken by " + commandList(s.commands, true) + ".\n";
  }
  return out;
}

std::string markdownOptions(const std::vector<HelpCommand>& commands) {
  std::string out = "| option | taken by | default | meaning |\n|---|---|---|---|\n";
  for (const Seen& s : distinctOptions(commands)) {
    const HelpOption& o = s.option;
    std::string name = std::regex_replace(o.names, std::regex(","), ", ");
    if (!o.placeholder.empty()) name += " " + o.placeholder;
    std::string meaning = o.help;
    if (!o.choices.empty()) meaning += " (one of: " + std::regex_replace(o.choices, std::regex(","), ", ") + ")";
    out += "| `" + name + "` | " + commandList(s.commands, false) + " | " +
           (o.fallback.empty() ? "" : "`" + o.fallback + "`") + " | " + md(meaning) + " |\n";
  }
  return out;
}

std::string roffExitCodes() {
  std::string out;
  for (const auto& e : controller::kExitCodes)
    out += ".TP\n.B " + std::to_string(e.code) + "\n" + roffInline(sentence(std::string(e.meaning))) + ".\n";
  return out;
}

std::string markdownExitCodes() {
  std::string out = "| code | meaning |\n|---|---|\n";
  for (const auto& e : controller::kExitCodes)
    out += "| " + std::to_string(e.code) + " | " + std::string(e.meaning) + " |\n";
  return out;
}

std::string roffKeys() {
  // The README's table, policies/Keys.cpp's own rendering, row by row: one text for both.
  const std::regex row(R"(^\| `([^`]+)` \| `?([^`|]*)`? \| (.*) \|$)");
  std::string out;
  std::istringstream in(policies::referenceTable());
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    out += ".TP\n.BR " + roffInline(m[1]) + " \" (" + roffInline(m[2]) + ")\"\n" + roffInline(sentence(m[3])) + ".\n";
  }
  return out;
}

std::string roffMetrics(const std::vector<Metric>& metrics) {
  std::string out;
  for (const Metric& m : metrics) {
    std::string labels;
    for (const std::string& l : m.labels)
      labels += (labels.empty() ? "" : ",") + l;
    out += ".TP\n.B " + roffInline(m.name) + (labels.empty() ? "" : "{" + roffInline(labels) + "}") + "\n" + m.type +
           ": " + roffInline(m.help) + "\n";
  }
  return out;
}

std::string markdownMetrics(const std::vector<Metric>& metrics) {
  std::string out = "| metric | type | labels | meaning |\n|---|---|---|---|\n";
  for (const Metric& m : metrics) {
    std::string labels;
    for (const std::string& l : m.labels)
      labels += (labels.empty() ? "" : ", ") + l;
    out += "| `" + m.name + "` | " + m.type + " | " + labels + " | " + md(m.help) + " |\n";
  }
  return out;
}

std::string roffEvents(const std::map<std::string, std::set<std::string>>& events,
                       const std::map<std::string, std::string>& meanings) {
  std::string out;
  for (const auto& [name, levels] : events) {
    const auto it = meanings.find(name);
    out += ".TP\n.BR " + roffInline(name) + " \" (" + joined(levels, ", ") + ")\"\n" +
           roffInline(sentence(it == meanings.end() ? "" : it->second)) + ".\n";
  }
  return out;
}

std::string markdownEvents(const std::map<std::string, std::set<std::string>>& events,
                           const std::map<std::string, std::string>& meanings) {
  std::string out = "| event | level | meaning |\n|---|---|---|\n";
  for (const auto& [name, levels] : events) {
    const auto it = meanings.find(name);
    out += "| `" + name + "` | " + joined(levels, ", ") + " | " + md(it == meanings.end() ? "" : it->second) + " |\n";
  }
  return out;
}

}  // namespace reclaimd::testing
