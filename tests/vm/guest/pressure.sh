#!/bin/sh
# Issue 4 on a real kernel: when a workload stalls on memory, reclaim must stop.
# work.slice reads 300 MiB (file0..2); reclaimd reclaims it in 16M steps, one a second. Four
# steps in, a workload in work.slice starts re-reading all three files in a loop under a tight
# memory.max (48M), so it thrashes and work.slice's memory pressure rises. With PRESSURE=true
# reclaimd must halt within one window and resume after the calm period once the workload is
# done; with PRESSURE=false it goes on (the baseline for the refaults the workload suffers).
# The rule's idle threshold is 100 %: the workload's CPU never makes work.slice "busy", so only
# pressure can stop the reclaim. Refault protection is off (limit 1000G) to watch backoff alone,
# and the machine's floor is 16M, since memory.max leaves the whole machine under the default 128M.
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
inside work.slice "sh -c 'end=\$((\$(cut -d. -f1 /proc/uptime) + 10)); while [ \$(cut -d. -f1 /proc/uptime) -lt \$end ]; do cat /data/file0 /data/file1 /data/file2 >/dev/null; done'" &
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
