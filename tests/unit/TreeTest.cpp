// The tree walk, the decomposition into targets, and budget sharing, on fixture trees.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>
#include <algorithm>

#include <filesystem>

#include "base/Files.h"
#include "cgroup/Tree.h"
#include "controller/engine/Budget.h"
#include "controller/engine/Decompose.h"
#include "policies/Loader.h"
#include "policies/Rules.h"
#include "tests/unit/Fixture.h"

namespace reclaimd::controller {
namespace {

// A cgroup-shaped fixture: directories with a couple of control files each.
void cg(testing::Fixture& fx, const std::string& path) {
  fx.write(path + "/memory.stat", "active_file 0\ninactive_file 0\n");
  fx.write(path + "/cgroup.procs", "");
}

std::vector<std::string> paths(const cgroup::Tree& t) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < t.nodes.size(); ++i)
    out.push_back(t.path(i));
  return out;
}

UniqueFd openRoot(const testing::Fixture& fx, const std::string& sub = "cg") {
  return UniqueFd(::open(fx.path(sub).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

TEST(Tree, WalksDirectoriesInPreOrder) {
  testing::Fixture fx;
  for (const char* p : {"cg", "cg/system.slice", "cg/system.slice/cron.service", "cg/user.slice"})
    cg(fx, p);
  auto root = openRoot(fx);
  auto tree = cgroup::walkTree(root.get());
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  auto got = paths(*tree);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], "");
  // Parents come before their children.
  for (std::size_t i = 1; i < tree->nodes.size(); ++i) {
    EXPECT_LT(tree->nodes[i].parent, static_cast<int>(i));
    EXPECT_NE(tree->nodes[i].inode, 0u);
  }
  EXPECT_NE(std::find(got.begin(), got.end(), "system.slice/cron.service"), got.end());
}

TEST(Tree, NeverFollowsSymlinks) {
  testing::Fixture fx;
  cg(fx, "cg");
  cg(fx, "cg/a");
  cg(fx, "outside/secret");
  std::filesystem::create_directory_symlink(fx.path("outside"), fx.path("cg/escape"));
  auto root = openRoot(fx);
  auto tree = cgroup::walkTree(root.get());
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(paths(*tree), (std::vector<std::string>{"", "a"}));
  EXPECT_EQ(tree->symlinks, 1u);
  auto opened = cgroup::openCgroupDir(root.get(), "escape/secret");
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(opened.error().errnoValue() == ELOOP || opened.error().errnoValue() == ENOTDIR)
      << opened.error().message();
  EXPECT_FALSE(cgroup::openCgroupDir(root.get(), "../outside").ok());
}

TEST(Tree, BoundedAndRobust) {
  testing::Fixture fx;
  cg(fx, "cg");
  for (int i = 0; i < 10; ++i)
    cg(fx, "cg/c" + std::to_string(i));
  auto root = openRoot(fx);
  auto tree = cgroup::walkTree(root.get(), 5);
  ASSERT_TRUE(tree.ok());
  EXPECT_EQ(tree->nodes.size(), 5u);
  EXPECT_TRUE(tree->truncated);
  UniqueFd notDir(::open(fx.path("cg/memory.stat").c_str(), O_RDONLY | O_CLOEXEC));
  EXPECT_FALSE(cgroup::walkTree(notDir.get()).ok()) << "only an unreadable root is an error";
}

TEST(Tree, ListsBelowACgroupOnlyWhereToldTo) {
  testing::Fixture fx;
  for (const char* p :
       {"cg", "cg/kubepods.slice", "cg/kubepods.slice/pod1", "cg/kubepods.slice/pod1/ctr0", "cg/kubepods.slice/pod2",
        "cg/kubepods.slice/pod2/ctr0", "cg/system.slice", "cg/system.slice/ssh.service"})
    cg(fx, p);
  auto root = openRoot(fx);
  std::vector<std::string> asked;
  auto tree = cgroup::walkTree(root.get(), 1000, [&](std::string_view path) {
    asked.emplace_back(path);
    return path == "kubepods.slice";  // below the pods and system.slice nothing matters
  });
  ASSERT_TRUE(tree.ok());
  auto got = paths(*tree);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"", "kubepods.slice", "kubepods.slice/pod1", "kubepods.slice/pod2",
                                           "system.slice"}));
  for (std::size_t i = 0; i < tree->nodes.size(); ++i) {
    const cgroup::TreeNode& n = tree->nodes[i];
    const std::string path = tree->path(i);
    const bool leafByRule = path == "system.slice" || path.starts_with("kubepods.slice/");
    EXPECT_EQ(n.unlisted, leafByRule) << path;
    EXPECT_NE(n.inode, 0u) << path << ": the entry's inode, as a listing gives it";
    if (n.unlisted) {
      EXPECT_TRUE(n.children.empty());
      EXPECT_FALSE(n.incomplete) << "unlisted is not unknown";
    }
  }
  EXPECT_EQ(std::count(asked.begin(), asked.end(), "kubepods.slice/pod1/ctr0"), 0) << "never asked below a pod";
}

