// The values a recording holds: inputs, commands, and the readings with several fields.
#include "controller/record/RecordFormat.h"

#include <algorithm>

#include "base/Overload.h"

namespace reclaimd::controller {

namespace {

constexpr std::uint64_t kMaxWatch = static_cast<std::uint64_t>(PressureFeed::Off);
// More events or nodes than this in one line is not a recording reclaimd wrote.
constexpr std::uint64_t kMaxItems = 1'000'000;

void writeResult(LineWriter& w, const CommandResult& result) {
  std::visit(Overload{
                 [&](const std::monostate&) { w.word("none"); },
                 [&](const Written& x) {
                   w.word("written").ns(x.write.took);
                   if (x.write.result)
                     w.word("ok");
                   else
                     w.error(x.write.result.error());
                 },
                 [&](const Finished& x) {
                   w.word("finished").ns(x.took);
                   if (x.result)
                     w.word("ok");
                   else
                     w.error(x.result.error());
                 },
                 [&](const Probed& x) { writeCaps(w.word("probed"), x.caps); },
                 [&](const Watched& x) { w.word("watched").u(static_cast<std::uint64_t>(x.how)).b(x.gone).s(x.why); },
                 [&](const Unwatched&) { w.word("unwatched"); },
             },
             result);
}

CommandResult readResult(LineReader& r) {
  const std::string kind = r.word();
  if (kind == "none") return std::monostate{};
  if (kind == "written") {
    Written x;
    x.write.took = r.ns();
    if (Error e; !r.okOrError(e)) x.write.result = std::move(e);
    return x;
  }
  if (kind == "finished") {
    Finished x;
    x.took = r.ns();
    Error e;
    if (!r.okOrError(e)) x.result = e;
    return x;
  }
  if (kind == "probed") return Probed{readCaps(r)};
  if (kind == "watched") {
    Watched x;
    x.how = static_cast<PressureFeed>(r.u(kMaxWatch));
    x.gone = r.b();
    x.why = r.s();
    return x;
  }
  if (kind == "unwatched") return Unwatched{};
  r.fail("unknown command result '" + kind.substr(0, 40) + "'");
  return std::monostate{};
}

// An optional reading: "-" when it was not taken, else "ok <fields>" or the error.
template <class T, class F>
void writeReading(LineWriter& w, const std::optional<Result<T>>& r, F fields) {
  if (!r) {
    w.word("-");
    return;
  }
  if (!*r) {
    w.error(r->error());
    return;
  }
  fields(w.word("ok"), **r);
}

template <class T, class F>
std::optional<Result<T>> readReading(LineReader& r, F fields) {
  if (r.more() && r.peek() == "-") {
    r.word();
    return std::nullopt;
  }
  Error e;
  if (!r.okOrError(e)) return Result<T>(std::move(e));
  return Result<T>(fields(r));
}

void writeReadings(LineWriter& w, const Readings& g) {
  writeReading(w, g.cpu, [](LineWriter& x, const CpuReading& c) { x.ns(c.busy).ns(c.total).i(c.cpus); });
  if (g.ownCpu)
    w.ns(*g.ownCpu);
  else
    w.word("-");
  writeReading(w, g.meminfo, [](LineWriter& x, const proc::Meminfo& m) { writeMeminfo(x, m); });
  writeReading(w, g.machineRefaults,
               [](LineWriter& x, const proc::Workingset& v) { x.u(v.refaults).u(v.activations); });
  writeReading(w, g.tree, [](LineWriter& x, const cgroup::Tree& t) { writeTree(x, t); });
  if (g.scan) {
    writeReading(w, std::optional(g.scan->cgroups), [](LineWriter& x, const CgroupCpuScan& s) { writeScan(x, s); });
    w.ns(g.scan->ownCpu);
  } else {
    w.word("-");
  }
  w.u(g.memory.size());
  for (const MemoryRead& m : g.memory) {
    w.s(m.cgroup.path).u(m.cgroup.inode);
    writeReading(w, std::optional(m.reading),
                 [](LineWriter& x, const MemoryReading& v) { x.u(v.reclaimable).u(v.refaults).u(v.activations); });
  }
  w.u(g.cgroupCpu.size());
  for (const CgroupCpuRead& c : g.cgroupCpu) {
    w.s(c.cgroup.path).u(c.cgroup.inode);
    writeReading(w, std::optional(c.usage), [](LineWriter& x, std::chrono::nanoseconds v) { x.ns(v); });
  }
  w.u(g.pressure.size());
  for (const PressureRead& p : g.pressure) {
    w.u(p.scope);
    writeReading(w, std::optional(p.total), [](LineWriter& x, std::uint64_t v) { x.u(v); });
  }
}

// A reading every entry of a list must have; "-" there is malformed.
template <class T>
Result<T> present(LineReader& r, std::optional<Result<T>> got) {
  if (got) return std::move(*got);
  r.fail("a listed reading without its value");
  return errnoError(ENODATA, "a malformed recording");
}

Readings readReadings(LineReader& r) {
  Readings g;
  g.cpu = readReading<CpuReading>(r, [](LineReader& x) {
    const auto busy = x.ns();
    const auto total = x.ns();
    // Any count is a reading the engine must take; a negative one is none.
    return CpuReading{busy, total, static_cast<unsigned>(std::clamp<std::int64_t>(x.i(), 0, 1 << 20))};
  });
  if (r.peek() == "-")
    r.word();
  else
    g.ownCpu = r.ns();
  g.meminfo = readReading<proc::Meminfo>(r, [](LineReader& x) { return readMeminfo(x); });
  g.machineRefaults = readReading<proc::Workingset>(r, [](LineReader& x) { return proc::Workingset{x.u(), x.u()}; });
  g.tree = readReading<cgroup::Tree>(r, [](LineReader& x) { return readTree(x); });
  if (auto scan = readReading<CgroupCpuScan>(r, [](LineReader& x) { return readScan(x); })) {
    const auto own = r.ns();
    g.scan = ScanRead{std::move(*scan), own};
  }
  const std::uint64_t memories = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < memories && r.ok(); ++k) {
    CgroupKey c{r.s(), r.u()};
    auto m = readReading<MemoryReading>(r, [](LineReader& x) { return MemoryReading{x.u(), x.u(), x.u()}; });
    g.memory.push_back(MemoryRead{std::move(c), present(r, std::move(m))});
  }
  const std::uint64_t usages = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < usages && r.ok(); ++k) {
    CgroupKey c{r.s(), r.u()};
    auto u = readReading<std::chrono::nanoseconds>(r, [](LineReader& x) { return x.ns(); });
    g.cgroupCpu.push_back(CgroupCpuRead{std::move(c), present(r, std::move(u))});
  }
  const std::uint64_t totals = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < totals && r.ok(); ++k) {
    const auto scope = static_cast<ScopeId>(r.u(UINT32_MAX));
    auto t = readReading<std::uint64_t>(r, [](LineReader& x) { return x.u(); });
    g.pressure.push_back(PressureRead{scope, present(r, std::move(t))});
  }
  return g;
}

}  // namespace

