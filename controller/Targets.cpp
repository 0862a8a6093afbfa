#include "controller/Targets.h"

#include <spdlog/spdlog.h>

#include <unordered_map>

#include "cgroup/Tree.h"
#include "controller/Decompose.h"
#include "policies/Rules.h"

namespace reclaimd::controller {

IdleConfig idleConfigOf(const policies::IdleSettings& s) {
  return IdleConfig{s.thresholdPercent, s.grace, s.interval};
}

bool activeTarget(const Target& t) {
  return t.idle && t.gov.mode == policies::Mode::Gradual;
}

bool within(std::string_view path, std::string_view ancestor) {
  if (ancestor.empty()) return true;
  return path.substr(0, ancestor.size()) == ancestor &&
         (path.size() == ancestor.size() || path[ancestor.size()] == '/');
}

Target Targets::make(std::string path, std::uint64_t inode, policies::Governance gov, TimePoint now) {
  Target t;
  t.path = std::move(path);
  t.inode = inode;
  t.gov = gov;
  t.firstSeen = now;
  auto opened = cgroup::Cgroup::open(rootFd_, t.path);
  if (opened) {
    t.inode = opened->inode();
    t.cgroup = std::move(*opened);
  } else if (!cgroup::cgroupGone(opened.error())) {
    spdlog::warn("event=cgroup_unreadable cgroup={} error=\"{}\"", t.label(), opened.error().message());
  }
  if (t.usesCgroupCpu()) t.cpuIdle.emplace(idleConfigOf(gov.idle));
  t.refaults.reconfigure(RefaultConfig{gov.pressure.refaultWindow, gov.pressure.refaultLimit / 4096});
  return t;
}

Result<WalkStats> Targets::refresh(const policies::Policy& policy, TimePoint now) {
  WalkStats stats;
  std::vector<Target> next;
  // Old state by path; reused only when the inode is the same cgroup's.
  std::unordered_map<std::string, Target*> old;
  for (Target& t : targets_)
    old.emplace(t.path, &t);
  auto adopt = [&](std::string path, std::uint64_t inode, policies::Governance gov) {
    auto it = old.find(path);
    if (it != old.end() && it->second->inode == inode && it->second->cgroup && it->second->gov.rule == gov.rule) {
      Target kept = std::move(*it->second);
      kept.gov = gov;  // a reload may have changed the rule's settings
      if (kept.usesCgroupCpu() && !kept.cpuIdle) kept.cpuIdle.emplace(idleConfigOf(gov.idle));
      if (kept.cpuIdle) kept.cpuIdle->reconfigure(idleConfigOf(gov.idle));
      kept.refaults.reconfigure(RefaultConfig{gov.pressure.refaultWindow, gov.pressure.refaultLimit / 4096});
      old.erase(it);
      next.push_back(std::move(kept));
    } else {
      next.push_back(make(std::move(path), inode, gov, now));
    }
  };

  if (policy.rules.empty()) {
    auto inode = cgroup::inodeOf(rootFd_);
    if (!inode) return inode.error();
    adopt("", *inode, policy.governance(-1, true));
    stats.cgroups = 1;
  } else {
    auto tree = cgroup::walkTree(rootFd_);
    if (!tree) return tree.error();
    std::vector<int> ruleOf(tree->nodes.size());
    for (std::size_t i = 0; i < tree->nodes.size(); ++i) {
      // Pre-order: the parent's rule is known; a cgroup no rule matches inherits it.
      const int own = policies::governingRule(policy.rules, tree->nodes[i].path);
      const int parent = tree->nodes[i].parent;
      ruleOf[i] = own >= 0 || parent < 0 ? own : ruleOf[static_cast<std::size_t>(parent)];
    }
    for (const TargetSpec& spec : decompose(*tree, ruleOf)) {
      const cgroup::TreeNode& node = tree->nodes[static_cast<std::size_t>(spec.node)];
      adopt(node.path, node.inode, policy.governance(spec.rule, node.path.empty()));
    }
    stats.cgroups = tree->nodes.size();
    stats.vanished = tree->vanished;
    stats.symlinks = tree->symlinks;
  }
  targets_ = std::move(next);
  stats.targets = targets_.size();
  lastWalk_ = now;
  return stats;
}

std::optional<std::uint64_t> Targets::reclaimable(Target& t, const proc::Meminfo& mem) {
  auto m = measure(t, mem, 0);
  return m ? std::optional(m->first) : std::nullopt;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> Targets::measure(Target& t, const proc::Meminfo& mem,
                                                                        std::uint64_t machineRefaults) {
  if (t.isRoot()) return std::pair(mem.reclaimable(), machineRefaults);
  if (!t.cgroup) return std::nullopt;
  auto stat = t.cgroup->memoryStat();
  if (!stat) {
    if (cgroup::cgroupGone(stat.error())) {
      spdlog::debug("event=cgroup_gone cgroup={}", t.label());
      t.cgroup.reset();
      invalidate();
    } else {
      spdlog::warn("event=sample_skipped cgroup={} error=\"{}\"", t.label(), stat.error().message());
    }
    return std::nullopt;
  }
  return std::pair(stat->fileCache(), stat->workingsetRefaultFile);
}

std::size_t Targets::sampleCpu(TimePoint now) {
  std::size_t dropped = 0;
  for (auto it = targets_.begin(); it != targets_.end();) {
    if (!it->cpuIdle || !it->cgroup) {
      ++it;
      continue;
    }
    auto stat = it->cgroup->cpuStat();
    if (!stat) {
      if (cgroup::cgroupGone(stat.error())) {
        spdlog::debug("event=cgroup_gone cgroup={}", it->label());
        it = targets_.erase(it);
        ++dropped;
        continue;
      }
      spdlog::warn("event=sample_skipped cgroup={} error=\"{}\"", it->label(), stat.error().message());
      ++it;
      continue;
    }
    // A share of one CPU: the total is wall time since the target was first seen.
    CpuSample s;
    s.at = now;
    s.busy = std::chrono::microseconds(stat->usageUsec);
    s.total = now - it->firstSeen;
    if (within(ownCgroup_, it->path)) s.own = processCpuTime();
    it->cpuVerdict = it->cpuIdle->add(s);
    ++it;
  }
  return dropped;
}

}  // namespace reclaimd::controller
