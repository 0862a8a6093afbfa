// The reference documentation written from what the binary uses, so it cannot drift: the
// command line from the built binary's --help, exit codes from controller/ExitCodes.h, policy
// keys from policies/Keys.cpp, metrics from what formatMetrics emits, log events from the
// names the sources emit. Rendered as roff for deploy/man/reclaimd.8 and as markdown for the
// README's reference, between "generated" markers (ReferenceDocsTest.cpp compares and, with
// RECLAIMD_REGENERATE=1, rewrites them).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace reclaimd::testing {

// One option of a subcommand, as CLI11's help prints it:
// "  --log-level LEVEL:{trace,debug}=info   trace, debug, ...".
struct HelpOption {
  std::string names;        // "-c,--config"
  std::string placeholder;  // "FILE", "" for a flag; "CGROUP ..." when repeated
  std::string fallback;     // the default CLI11 shows after '='
  std::string choices;      // "trace,debug,..." from ":{...}"
  std::string help;
  std::string longName() const;  // "--config"
};

struct HelpCommand {
  std::string name;         // "run"; "" for reclaimd itself
  std::string description;  // its first help line
  std::vector<HelpOption> options;
  std::vector<HelpOption> positionals;  // placeholder only: "FILE"
};

// Parses one --help text. Options and positionals; `name` and `description` are left to the
// caller (the first line is the description).
HelpCommand parseHelp(const std::string& text);
// The subcommand names the top-level --help lists under "Subcommands:".
std::vector<std::string> parseSubcommands(const std::string& text);
// reclaimd --help, then each subcommand's: the whole command line.
std::vector<HelpCommand> readCommandLine(const std::string& binary);

struct Metric {
  std::string name, type, help;
  std::vector<std::string> labels;
};
// The metric families of a Prometheus text exposition, in order, with their samples' labels.
std::vector<Metric> parseExposition(const std::string& text);

// Every event name the sources under `root` emit, with the severities they are emitted at.
std::map<std::string, std::set<std::string>> eventsInSources(const std::string& root);
// "name: meaning" lines ('#' comments, blank lines skipped).
std::map<std::string, std::string> readMeanings(const std::string& path);

// Text for a roff page: '\' and '-' escaped, non-ASCII as \[uXXXX], `code` in bold.
std::string roffInline(const std::string& markdown);

// The generated blocks, roff and markdown.
std::string roffSynopsis(const std::vector<HelpCommand>& commands);
std::string roffOptions(const std::vector<HelpCommand>& commands);
std::string markdownOptions(const std::vector<HelpCommand>& commands);
std::string roffExitCodes();
std::string markdownExitCodes();
std::string roffKeys();
std::string roffMetrics(const std::vector<Metric>& metrics);
std::string markdownMetrics(const std::vector<Metric>& metrics);
std::string roffEvents(const std::map<std::string, std::set<std::string>>& events,
                       const std::map<std::string, std::string>& meanings);
std::string markdownEvents(const std::map<std::string, std::set<std::string>>& events,
                           const std::map<std::string, std::string>& meanings);

// The text between the lines `begin` and `end` (markers excluded), nullopt when either is
// missing; replaceBlock puts `content` there.
std::optional<std::string> blockBetween(const std::string& text, const std::string& begin, const std::string& end);
std::string replaceBlock(const std::string& text, const std::string& begin, const std::string& end,
                         const std::string& content);

}  // namespace reclaimd::testing
