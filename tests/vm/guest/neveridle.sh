#!/bin/sh
# On a real kernel: a machine that is never idle still returns its cold cache.
# Time scale 12x (trim.interval 500ms against Senpai's 6 s): a scaled minute is 5 s, the target's
# 15 minutes are 75 s, its first two minutes 10 s, and the idle grace is 10 s (the default 2m).
# idle.sample_period stays at its default unless SAMPLE_PERIOD is set.
# Each phase: a background process burns BURN_MS ms every second (1-5 % of the vCPU) from the
# start; the caches are dropped, work.slice reads 400 MiB once (file0..3: the cold cache of
# earlier work) and then keeps re-reading a 32 MiB hot set (file4) every second; reclaimd starts
# with the default policy but for the scaled grace and trim interval, and runs for 75 s while the
# machine's cache, work.slice's disk reads and the memory PSI totals are sampled every second.
# Phase a: the background process in bg.slice; phase b: in work.slice with the cache; phase u:
# units (guest/units.sh): a finished build's scope beside a busy editor's service.
# Env: PHASES (default "a b u"), BURN_MS (20), TRIM (on | off: trim.enabled false | omit: no trim
# section, for a build that predates it), SAMPLE_PERIOD and FLOOR (default: the
# policy's), RUN_S (75), STATUS_AT_S (60).
# Needs the 4x100,32 data disk. The host (neveridle_test.py) asserts on what this prints:
#   @@SAMPLE t_ms=.. rec_kib=.. io_rbytes=.. refault=.. pgpgin_kib=.. psi_work_us=.. psi_bg_us=..
#            psi_sys_us=.. busy=.. idle=.. reclaimd_ms=..   (/proc/stat ticks; reclaimd's CPU)
#   @@CPU <label> t_ms=.. busy=.. idle=.. bg_ms=.. hot_ms=..   (ticks of /proc/stat; process CPU in ms)
#   @@STATUS-BEGIN json|text ... @@STATUS-END json|text code=..
# Sampling uses builtins only (lib.sh's rule), although this machine is meant to be busy: the
# samples' own CPU should not be what keeps it busy.
# shellcheck source=lib.sh
. /test/lib.sh
R=/sys/fs/cgroup
W=$R/work.slice
B=$R/bg.slice
RUN_S=${RUN_S:-75}
STATUS_AT_S=${STATUS_AT_S:-60}
mkdir $W $B

case ${TRIM:-on} in
on) trim="trim:
  interval: 500ms" ;;
off) trim="trim:
  enabled: false
  interval: 500ms" ;;
*) trim="" ;;
esac
policy "idle:
  grace: 10s${SAMPLE_PERIOD:+
  sample_period: $SAMPLE_PERIOD}" "$trim" "${FLOOR:+reclaim:
  floor: $FLOOR}"

# Each takes its cgroup as $1 and moves itself there, so that $! is the workload's own PID:
# the background process (lib.sh's bg_script) and the hot set's reader.
bg_script $R
# The reader counts its passes in /tmp/hot.passes, so that setup can wait for the hot set.
cat >/tmp/hot.sh <<EOF
echo \$\$ >$R/\$1/cgroup.procs
n=0
while :; do
	cat /data/file4 >/dev/null
	n=\$((n + 1))
	echo \$n >/tmp/hot.passes
	sleep 1
done
EOF


# rec_kib: the root target's reclaimable (what reclaimd measures without rules).
rec_kib() {
	while read -r _k _v _; do
		case $_k in
		Active\(file\):) _af=$_v ;;
		Inactive\(file\):) _if=$_v ;;
		SReclaimable:) _sr=$_v ;;
		esac
	done </proc/meminfo
	REC=$((_af + _if + _sr))
}