// A tree from paths, and each node's rule resolved from a policy, as the daemon does.
struct Scene {
  cgroup::Tree tree;
  std::vector<int> ruleOf;
  policies::Policy policy;

  Scene(std::vector<std::string> cgroups, const char* yaml) {
    auto p = policies::parsePolicy(yaml, "scene.yaml");
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
    if (p) policy = *p;
    tree.nodes.push_back(cgroup::TreeNode{});
    for (const std::string& path : cgroups) {
      const auto slash = path.rfind('/');
      const std::string parentPath = slash == std::string::npos ? "" : path.substr(0, slash);
      int parent = 0;
      for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        if (tree.path(i) == parentPath) parent = static_cast<int>(i);
      }
      cgroup::TreeNode n;
      n.name = path.substr(slash == std::string::npos ? 0 : slash + 1);
      n.parent = parent;
      tree.nodes[static_cast<std::size_t>(parent)].children.push_back(static_cast<int>(tree.nodes.size()));
      tree.nodes.push_back(n);
    }
    for (std::size_t i = 0; i < tree.nodes.size(); ++i)
      ruleOf.push_back(policies::inheritedRule(policy.rules, tree.path(i)));
  }

  std::vector<std::string> targets() const {
    std::vector<std::string> out;
    for (const TargetSpec& t : decompose(tree, ruleOf)) {
      out.push_back(tree.path(t.node) + "@" + std::to_string(t.rule));
    }
    return out;
  }
};

const std::vector<std::string> kSystemd = {"init.scope",
                                           "system.slice",
                                           "system.slice/cron.service",
                                           "system.slice/ssh.service",
                                           "user.slice",
                                           "user.slice/user-1000.slice",
                                           "user.slice/user-1000.slice/session-1.scope",
                                           "build.slice"};

TEST(Decompose, NoRulesMeansTheRoot) {
  Scene s(kSystemd, "mode: gradual\n");
  EXPECT_EQ(s.targets(), (std::vector<std::string>{"@-1"}));
}

TEST(Decompose, RuleMatchingNothingPresentKeepsTheRoot) {
  Scene s(kSystemd, "rules:\n  - match: docker/*\n");
  EXPECT_EQ(s.targets(), (std::vector<std::string>{"@-1"}));
}

TEST(Decompose, DisabledChildMakesTheParentDescend) {
  Scene s(kSystemd, "rules:\n  - match: system.slice/ssh.service\n    mode: disabled\n");
  // The root and system.slice mix rules: requests go to every uniform subtree instead, and
  // ssh.service is a target of its own (disabled: never written).
  EXPECT_EQ(s.targets(), (std::vector<std::string>{"init.scope@-1", "system.slice/cron.service@-1",
                                                   "system.slice/ssh.service@0", "user.slice@-1", "build.slice@-1"}));
}