void writeInput(LineWriter& w, const Input& input) {
  w.ns(input.now.time_since_epoch()).b(input.tick).b(input.stop).u(input.pressure.size());
  for (const ScopeEvent& e : input.pressure) {
    w.u(e.scope).b(e.gone);
    writeReading(w, e.total, [](LineWriter& x, std::uint64_t v) { x.u(v); });
  }
  writeResult(w, input.result);
  writeReadings(w, input.readings);
}

Input readInput(LineReader& r) {
  Input input;
  input.now = TimePoint(std::chrono::duration_cast<TimePoint::duration>(r.ns()));
  input.tick = r.b();
  input.stop = r.b();
  const std::uint64_t n = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < n && r.ok(); ++k) {
    ScopeEvent e;
    e.scope = static_cast<ScopeId>(r.u(UINT32_MAX));
    e.gone = r.b();
    e.total = readReading<std::uint64_t>(r, [](LineReader& x) { return x.u(); });
    input.pressure.push_back(std::move(e));
  }
  input.result = readResult(r);
  input.readings = readReadings(r);
  return input;
}

std::string readsText(const Reads& reads) {
  LineWriter w("reads");
  w.b(reads.cpu).b(reads.meminfo).b(reads.machineRefaults).b(reads.scan).b(reads.tree).u(reads.memory.size());
  for (const CgroupKey& c : reads.memory)
    w.s(c.path).u(c.inode);
  w.u(reads.cgroupCpu.size());
  for (const CgroupKey& c : reads.cgroupCpu)
    w.s(c.path).u(c.inode);
  w.u(reads.pressure.size());
  for (const ScopeId scope : reads.pressure)
    w.u(scope);
  return w.line().substr(std::string_view("reads ").size());
}