# io_rbytes CGROUP_DIR: bytes its tasks read from disk ("254:0 rbytes=.. wbytes=.. ...").
io_rbytes() {
	IO=0
	while read -r _dev _rest; do
		for _kv in $_rest; do
			case $_kv in
			rbytes=*) IO=$((IO + ${_kv#rbytes=})) ;;
			esac
		done
	done <"$1/io.stat"
}

# psi FILE: the "some" total in us ("some avg10=0.00 avg60=0.00 avg300=0.00 total=123").
psi() {
	read -r _ _ _ _ _t <"$1"
	PSI=${_t#total=}
}

# vmstat: the machine's file refaults and pages read in (KiB); pgpgin comes after the other.
vmstat() {
	while read -r _k _v; do
		case $_k in
		workingset_refault_file) REFAULT=$_v ;;
		pgpgin)
			PGIN=$_v
			break
			;;
		esac
	done </proc/vmstat
}

sample() {
	rec_kib
	io_rbytes $W
	vmstat
	psi $W/memory.pressure
	_pw=$PSI
	psi $B/memory.pressure
	_pb=$PSI
	psi /proc/pressure/memory
	read -r _ _u _n _s _i _w _q _sq _st _ </proc/stat
	proc_ms "$PID"
	now_ms
	echo "@@SAMPLE t_ms=$NOW_MS rec_kib=$REC io_rbytes=$IO refault=$REFAULT pgpgin_kib=$PGIN psi_work_us=$_pw" \
		"psi_bg_us=$_pb psi_sys_us=$PSI busy=$((_u + _n + _s + _q + _sq + _st)) idle=$((_i + _w)) reclaimd_ms=$PMS"
}

# proc_ms PID: the process's CPU time and its waited-for children's, in ms (USER_HZ 100).
# /proc/PID/stat after "(comm) ": state ppid ... utime(12) stime(13) cutime(14) cstime(15).
proc_ms() {
	read -r _line <"/proc/$1/stat"
	# shellcheck disable=SC2086  # split into the stat fields on purpose
	set -- ${_line##*) }
	PMS=$(((${12} + ${13} + ${14} + ${15}) * 10))
}

# cpu LABEL: the machine's busy and idle ticks (/proc/stat) and the two workloads' CPU.
cpu() {
	read -r _ _u _n _s _i _w _q _sq _st _ </proc/stat
	proc_ms "$BG"
	_bg=$PMS
	proc_ms "$HOT"
	now_ms
	echo "@@CPU $1 t_ms=$NOW_MS busy=$((_u + _n + _s + _q + _sq + _st)) idle=$((_i + _w)) bg_ms=$_bg hot_ms=$PMS"
}

# status json|text: reclaimd status, framed for the host.
status() {
	if [ "$1" = json ]; then
		reclaimd status --json >/tmp/status.out 2>&1
	else
		reclaimd status >/tmp/status.out 2>&1
	fi
	_rc=$?
	echo "@@STATUS-BEGIN $1"
	cat /tmp/status.out
	echo "@@STATUS-END $1 code=$_rc"
}

# hot_passes N LIMIT_S: waits until the hot set's reader has read it N times, or LIMIT_S seconds
# (a reader that never gets there shows in the @@MARK and in the hot-set figures).
hot_passes() {
	_tenths=0
	while [ "$(cat /tmp/hot.passes 2>/dev/null || echo 0)" -lt "$1" ] && [ "$_tenths" -lt $(($2 * 10)) ]; do
		sleep 0.1
		_tenths=$((_tenths + 1))
	done
	mark hot_read "passes=$(cat /tmp/hot.passes 2>/dev/null || echo 0)" "waited_ms=$((_tenths * 100))"
}

# setup BG_CGROUP FILL_CGROUP HOT_CGROUP FILES...: the background process starts in BG_CGROUP
# (BG), the caches are dropped, a process in FILL_CGROUP reads FILES once (the cold cache of
# earlier work, and the hot set last), and the hot set's reader starts in HOT_CGROUP (HOT).
setup() {
	sh /tmp/bg.sh "$1" &
	BG=$!
	_fill=$2 _hot=$3
	shift 3
	sync
	echo 3 >/proc/sys/vm/drop_caches
	mark fill_start
	sh -c "echo \$\$ >$R/$_fill/cgroup.procs && exec cat $*" >/dev/null
	rm -f /tmp/hot.passes
	sh /tmp/hot.sh "$_hot" &
	HOT=$!
	# The hot set read twice (on the active list) before reclaimd starts: counted passes, not a
	# fixed time, as on a busy host one pass can take seconds, and where the reader fills the hot
	# set itself (phase u) a read after the start would count as the hot set read back.
	hot_passes 2 60
	mark fill_end
	mem after_fill
}

# observe NAME CONFIG RUN_S SAMPLER: reclaimd runs with CONFIG for RUN_S seconds while SAMPLER
# is called every second (T0: reclaimd's start, ms); then it is stopped, and BG and HOT too.
observe() {
	reclaimd --config "$2" ${LOGLEVEL:+--log-level $LOGLEVEL} &
	PID=$!
	mark start
	cpu start
	now_ms
	T0=$NOW_MS
	while now_ms && [ "$NOW_MS" -lt $((T0 + $3 * 1000)) ]; do
		$4
		sleep 1
	done
	$4
	cpu end
	mem end
	kill -TERM $PID
	wait $PID
	_code=$?
	kill "$BG" "$HOT"
	wait "$BG" "$HOT" 2>/dev/null
	echo "@@EXIT $1 code=$_code"
}

# A sample, and reclaimd's status once, at STATUS_AT_S.
phase_sample() {
	sample
	if [ -z "$_asked" ] && [ "$NOW_MS" -ge $((T0 + STATUS_AT_S * 1000)) ]; then
		mark status
		status json
		status text
		_asked=1
	fi
}

phase() {
	scenario "$1"
	setup "$2" work.slice work.slice /data/file0 /data/file1 /data/file2 /data/file3 /data/file4
	_asked=
	observe "$1" /tmp/policy.yaml "$RUN_S" phase_sample
}

# shellcheck source=units.sh
. /test/units.sh

for p in ${PHASES:-a b u}; do
	case $p in
	a) phase apart bg.slice ;;
	b) phase together work.slice ;;
	u) units_phase ;;
	esac
done
echo "@@MARK done t_ms=0"
