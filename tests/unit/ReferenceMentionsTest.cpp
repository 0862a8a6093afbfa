// The hand-written documentation agrees with the binary: every `reclaimd SUBCOMMAND --option`
// it shows is an option that subcommand takes (its --help), every reclaimd_* metric it names is
// one formatMetrics emits, every event=NAME one the sources emit.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "controller/operate/Status.h"
#include "tests/unit/ReferenceDocs.h"
#include "tests/unit/SourceTree.h"

namespace reclaimd::testing {
namespace {

namespace fs = std::filesystem;

// The roff page as its reader sees the words: escapes and font changes gone.
std::string unroff(std::string text) {
  for (const char* font : {"\\fB", "\\fI", "\\fR", "\\fP", "\\&"}) {
    for (std::size_t at = text.find(font); at != std::string::npos; at = text.find(font, at))
      text.erase(at, 3 - (font[1] == '&'));
  }
  text = std::regex_replace(text, std::regex(R"(\\-)"), "-");
  return std::regex_replace(text, std::regex(R"(\\e)"), "\\");
}

// The pages people read: the READMEs, docs/, deploy/'s text and the man page.
std::vector<std::pair<std::string, std::string>> pages() {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const fs::path& p) {
    const std::string text = readSource(p);
    out.emplace_back(fs::relative(p, kSourceRoot).string(), p.extension() == ".8" ? unroff(text) : text);
  };
  add(kSourceRoot + "/README.md");
  for (const char* dir : {"docs", "deploy"}) {
    for (const auto& e : fs::recursive_directory_iterator(kSourceRoot + "/" + dir)) {
      const std::string ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".md" || ext == ".8" || ext == ".conf" || ext == ".service")) add(e.path());
    }
  }
  add(kSourceRoot + "/deploy/default/reclaimd");
  return out;
}

// Every line's `reclaimd WORDS` runs, up to a character that ends a command in prose or code.
std::vector<std::vector<std::string>> commandsIn(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  // The command by name or at its installed paths; build/release/controller/reclaimd is a file
  // named in some other command (a benchmark's --reclaimd).
  const std::regex run(R"re((?:^|[\s`("])(?:/usr/sbin/|/usr/local/sbin/)?reclaimd((?: +[^\s`'"|;)<>\\]+)+))re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), run); it != std::sregex_iterator(); ++it) {
    std::istringstream words((*it)[1].str());
    std::vector<std::string> cmd;
    for (std::string w; words >> w && w != "&&" && w != "#";)
      cmd.push_back(w);
    out.push_back(cmd);
  }
  return out;
}

using Takes = std::map<std::string, std::set<std::string>>;

// What `page` shows that its subcommand does not take: "PAGE: `reclaimd status ... --config`".
std::vector<std::string> misplacedOptions(const std::string& page, const std::string& text, const Takes& takes,
                                          std::size_t& seen) {
  std::vector<std::string> out;
  for (const std::vector<std::string>& cmd : commandsIn(text)) {
    if (cmd.empty()) continue;
    // reclaimd --version; reclaimd --dry-run (run is the default); reclaimd status --json.
    const bool named = takes.count(cmd[0]) != 0;
    const std::string sub = named ? cmd[0] : "run";
    for (std::size_t i = named ? 1 : 0; i < cmd.size(); ++i) {
      std::string w = cmd[i].substr(0, cmd[i].find('='));
      while (!w.empty() && w.front() == '[')
        w.erase(0, 1);
      while (!w.empty() && (w.back() == ',' || w.back() == '.' || w.back() == ':' || w.back() == ']'))
        w.pop_back();
      if (w.rfind("--", 0) != 0 || w.size() < 3) continue;
      ++seen;
      const bool known = takes.at(sub).count(w) || (!named && takes.at("").count(w));
      if (!known)
        out.push_back(page + ": `reclaimd " + (named ? sub + " " : "") + "... " + w + "`: not an option of " + sub);
    }
  }
  return out;
}

Takes optionsOfTheBinary() {
  Takes takes;
  for (const HelpCommand& c : readCommandLine(RECLAIMD_BINARY)) {
    for (const HelpOption& o : c.options)
      takes[c.name].insert(o.longName());
  }
  return takes;
}

TEST(ReferenceMentions, DocsShowOnlyOptionsTheSubcommandTakes) {
  const Takes takes = optionsOfTheBinary();
  ASSERT_TRUE(takes.count("run") && takes.count("status") && takes.count("")) << "no subcommands in --help";
  std::size_t seen = 0;
  for (const auto& [page, text] : pages()) {
    for (const std::string& problem : misplacedOptions(page, text, takes, seen))
      ADD_FAILURE() << problem;
  }
  EXPECT_GE(seen, 5u) << "the pages show hardly any command lines: is the scan still finding them?";
}

TEST(ReferenceMentions, AnOptionShownWithTheWrongSubcommandIsFound) {
  const Takes takes = optionsOfTheBinary();
  std::size_t seen = 0;
  const auto found = misplacedOptions("x.md",
                                      "run `reclaimd status --json` or `reclaimd status --config x`;\n"
                                      "    /usr/sbin/reclaimd probe --dry-run\n"
                                      "    reclaimd --metrics-listen 127.0.0.1:1 [--log-level LEVEL]\n",
                                      takes, seen);
  EXPECT_EQ(seen, 5u);
  EXPECT_EQ(found, (std::vector<std::string>{"x.md: `reclaimd status ... --config`: not an option of status",
                                             "x.md: `reclaimd probe ... --dry-run`: not an option of probe"}));
}

// Names that look like metrics but are build targets (reclaimd_unit_tests...).
std::set<std::string> targetNames() {
  std::set<std::string> out;
  const std::regex target(R"re(add_(?:executable|library|custom_target)\(\s*(\w+))re");
  for (const auto& e : fs::recursive_directory_iterator(kSourceRoot)) {
    if (e.path().string().find("/build") != std::string::npos || e.path().filename() != "CMakeLists.txt") continue;
    const std::string text = readSource(e.path());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), target); it != std::sregex_iterator(); ++it)
      out.insert((*it)[1]);
  }
  return out;
}

TEST(ReferenceMentions, DocsNameOnlyMetricsAndEventsThatExist) {
  controller::Status s;
  s.reclaimStartsInSeconds = 1;
  s.lastActionTimestamp = 1;
  s.targets.resize(1);
  s.targets[0].lastActionTimestamp = 1;
  std::set<std::string> metrics;
  for (const Metric& m : parseExposition(controller::formatMetrics(s)))
    metrics.insert(m.name);
  const std::set<std::string> targets = targetNames();
  const auto events = eventsInSources(kSourceRoot);
  const std::regex metric(R"re(\breclaimd_[a-z][a-z0-9_]*)re"), event(R"re(\bevent=([a-z_]+))re");
  for (const auto& [page, text] : pages()) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), metric); it != std::sregex_iterator(); ++it) {
      const std::string name = (*it)[0];
      EXPECT_TRUE(metrics.count(name) || targets.count(name)) << page << " names " << name << ", no such metric";
    }
    for (auto it = std::sregex_iterator(text.begin(), text.end(), event); it != std::sregex_iterator(); ++it)
      EXPECT_TRUE(events.count((*it)[1])) << page << " names event=" << (*it)[1] << ", which no source emits";
  }
}

}  // namespace
}  // namespace reclaimd::testing
