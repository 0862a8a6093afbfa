// The event builder: nothing a value holds can forge a field or a line, and
// the journal's field parser reads back exactly what was put in.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/Event.h"
#include "base/Log.h"

namespace reclaimd {
namespace {

bool hasField(const std::vector<std::string>& fields, const std::string& f) {
  return std::find(fields.begin(), fields.end(), f) != fields.end();
}

TEST(Event, AHostileCgroupNameCannotForgeFieldsOrLines) {
  const std::string name = "a b event=stop signal=SIGTERM\nevent=forged \"q\" \\x2d";
  const Event e = Event(Severity::Info, "target_idle").add("cgroup", name).add("mode", "gradual");
  const std::string text = e.text();
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one event, one line: " << text;
  const auto fields = journalFields(text);
  EXPECT_TRUE(hasField(fields, "RECLAIMD_EVENT=target_idle"));
  EXPECT_FALSE(hasField(fields, "RECLAIMD_EVENT=stop"));
  EXPECT_FALSE(hasField(fields, "RECLAIMD_SIGNAL=SIGTERM"));
  EXPECT_TRUE(hasField(fields, "RECLAIMD_CGROUP=" + name)) << "read back exactly";
  EXPECT_TRUE(hasField(fields, "RECLAIMD_MODE=gradual"));
}

TEST(Event, ValuesAreBareOnlyWhenPlainlySafe) {
  EXPECT_EQ(escapeValue("system.slice/cron.service"), "system.slice/cron.service");
  EXPECT_EQ(escapeValue("swappiness=0"), "swappiness=0");
  EXPECT_EQ(escapeValue(""), "\"\"");
  EXPECT_EQ(escapeValue("a b"), "\"a b\"");
  EXPECT_EQ(escapeValue("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(escapeValue("\x01"), "\"\\x01\"");
  EXPECT_EQ(escapeValue("caf\xC3\xA9"), "\"caf\xC3\xA9\"") << "valid UTF-8 stays";
  EXPECT_EQ(escapeValue("bad\xFF"), "\"bad\\xff\"") << "invalid UTF-8 is escaped, never passed on";
  EXPECT_EQ(escapeValue("\xED\xA0\x80"), "\"\\xed\\xa0\\x80\"") << "a surrogate is not UTF-8";
}

TEST(Event, UnescapeUndoesEscape) {
  for (const std::string raw : {"a b", "x\"y\\z", "line\nnext", "\x01\x7f\xff", "caf\xC3\xA9 \\x2d"}) {
    const std::string quoted = escapeValue(raw);
    ASSERT_GE(quoted.size(), 2u);
    EXPECT_EQ(unescapeQuoted(quoted.substr(1, quoted.size() - 2)), raw);
  }
}

TEST(Event, NumbersAndUnits) {
  const Event e = Event(Severity::Info, "step")
                      .mib("asked_mib", 64ULL << 20)
                      .ms("took_ms", std::chrono::microseconds(1500))
                      .add("pct", 0.48712, 3);
  EXPECT_EQ(e.text(), "event=step asked_mib=64.0 took_ms=1.5 pct=0.487");
  EXPECT_EQ(e.field("asked_mib"), "64.0");
  EXPECT_FALSE(e.field("missing").has_value());
}

}  // namespace
}  // namespace reclaimd
