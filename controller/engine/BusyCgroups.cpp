#include "controller/engine/BusyCgroups.h"
#include "controller/engine/CgroupPaths.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace reclaimd::controller {

using namespace std::chrono;

namespace {

// At most this many older scans are kept as baselines, spread over the span compared: whatever
// the grace, the baseline lies within a quarter of the span (plus one scan period) of its start,
// and at most seven scans are held, one of them older than the span for quiet() (4,096 cgroups
// with 22-byte names measured 350 KiB a scan).
constexpr int kMaxAnchors = 4;

using ByPath = std::unordered_map<std::string_view, const CgroupCpu*>;

// The CPU `now` used since the baseline scan, or nothing when that cannot be known.
std::optional<nanoseconds> usedSince(const CgroupCpu& now, const ByPath& before, bool beforeComplete) {
  auto it = before.find(now.path);
  // Absent from a complete scan: created since, so all its CPU is since. Absent from an
  // incomplete one: it may have been there unread, and its whole lifetime is not the window's.
  if (it == before.end()) return beforeComplete ? std::optional(now.usage) : std::nullopt;
  const CgroupCpu& was = *it->second;
  // Another cgroup under the old name (rmdir, mkdir), or a counter that went backwards (a
  // restart): fresh state, counted from zero, which is after the baseline scan.
  if (was.inode != now.inode || now.usage < was.usage) return now.usage;
  return now.usage - was.usage;
}

// The cgroup `path` names, or its nearest ancestor, among those whose use is known; -1 if none.
int nearestKnown(std::string_view path, const std::unordered_map<std::string_view, int>& known) {
  for (;;) {
    if (auto it = known.find(path); it != known.end()) return it->second;
    if (path.empty()) return -1;
    path = parentPath(path);
  }
}

}  // namespace

BusyCgroups::BusyCgroups(nanoseconds window, std::string ownCgroup)
    : window_(window), ownCgroup_(std::move(ownCgroup)) {}

nanoseconds BusyCgroups::scanEvery() const {
  return std::clamp<nanoseconds>(window_ / 4, kBusyScanMin, kBusyScanEvery);
}

nanoseconds BusyCgroups::lookback() const {
  return std::max<nanoseconds>(window_, 2 * scanEvery());
}

bool BusyCgroups::due(TimePoint now) const {
  return !lastTry_ || now - *lastTry_ >= scanEvery();
}

void BusyCgroups::add(TimePoint at, nanoseconds machineTotal, nanoseconds ownCpu, CgroupCpuScan scan) {
  if (newest_ && at < newest_->at) clear();  // not expected from a steady clock: start over
  if (newest_ && (anchors_.empty() || newest_->at - anchors_.back().at >= lookback() / kMaxAnchors))
    anchors_.push_back(std::move(*newest_));
  newest_ = Snapshot{at, machineTotal, ownCpu, std::move(scan)};
  lastTry_ = at;
  // One scan older than the span is kept: quiet() needs a baseline a whole window back.
  while (anchors_.size() > 1 && at - anchors_[1].at > lookback())
    anchors_.pop_front();
}

void BusyCgroups::clear() {
  anchors_.clear();
  newest_.reset();
  lastTry_.reset();
}

std::vector<BusyCgroup> BusyCgroups::top(std::size_t n, TimePoint now) const {
  if (!newest_ || now - newest_->at > lookback()) return {};
  for (const Snapshot& from : anchors_) {
    if (newest_->at - from.at <= lookback()) return rank(from, *newest_, n);
  }
  return {};
}

