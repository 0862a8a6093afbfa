#!/bin/sh
# On a real kernel: the machine-wide controller end to end.
# Env: GRACE (seconds), SCENARIOS (space-separated subset of: gradual dropcache disabled sigterm).
# Needs the 3x100 data disk. The host (foundation_test.py) asserts on what this prints.
# shellcheck source=lib.sh
. /test/lib.sh
G=${GRACE:-20}
common="idle:
  grace: ${G}s"

# start: reclaimd in the background, its log on our stdout (the host stamps each line).
start() {
	reclaimd --config /tmp/policy.yaml ${LOGLEVEL:+--log-level $LOGLEVEL} &
	PID=$!
}

stop() { # stop NAME: SIGTERM, wait, report
	kill -TERM "$PID"
	wait "$PID"
	echo "@@EXIT $1 code=$?"
}

# Fill the cache after reclaimd has a baseline, then stay quiet.
work() {
	sleep 2
	mark fill_start
	fill /data/file0 /data/file1 /data/file2
	mark fill_end burn_ms=$BURN_MS counted_ms=$BURN_COUNTED_MS
	mem after_fill
}

gradual() {
	scenario gradual
	policy "mode: gradual" "$common"
	reclaimd probe --config /tmp/policy.yaml | sed 's/^/@@PROBE /'
	start
	work
	sleep $((G - 4))
	mem before_grace
	sleep 20
	mem after_reclaim
	stop gradual
}

dropcache() {
	scenario dropcache
	policy "mode: dropcache" "$common"
	start
	work
	sleep $((G - 4))
	mem before_grace
	sleep 14
	mem after_drop
	stop dropcache
}

disabled() {
	scenario disabled
	policy "mode: disabled" "$common"
	start
	work
	sleep $((G + 8))
	mem after_wait
	stop disabled
}

# SIGTERM while a step is being written: 1 MiB chunks make a step of ~300 chunks, and the
# signal goes out as soon as the first chunk is logged.
sigterm() {
	scenario sigterm
	policy "mode: gradual" "$common" "reclaim:
  floor: 16M
  step_min: 1G
  chunk: 1M"
	rm -f /tmp/log.fifo
	mkfifo /tmp/log.fifo
	reclaimd --config /tmp/policy.yaml --log-level debug >/tmp/log.fifo 2>&1 &
	PID=$!
	killed=
	{
		work
	} &
	while read -r line; do
		echo "$line"
		case $line in
		*event=reclaim_chunk*)
			if [ -z "$killed" ]; then
				now_ms
				kill -TERM $PID
				killed=$NOW_MS
				echo "@@MARK sigterm t_ms=$NOW_MS"
			fi
			;;
		esac
	done </tmp/log.fifo
	now_ms
	gone=$NOW_MS
	wait $PID
	code=$?
	mem after_stop
	echo "@@EXIT sigterm code=$code kill_to_exit_ms=$((gone - ${killed:-$gone}))"
}

# The harness and kernel smoke checks (smoke.sh), when the host added them: in this boot rather
# than one of their own. Their cgroup and cache go before reclaimd first starts.
smoke() {
	scenario smoke
	sh /test/smoke.sh
	echo "@@EXIT smoke code=$?"
	rmdir /sys/fs/cgroup/smoke
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

[ -e /test/smoke.sh ] && smoke
for s in ${SCENARIOS:-gradual dropcache disabled sigterm}; do
	$s
done
echo "@@MARK done t_ms=0"
