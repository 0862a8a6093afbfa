#!/bin/sh
# Issue 4 on a real kernel: when a workload stalls on memory, reclaim must stop.
# work.slice reads 300 MiB (file0..2); reclaimd reclaims it in 16M steps, one a second. Four
# steps in, a workload in work.slice starts three readers, each re-reading the first 24 MiB of
# its own file in a loop, under a tight memory.max (48M): 72 MiB of working set in 48 MiB keeps
# all three in direct reclaim, so work.slice's memory pressure rises. With PRESSURE=true
# reclaimd must halt within one window and resume after the calm period once the workload is
# done; with PRESSURE=false it goes on (the baseline for the refaults the workload suffers).
# The rule's idle threshold is 100 %: the workload's CPU never makes work.slice "busy", so only
# pressure can stop the reclaim. Refault protection is off (limit 1000G) to watch backoff alone,
# and the machine's floor is 16M, since memory.max leaves the whole machine under the default 128M.
# Why three readers: the stall must be a clear multiple of the 100 ms trigger whatever the host's
# load. One reader over all 300 MiB under 48M stalled 60-140 ms a second (a near miss: on a loaded
# host nothing backed off); three stalled 300-450 ms a second on 6.1, 6.12 and 7.2 with the host
# at load 10 on 2 cores (one vCPU: beyond three, readers wait for the CPU rather than for memory).
# The loop tests the time with builtins: a fork per pass is CPU time that is not a stall.
# (Not 32M: after the workload the cgroup must hold more than floor + a step, for the resume.)
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
refaults() {
	while read -r _k _v; do
		[ "$_k" = workingset_refault_file ] && REFAULTS=$_v
	done <$W/memory.stat
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
# Reclaim begins G s after reclaimd's start (its first sample of work.slice); four steps in:
sleep $((G + 2))
cgmem before_workload work.slice
echo 48M >$W/memory.max
cat >/tmp/thrash.sh <<'EOF'
read -r up _ </proc/uptime
end=$((${up%.*} + 10))
for f in /data/file0 /data/file1 /data/file2; do
	while read -r up _ </proc/uptime && [ "${up%.*}" -lt $end ]; do
		dd if=$f of=/dev/null bs=1M count=24 2>/dev/null
	done &
done
wait
EOF
inside work.slice sh /tmp/thrash.sh &
READER=$!
refaults
R0=$REFAULTS
mark workload_start
# The kernel's stall totals every 100 ms while the workload runs (the machine is busy anyway).
while kill -0 $READER 2>/dev/null; do
	psi_total
	now_ms
	echo "@@PSI t_ms=$NOW_MS total=$PSI"
	sleep 0.1
done
refaults
echo max >$W/memory.max
mark workload_end
echo "@@MARK refaults t_ms=0 pages=$((REFAULTS - R0))"
cgmem after_workload work.slice
sleep 16
cgmem end work.slice
kill -TERM $PID
wait $PID
echo "@@EXIT pressure code=$?"