std::vector<QuietCgroup> BusyCgroups::quiet(double thresholdPercent, const std::function<bool(std::string_view)>& pick,
                                            std::optional<nanoseconds> given) const {
  if (!newest_) return {};
  const nanoseconds over = given.value_or(window_);
  // The scans from the newest one at least `over` old up to the newest: a cgroup is quiet when
  // it was quiet over that whole span AND between every two of them, so that light work in part
  // of it is not averaged away (the grace is sustained quiet).
  std::vector<const Snapshot*> chain;
  for (const Snapshot& s : anchors_) {
    if (newest_->at - s.at >= over) chain.clear();
    if (newest_->at - s.at >= over || !chain.empty()) chain.push_back(&s);
  }
  if (chain.empty()) return {};
  chain.push_back(&*newest_);
  std::vector<ByPath> byPath(chain.size() - 1);
  for (std::size_t i = 0; i + 1 < chain.size(); ++i)
    for (const CgroupCpu& c : chain[i]->scan.cgroups) byPath[i].emplace(c.path, &c);
  // The share of one CPU `c` used since the scan `i`, if that scan saw the same cgroup.
  auto percentSince = [&](std::size_t i, const CgroupCpu& c) -> std::optional<double> {
    auto it = byPath[i].find(c.path);
    if (it == byPath[i].end() || it->second->inode != c.inode || c.usage < it->second->usage) return std::nullopt;
    const double span = duration<double>(chain.back()->at - chain[i]->at).count();
    return 100.0 * duration<double>(c.usage - it->second->usage).count() / span;
  };
  // Quiet between every two scans that saw it (a scan that did not read it, an incomplete
  // one, joins the spans around it).
  auto quietThroughout = [&](const CgroupCpu& c) {
    const CgroupCpu* later = &c;
    TimePoint laterAt = chain.back()->at;
    for (std::size_t i = chain.size() - 1; i-- > 0;) {
      auto it = byPath[i].find(c.path);
      if (it == byPath[i].end() || it->second->inode != c.inode) continue;
      const CgroupCpu* earlier = it->second;
      if (later->usage < earlier->usage) return false;
      const double span = duration<double>(laterAt - chain[i]->at).count();
      if (span > 0 && 100.0 * duration<double>(later->usage - earlier->usage).count() / span > thresholdPercent)
        return false;
      later = earlier;
      laterAt = chain[i]->at;
    }
    return true;
  };
  std::vector<QuietCgroup> out;
  for (const CgroupCpu& c : newest_->scan.cgroups) {
    if (!pick(c.path)) continue;
    // Not there a span ago (or another cgroup under its name, or a counter that went back):
    // it has not been quiet for a whole span, as far as anyone can tell.
    const auto percent = percentSince(0, c);
    if (!percent || *percent > thresholdPercent) continue;
    if (quietThroughout(c))
      out.push_back(QuietCgroup{c.path, c.inode, c.usage, newest_->at, *percent});
  }
  return out;
}

std::vector<BusyCgroup> BusyCgroups::rank(const Snapshot& from, const Snapshot& to, std::size_t n) const {
  const nanoseconds span = to.machineTotal - from.machineTotal;
  if (span <= nanoseconds(0)) return {};
  ByPath before;
  for (const CgroupCpu& c : from.scan.cgroups)
    before.emplace(c.path, &c);
  const std::vector<CgroupCpu>& cgroups = to.scan.cgroups;
  std::vector<nanoseconds> used(cgroups.size(), nanoseconds(0));
  std::unordered_map<std::string_view, int> known;
  for (std::size_t i = 0; i < cgroups.size(); ++i) {
    if (auto u = usedSince(cgroups[i], before, from.scan.complete)) {
      used[i] = *u;
      known.emplace(cgroups[i].path, static_cast<int>(i));
    }
  }
  // Each cgroup's own use: what it used less what its children used (their usage is in its
  // counter too). A child whose use is unknown is not subtracted: its CPU stays with its parent.
  std::vector<nanoseconds> own = used;
  for (const auto& [path, i] : known) {
    if (path.empty()) continue;
    if (const int parent = nearestKnown(parentPath(path), known); parent >= 0)
      own[static_cast<std::size_t>(parent)] -= used[static_cast<std::size_t>(i)];
  }
  // reclaimd's own CPU (this scan included) is not held against the machine: take it off the
  // cgroup it runs in, which then ranks by what else runs there.
  if (const int mine = nearestKnown(ownCgroup_, known); mine >= 0 && to.ownCpu > from.ownCpu)
    own[static_cast<std::size_t>(mine)] -= to.ownCpu - from.ownCpu;
  std::vector<std::size_t> order;
  for (const auto& [path, i] : known) {
    if (own[static_cast<std::size_t>(i)] > nanoseconds(0)) order.push_back(static_cast<std::size_t>(i));
  }
  // Largest first; equal shares by path, so the answer does not depend on hashing.
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return own[a] != own[b] ? own[a] > own[b] : cgroups[a].path < cgroups[b].path;
  });
  order.resize(std::min(order.size(), n));
  std::vector<BusyCgroup> out;
  for (std::size_t i : order) {
    const std::string& path = cgroups[i].path;
    out.push_back(BusyCgroup{path.empty() ? "/" : path, 100.0 * duration<double>(own[i]) / duration<double>(span)});
  }
  return out;
}

}  // namespace reclaimd::controller