TEST(Decompose, NestedRules) {
  Scene s(kSystemd, R"(rules:
  - match: user.slice/**
    mode: disabled
  - match: user.slice/user-1000.slice/session-1.scope
  - match: build.slice
    idle_source: cgroup
)");
  EXPECT_EQ(s.targets(), (std::vector<std::string>{"init.scope@-1", "system.slice@-1",
                                                   "user.slice/user-1000.slice/session-1.scope@1", "build.slice@2"}));
  // user.slice and user-1000.slice hold a disabled rule but contain a gradual session: they
  // are not targets (writing there would reach the session and itself alike); nothing is
  // counted twice.
}

TEST(Decompose, ARuleGovernsTheSubtreeBelowItsMatch) {
  Scene s(kSystemd, "rules:\n  - match: user.slice\n    mode: disabled\n  - match: system.slice\n    floor: 1G\n");
  EXPECT_EQ(s.targets(),
            (std::vector<std::string>{"init.scope@-1", "system.slice@1", "user.slice@0", "build.slice@-1"}));
}

TEST(Decompose, SubtreeUnderOneRuleIsOneTarget) {
  Scene s(kSystemd,
          "rules:\n  - match: user.slice/**\n    mode: disabled\n  - match: system.slice/**\n    floor: 1G\n");
  EXPECT_EQ(s.targets(),
            (std::vector<std::string>{"init.scope@-1", "system.slice@1", "user.slice@0", "build.slice@-1"}));
}

// Marks `path`'s node incomplete, as the walk does when it cannot list it.
void cutAt(Scene& s, const std::string& path) {
  for (std::size_t i = 0; i < s.tree.nodes.size(); ++i) {
    if (s.tree.path(i) == path) s.tree.nodes[i].incomplete = true;
  }
}

TEST(Decompose, NothingAtOrAboveOrBelowAnIncompleteNode) {
  Scene s(kSystemd, "mode: gradual\n");
  cutAt(s, "user.slice/user-1000.slice");
  // Its ancestors are mixed and descended; it and its known child are not written; the rest
  // of the tree is, as before.
  EXPECT_EQ(s.targets(), (std::vector<std::string>{"init.scope@-1", "system.slice@-1", "build.slice@-1"}));
  Scene leaf(kSystemd, "mode: gradual\n");
  cutAt(leaf, "init.scope");
  EXPECT_EQ(leaf.targets(), (std::vector<std::string>{"system.slice@-1", "user.slice@-1", "build.slice@-1"}));
}

TEST(Decompose, AnIncompleteRootWritesNothing) {
  Scene s(kSystemd, "mode: gradual\n");
  cutAt(s, "");
  EXPECT_TRUE(s.targets().empty());
}

// Lowers the soft fd limit so that the walk can hold `extra` more fds, and restores it.
class FdBudget {
 public:
  explicit FdBudget(int extra) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    const int lowest = ::fcntl(0, F_DUPFD_CLOEXEC, 0);  // the lowest free fd number
    ::close(lowest);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest + extra);
    ok_ = lowest >= 0 && ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~FdBudget() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

std::vector<std::string> fixtureTargets(const cgroup::Tree& tree, const char* yaml) {
  auto policy = policies::parsePolicy(yaml, "walk.yaml");
  EXPECT_TRUE(policy.ok());
  std::vector<int> ruleOf;
  for (std::size_t i = 0; i < tree.nodes.size(); ++i)
    ruleOf.push_back(policies::inheritedRule(policy->rules, tree.path(i)));
  std::vector<std::string> out;
  for (const TargetSpec& t : decompose(tree, ruleOf))
    out.push_back(tree.path(t.node));
  return out;
}

TEST(Tree, OutOfFdsIsIncompleteNotVanished) {
  testing::Fixture fx;
  for (const char* p : {"cg", "cg/app.slice", "cg/app.slice/svc", "cg/app.slice/svc/protected", "cg/other.slice"})
    cg(fx, p);
  auto root = openRoot(fx);
  Result<cgroup::Tree> tree = cgroup::Tree{};
  {
    // One fd for app.slice; opening app.slice/svc then fails with EMFILE.
    FdBudget budget(1);
    ASSERT_TRUE(budget.ok());
    tree = cgroup::walkTree(root.get());
  }
  ASSERT_TRUE(tree.ok()) << tree.error().message();
  EXPECT_EQ(tree->vanished, 0u) << "EMFILE is not a vanished cgroup";
  EXPECT_EQ(tree->incomplete, 1u);
  ASSERT_TRUE(tree->incompleteError);
  EXPECT_EQ(tree->incompleteError->errnoValue(), EMFILE);
  EXPECT_EQ(tree->incompleteError->context, "open app.slice/svc") << "the error names the cgroup it cut";
  auto got = paths(*tree);
  ASSERT_NE(std::find(got.begin(), got.end(), "app.slice/svc"), got.end());
  EXPECT_EQ(std::find(got.begin(), got.end(), "app.slice/svc/protected"), got.end()) << "not seen";
  for (std::size_t i = 0; i < tree->nodes.size(); ++i)
    EXPECT_EQ(tree->nodes[i].incomplete, tree->path(i) == "app.slice/svc") << tree->path(i);
  // The protected cgroup below the cut is inside no target: not the root, not app.slice, not svc.
  const auto targets = fixtureTargets(*tree, "rules:\n  - match: app.slice/svc/protected\n    mode: disabled\n");
  EXPECT_EQ(targets, (std::vector<std::string>{"other.slice"}));
  // With fds to spare the same tree is seen whole, and the protected cgroup is a target of its own.
  auto whole = cgroup::walkTree(root.get());
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->incomplete, 0u);
  EXPECT_EQ(fixtureTargets(*whole, "rules:\n  - match: app.slice/svc/protected\n    mode: disabled\n"),
            (std::vector<std::string>{"app.slice/svc/protected", "other.slice"}));
}

TEST(Tree, StoppingAtMaxNodesCutsTheWalk) {
  testing::Fixture fx;
  cg(fx, "cg");
  for (int i = 0; i < 10; ++i)
    cg(fx, "cg/c" + std::to_string(i));
  auto root = openRoot(fx);
  auto tree = cgroup::walkTree(root.get(), 5);
  ASSERT_TRUE(tree.ok());
  EXPECT_TRUE(tree->nodes[0].incomplete) << "the root's other children were not looked at";
  EXPECT_TRUE(fixtureTargets(*tree, "mode: gradual\n").empty());
}

TEST(Budget, LargestFirstWithinStepsAndBudget) {
  std::vector<Candidate> c = {
      {0, 300 * kMiB, 16 * kMiB, 1 * kGiB},  // 284 above its floor
      {1, 2 * kGiB, 16 * kMiB, 256 * kMiB},  // largest, capped at its step
      {2, 40 * kMiB, 16 * kMiB, 1 * kGiB},   // 24 above
      {3, 16 * kMiB, 16 * kMiB, 1 * kGiB},   // at its floor
  };
  auto shares = shareBudget(c, 512 * kMiB, kMiB);
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_EQ(shares[0].target, 1);
  EXPECT_EQ(shares[0].bytes, 256 * kMiB);
  EXPECT_EQ(shares[1].target, 0);
  EXPECT_EQ(shares[1].bytes, 256 * kMiB) << "what is left of the budget";
  auto all = shareBudget(c, 10 * kGiB, kMiB);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].target, 2);
  EXPECT_EQ(all[2].bytes, 24 * kMiB);
  EXPECT_TRUE(shareBudget(c, 0, kMiB).empty());
}

}  // namespace
}  // namespace reclaimd::controller
