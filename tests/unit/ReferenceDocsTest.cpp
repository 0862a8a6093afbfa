// The man page and the README's reference say what the binary does: their generated blocks equal
// what ReferenceDocs writes from the binary and the sources (RECLAIMD_REGENERATE=1 rewrites
// them), every event the sources emit has a meaning, and the hand-written text around them names
// only options, metrics and events that exist.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <regex>

#include "controller/operate/Status.h"
#include "tests/unit/ReferenceDocs.h"
#include "tests/unit/SourceTree.h"

namespace reclaimd::testing {
namespace {

const std::string kMan = kSourceRoot + "/deploy/man/reclaimd.8";
const std::string kReadme = kSourceRoot + "/README.md";
const std::string kMeanings = kSourceRoot + "/docs/events.txt";

// Everything formatMetrics can emit: every optional set, one of each list.
controller::Status everything() {
  controller::Status s;
  s.version = "0.1.0";
  s.busyRatio = 0.1;
  s.reclaimStartsInSeconds = 10;
  s.lastActionTimestamp = 1.0;
  s.busyCgroups = {{"bg.slice", 2.0}};
  s.pressure = {controller::ScopeStatus{"machine", "trigger"}};
  controller::TargetStatus t;
  t.cgroup = "/";
  t.rule = "machine";
  t.lastActionTimestamp = 1.0;
  t.trim = "probing";  // the trimming gauges are emitted only for a target being trimmed
  s.targets = {t};
  s.process = controller::ProcessStatus{};
  return s;
}

struct Block {
  std::string name;
  std::string content;
};

// Compares each block of `path` between its markers with what was generated, or rewrites it.
void checkBlocks(const std::string& path, const std::vector<Block>& blocks,
                 const std::function<std::pair<std::string, std::string>(const std::string&)>& markers) {
  std::string text = readSource(path);
  for (const Block& b : blocks) {
    const auto [begin, end] = markers(b.name);
    if (regenerate()) text = replaceBlock(text, begin, end, b.content);
    const auto got = blockBetween(text, begin, end);
    ASSERT_TRUE(got.has_value()) << path << " has no block between \"" << begin << "\" and \"" << end << "\"";
    EXPECT_EQ(*got, b.content) << path << ": the generated block \"" << b.name
                               << "\" differs from what the binary and the sources say; "
                                  "RECLAIMD_REGENERATE=1 ctest -R ReferenceDocs rewrites it";
  }
  if (regenerate()) writeSource(path, text);
}

std::pair<std::string, std::string> roffMarkers(const std::string& name) {
  return {".\\\" BEGIN generated " + name, ".\\\" END generated " + name};
}

std::pair<std::string, std::string> markdownMarkers(const std::string& name) {
  return {"<!-- BEGIN generated " + name + " -->", "<!-- END generated " + name + " -->"};
}

TEST(ReferenceDocs, ManPageIsWrittenFromTheBinaryAndTheSources) {
  const auto commands = readCommandLine(RECLAIMD_BINARY);
  const auto metrics = parseExposition(controller::formatMetrics(everything()));
  const auto events = eventsInSources(kSourceRoot);
  const auto meanings = readMeanings(kMeanings);
  checkBlocks(kMan,
              {{"synopsis", roffSynopsis(commands)},
               {"options", roffOptions(commands)},
               {"keys", roffKeys()},
               {"exit-codes", roffExitCodes()},
               {"events", roffEvents(events, meanings)},
               {"metrics", roffMetrics(metrics)}},
              roffMarkers);
}

// The reference lists each metric's labels from one sample of it: a per-target series the sample
// status does not produce would be listed without the labels that tell its targets apart.
TEST(ReferenceDocs, EveryPerTargetMetricIsListedWithItsLabels) {
  for (const Metric& m : parseExposition(controller::formatMetrics(everything()))) {
    if (m.name.starts_with("reclaimd_cgroup_")) {
      EXPECT_EQ(m.labels, (std::vector<std::string>{"cgroup", "rule"})) << m.name;
    }
  }
}

TEST(ReferenceDocs, ReadmeReferenceIsWrittenFromTheBinaryAndTheSources) {
  const auto commands = readCommandLine(RECLAIMD_BINARY);
  const auto metrics = parseExposition(controller::formatMetrics(everything()));
  const auto events = eventsInSources(kSourceRoot);
  const auto meanings = readMeanings(kMeanings);
  checkBlocks(kReadme,
              {{"options", markdownOptions(commands)},
               {"exit-codes", markdownExitCodes()},
               {"events", markdownEvents(events, meanings)},
               {"metrics", markdownMetrics(metrics)}},
              markdownMarkers);
}

TEST(ReferenceDocs, EveryEventTheSourcesEmitHasAMeaning) {
  const auto events = eventsInSources(kSourceRoot);
  const auto meanings = readMeanings(kMeanings);
  // The scanner knows the ways events are emitted today; a new way would find far fewer.
  EXPECT_GE(events.size(), 30u) << "the event scanner found too few names: has the way events are emitted changed?";
  for (const auto& [name, levels] : events)
    EXPECT_TRUE(meanings.count(name)) << "event " << name << " has no line in docs/events.txt";
  for (const auto& [name, meaning] : meanings)
    EXPECT_TRUE(events.count(name)) << "docs/events.txt explains " << name << ", which no source emits";
}

TEST(ReferenceDocs, ParsesCliHelpAsPrinted) {
  const HelpCommand c = parseHelp(
      "run the daemon\nUsage: reclaimd run [OPTIONS]\n\nOptions:\n"
      "  -h,--help                   Print this help message and exit\n"
      "  --proc-root DIR=/proc       where procfs is mounted\n"
      "  --log-level LEVEL:{trace,debug}=info\n"
      "                              trace or debug\n"
      "  --dry-run                   decide and log\n");
  ASSERT_EQ(c.options.size(), 4u);
  EXPECT_EQ(c.options[1].longName(), "--proc-root");
  EXPECT_EQ(c.options[1].placeholder, "DIR");
  EXPECT_EQ(c.options[1].fallback, "/proc");
  EXPECT_EQ(c.options[2].choices, "trace,debug");
  EXPECT_EQ(c.options[2].help, "trace or debug");
  EXPECT_EQ(c.options[3].placeholder, "");
  EXPECT_EQ(parseSubcommands("x\n\nSubcommands:\n  run    the daemon\n  probe  what\n\n"),
            (std::vector<std::string>{"run", "probe"}));
}

}  // namespace
}  // namespace reclaimd::testing