std::string commandText(const Command& command) {
  LineWriter w(commandName(command));
  std::visit(Overload{
                 [&](const ReclaimChunk& c) {
                   w.s(c.path).u(c.inode).u(c.bytes).word(cgroup::toString(c.format));
                 },
                 [&](const DropCaches&) {},
                 [&](const Compact&) {},
                 [&](const Reprobe&) {},
                 [&](const WatchScope& c) {
                   w.u(c.id).s(c.path).u(c.inode);
                   w.i(c.trigger.stall.count()).i(c.trigger.window.count());
                 },
                 [&](const UnwatchScope& c) { w.u(c.id); },
             },
             command);
  return w.line();
}

void writeTree(LineWriter& w, const cgroup::Tree& t) {
  w.u(t.vanished).u(t.symlinks).b(t.truncated).u(t.incomplete);
  if (t.incompleteError)
    w.error(*t.incompleteError);
  else
    w.word("ok");
  w.u(t.nodes.size());
  for (const cgroup::TreeNode& n : t.nodes)
    w.s(n.name).u(n.inode).i(n.parent).b(n.incomplete).b(n.unlisted);
}

cgroup::Tree readTree(LineReader& r) {
  cgroup::Tree t;
  t.vanished = r.u();
  t.symlinks = r.u();
  t.truncated = r.b();
  t.incomplete = r.u();
  if (Error e; !r.okOrError(e)) t.incompleteError = std::move(e);
  const std::uint64_t n = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < n && r.ok(); ++k) {
    cgroup::TreeNode node;
    node.name = r.s();
    node.inode = r.u();
    const std::int64_t parent = r.i();
    node.incomplete = r.b();
    node.unlisted = r.b();
    // Pre-order: the root first, with no parent; every other node's parent comes before it.
    if ((k == 0) != (parent == -1) || parent >= static_cast<std::int64_t>(k)) {
      r.fail("a tree node's parent is not a node before it");
      return {};
    }
    node.parent = static_cast<int>(parent);
    if (parent >= 0) t.nodes[static_cast<std::size_t>(parent)].children.push_back(static_cast<int>(k));
    t.nodes.push_back(std::move(node));
  }
  if (t.nodes.empty()) r.fail("a tree without its root");
  return t;
}

void writeMeminfo(LineWriter& w, const proc::Meminfo& m) {
  w.u(m.memTotal).u(m.memFree).u(m.activeFile).u(m.inactiveFile).u(m.sReclaimable).u(m.shmem).u(m.swapTotal);
  w.u(m.swapFree);
}

proc::Meminfo readMeminfo(LineReader& r) {
  proc::Meminfo m;
  // Bounded as the parser bounds them: reclaimable() and used() never wrap.
  m.memTotal = r.u(UINT64_MAX / 4);
  m.memFree = r.u(m.memTotal);
  m.activeFile = r.u(UINT64_MAX / 4);
  m.inactiveFile = r.u(UINT64_MAX / 4);
  m.sReclaimable = r.u(UINT64_MAX / 4);
  m.shmem = r.u();
  m.swapTotal = r.u();
  m.swapFree = r.u();
  return m;
}

void writeScan(LineWriter& w, const CgroupCpuScan& scan) {
  w.b(scan.complete).u(scan.cgroups.size());
  for (const CgroupCpu& c : scan.cgroups)
    w.s(c.path).u(c.inode).ns(c.usage);
}

CgroupCpuScan readScan(LineReader& r) {
  CgroupCpuScan scan;
  scan.complete = r.b();
  const std::uint64_t n = r.u(kMaxItems);
  for (std::uint64_t k = 0; k < n && r.ok(); ++k) {
    CgroupCpu c;
    c.path = r.s();
    c.inode = r.u();
    c.usage = r.ns();
    scan.cgroups.push_back(std::move(c));
  }
  return scan;
}

}  // namespace reclaimd::controller
