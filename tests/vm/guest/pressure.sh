#!/bin/sh
# On a real kernel: when a workload stalls on memory, reclaim must stop.
# work.slice reads 300 MiB (file0..2); reclaimd reclaims it in 16M steps, one a second. Four
# steps in, a workload in work.slice stalls on memory for 10 s. With PRESSURE=true reclaimd
# must halt within one window and resume after the calm period once the workload is done; with
# PRESSURE=false it goes on (the baseline: the steps it takes while the workload stalls).
# The rule's idle threshold is 100 %: the workload's CPU never makes work.slice "busy", so only
# pressure can stop the reclaim. Refault protection is off (limit 1000G) to watch backoff alone.
#
# How the stall is made, the same on every kernel and whatever the host's load: memory.high
# throttling. In work.slice/hog (memory.high 8M) dd fills a 40 MiB anonymous buffer. The guest
# has no swap, so the buffer cannot be reclaimed and the cgroup stays over memory.high: each
# time the task has charged two 64-page batches above it, mm/memcontrol.c's
# mem_cgroup_handle_over_high() runs reclaim_high() (16 retries, nothing to take) and then
# sleeps a penalty that grows with the square of the overage (2 s, MEMCG_MAX_HIGH_DELAY_JIFFIES,
# from 1 MiB over 8M), both inside psi_memstall_enter(). A task sleeping in memstall is a
# `some` stall however busy the CPU is: work.slice's total grows ~1000 ms a second from the
# first fault past 8M (the test measured 913-991 ms a second over the 10 s on 6.1, 6.12 and
# 7.2, on a quiet host and beside hog.py: 9-10x the trigger, where refaults made 0.0-4.5x).
# Why not refaults (three readers re-reading 24 MiB each under memory.max 48M, before): the
# kernel counts refault stall only for folios it marks workingset (MGLRU), and one run on 7.2
# made 25 ms of stall in 11.9 s while refaulting 540 MiB; other runs 300-450 ms a second.
# Why a child cgroup: alone under memory.high the task has only its unreclaimable buffer. With
# memory.high on work.slice itself, reclaim_high() would take work.slice's file cache first
# (quick, and no penalty once usage is back under high), down to nothing: no stall, and no
# cache above floor + a step left for the resume the test checks. work.slice's memory.pressure
# is hierarchical: it shows the child's stall; its cache is untouched.
# Why transparent huge pages off: 7.2 charges a huge-page fault with its THP gfp mask, which
# (defrag=madvise) may not reclaim, and the throttle is then deferred to the return from read():
# the whole 40 MiB was charged at once and dd slept one 2 s penalty (6.1 charges it with
# GFP_KERNEL and throttles in the fault). With 4 KiB faults all three throttle in the fault.
# The dd loop is insurance for a kernel that throttles only on the way back to user space (one
# 2 s sleep per dd); cgroup.kill ends the workload: the penalty sleep is killable.
# The loop tests the time with builtins: a fork per pass is CPU time the guest spends.
# shellcheck source=lib.sh
. /test/lib.sh
G=${GRACE:-10}
R=/sys/fs/cgroup
W=$R/work.slice
mkdir $W
policy "idle:
  grace: ${G}s
reclaim:
  floor: 16M
  step_min: 16M
  step_max: 16M
pressure:
  enabled: ${PRESSURE:-true}
  stall: 100ms
  window: 1s
  calm: 10s
  min_step: 4M
  refault_limit: 1000G
rules:
  - match: work.slice
    idle_source: cgroup
    threshold_percent: 100
    floor: 16M"

inside() {
	_cg=$1
	shift
	sh -c "echo \$\$ >$R/$_cg/cgroup.procs && exec $*"
}
psi_total() {
	read -r _some _a10 _a60 _a300 _total <$W/memory.pressure
	PSI=${_total#total=}
}

scenario "pressure-${PRESSURE:-true}"
reclaimd --config /tmp/policy.yaml ${LOGLEVEL:+--log-level $LOGLEVEL} &
PID=$!
inside work.slice cat /data/file0 /data/file1 /data/file2 >/dev/null
mark fill_end
cgmem after_fill work.slice
FILL_KIB=$CGF
# The workload's cgroup, made now that work.slice's reader is gone (a cgroup with processes
# cannot enable controllers for its children), so that reclaimd has seen it long before.
echo +memory >$W/cgroup.subtree_control
mkdir $W/hog
echo 8M >$W/hog/memory.high
echo never >/sys/kernel/mm/transparent_hugepage/enabled
# Reclaim begins G s after reclaimd's start (its first sample of work.slice); three 16 MiB
# steps in, the workload starts. Waited for, not slept: a step comes every second, or every
# 0.2 s while work.slice's CPU from the fill still counts, which on a loaded host took it to its
# floor before a fixed sleep ended, and nothing was left to back off from.
WANT_KIB=$((FILL_KIB - 48 * 1024))
_tries=$(((G + 10) * 10))
while cg_file work.slice && [ "$CGF" -gt "$WANT_KIB" ] && [ "$_tries" -gt 0 ]; do
	sleep 0.1
	_tries=$((_tries - 1))
done
cgmem before_workload work.slice
cat >/tmp/hog.sh <<'EOF'
while :; do dd if=/dev/zero of=/dev/null bs=40M count=1 2>/dev/null; done
EOF
inside work.slice/hog sh /tmp/hog.sh &
HOG=$!
mark workload_start
# The kernel's stall totals every 100 ms for 10 s while the workload stalls.
now_ms
END_MS=$((NOW_MS + 10000))
while [ "$NOW_MS" -lt "$END_MS" ]; do
	psi_total
	now_ms
	echo "@@PSI t_ms=$NOW_MS total=$PSI"
	sleep 0.1
done
echo 1 >$W/hog/cgroup.kill
wait $HOG
mark workload_end
cgmem after_workload work.slice
sleep 16
cgmem end work.slice
kill -TERM $PID
wait $PID
echo "@@EXIT pressure code=$?"
