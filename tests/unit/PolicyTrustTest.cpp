// Whose policy files are obeyed: root's (or the caller's), writable by nobody else, as sudo and
// systemd require of theirs; and the policy's size budget holds for the files together, each
// drop-in checked against what is left before it is read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "policies/Loader.h"
#include "tests/unit/Fixture.h"
#include "tests/unit/Process.h"

namespace reclaimd::policies {
namespace {

using testing::Fixture;
using testing::runCommand;

constexpr uid_t kNobody = 65534;

std::string refusal(const std::string& path) {
  auto files = readPolicyFiles(path);
  return files.ok() ? std::string("accepted") : files.error().message();
}

TEST(PolicyTrust, AFileSomeoneElseOwnsOrMayWriteIsRefused) {
  ASSERT_EQ(::geteuid(), 0u) << "the unit tests run as root (chown)";
  Fixture fx;
  fx.write("p.yaml", "mode: gradual\n");
  EXPECT_EQ(refusal(fx.path("p.yaml")), "accepted");
  ASSERT_EQ(::chmod(fx.path("p.yaml").c_str(), 0666), 0);
  EXPECT_NE(refusal(fx.path("p.yaml")).find("writable by others (mode 0666)"), std::string::npos)
      << refusal(fx.path("p.yaml"));
  ASSERT_EQ(::chmod(fx.path("p.yaml").c_str(), 0664), 0);
  EXPECT_NE(refusal(fx.path("p.yaml")).find("writable by its group"), std::string::npos);
  ASSERT_EQ(::chmod(fx.path("p.yaml").c_str(), 0644), 0);
  ASSERT_EQ(::chown(fx.path("p.yaml").c_str(), kNobody, kNobody), 0);
  EXPECT_NE(refusal(fx.path("p.yaml")).find("owned by uid 65534, not root"), std::string::npos)
      << refusal(fx.path("p.yaml"));
}

TEST(PolicyTrust, ADropInByNobodyInAStickyWorldWritableDirectoryIsRefused) {
  Fixture fx;
  fx.write("p.yaml", "mode: gradual\n");
  fx.mkdir("p.d");
  ASSERT_EQ(::chmod(fx.path("p.d").c_str(), 01777), 0);
  fx.write("p.d/10-root.yaml", "reclaim:\n  floor: 256M\n");
  EXPECT_EQ(refusal(fx.path("p.yaml")), "accepted") << "root's drop-ins in a sticky directory are root's";
  fx.write("p.d/50-nobody.yaml", "mode: disabled\n");
  ASSERT_EQ(::chown(fx.path("p.d/50-nobody.yaml").c_str(), kNobody, kNobody), 0);
  EXPECT_NE(refusal(fx.path("p.yaml")).find("50-nobody.yaml: a file owned by uid 65534"), std::string::npos)
      << refusal(fx.path("p.yaml"));
  auto [code, out] = runCommand({RECLAIMD_BINARY, "check-config", fx.path("p.yaml")});
  EXPECT_EQ(code, 78) << out;
  EXPECT_NE(out.find("chown root"), std::string::npos) << out;
  // Without the sticky bit anyone could remove root's drop-ins: the directory itself is refused.
  ASSERT_EQ(::chmod(fx.path("p.d").c_str(), 0777), 0);
  EXPECT_NE(refusal(fx.path("p.yaml")).find("p.d: a drop-in directory writable by others"), std::string::npos)
      << refusal(fx.path("p.yaml"));
}

TEST(PolicyTrust, EachDropInIsHeldToWhatThePolicyHasLeft) {
  Fixture fx;
  const std::string big = "# " + std::string(600 * 1024, 'x') + "\n";
  fx.write("p.yaml", big);
  fx.write("p.d/10-a.yaml", big);
  fx.write("p.d/20-b.yaml", "mode: gradual\n");
  const std::string message = refusal(fx.path("p.yaml"));
  EXPECT_NE(message.find("10-a.yaml: beyond the 1MiB a policy may be with its drop-ins"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace reclaimd::policies
