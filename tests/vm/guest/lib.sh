# shellcheck shell=sh
# Helpers for scenario scripts (busybox sh), sourced as /test/lib.sh.
#
# Idle-sensitive: reclaimd judges the guest idle at <= 0.5 % CPU, and under TCG a fork+exec
# costs several ms of guest CPU. So the helpers use shell builtins only (read, echo, case,
# arithmetic): no $(...), no cat, no awk while reclaimd is judging idleness.
# Lines for the host (tests/vm/scenario.py parses them; the host stamps arrival times):
#   @@SCENARIO <name>            a scenario begins
#   @@MARK <name> t_ms=<uptime>  something happened now
#   @@MEM <label> t_ms=.. reclaimable_kib=.. file_kib=.. free_kib=.. total_kib=..
#   @@EXIT <name> code=<status> [k=v ...]

# NOW_MS: uptime in ms (10 ms resolution). /proc/uptime is "123.45 ...".
now_ms() {
	read -r _up _ </proc/uptime
	_frac=${_up#*.}
	_frac=${_frac#0}  # "05" would be octal in arithmetic
	NOW_MS=$((${_up%.*} * 1000 + _frac * 10))
}

# mark NAME [KEY=VALUE...]
mark() {
	now_ms
	_name=$1
	shift
	echo "@@MARK $_name t_ms=$NOW_MS${*:+ $*}"
}

# BUSY_MS: the CPU time the guest has counted busy since boot, the way reclaimd counts it
# (/proc/stat's cpu line: user nice system irq softirq steal, in USER_HZ = 100 ticks a second).
busy_ms() {
	read -r _cpu _u _n _s _i _w _q _sq _st _ </proc/stat
	BUSY_MS=$(((_u + _n + _s + _q + _sq + _st) * 10))
}

scenario() { echo "@@SCENARIO $1"; }

# mem LABEL: the machine's memory figures from /proc/meminfo, builtins only.
mem() {
	while read -r _k _v _; do
		case $_k in
		MemTotal:) _tot=$_v ;;
		MemFree:) _free=$_v ;;
		Active\(file\):) _af=$_v ;;
		Inactive\(file\):) _if=$_v ;;
		SReclaimable:) _sr=$_v ;;
		esac
	done </proc/meminfo
	now_ms
	echo "@@MEM $1 t_ms=$NOW_MS reclaimable_kib=$((_af + _if + _sr)) file_kib=$((_af + _if)) free_kib=$_free total_kib=$_tot"
}

# cg_file CGROUP: its file cache in KiB (memory.stat active_file + inactive_file) in CGF,
# builtins only.
cg_file() {
	_af=0 _if=0
	while read -r _k _v; do
		case $_k in
		active_file) _af=$_v ;;
		inactive_file) _if=$_v ;;
		esac
	done <"/sys/fs/cgroup/$1/memory.stat"
	CGF=$(((_af + _if) / 1024))
}

# cgmem LABEL CGROUP: a cgroup's file cache from memory.stat.
cgmem() {
	cg_file "$2"
	now_ms
	echo "@@MEM $1 t_ms=$NOW_MS cgroup=$2 file_kib=$CGF"
}

# burn MS: keep the CPU busy for MS ms (builtins only), so that a piece of work ends on the CPU
# at a known moment. A read ends in I/O wait, which the idle judgement counts as idle: on a
# loaded host the emulated disk is slow and that idle tail grew to 0.6 s, so idle began that
# much "before" the grace period ended, counted from the read's end.
# Sets BURN_MS (the time it took) and BURN_COUNTED_MS (the busy time the guest counted in it):
# under TCG the guest counts a tick only when it lands while QEMU's vCPU thread runs (no steal
# time), so on a loaded host a 500 ms burn was counted 170-500 ms (7.2, 2026-11-30).
burn() {
	busy_ms
	_b0=$BUSY_MS
	now_ms
	_t0=$NOW_MS
	_end=$((NOW_MS + $1))
	while [ "$NOW_MS" -lt "$_end" ]; do now_ms; done
	busy_ms
	# shellcheck disable=SC2034  # read by the scripts that source this file
	BURN_MS=$((NOW_MS - _t0)) BURN_COUNTED_MS=$((BUSY_MS - _b0))
}

# bg_script ROOT: writes /tmp/bg.sh, the background process of a machine that never goes idle:
# a burst of BURN_MS (20) ms on the CPU every second, after moving itself to the cgroup its $1
# names under ROOT (so that $! is the workload's own PID). It waits with builtins, a read timing
# out on a FIFO nobody writes: a sleep fork cost 20-25 ms of guest CPU a second under TCG, more
# than the burn itself.
bg_script() {
	mkfifo /tmp/never
	cat >/tmp/bg.sh <<EOF
. /test/lib.sh
echo \$\$ >$1/\$1/cgroup.procs
while :; do
	burn ${BURN_MS:-20}
	read -r -t 1 _ <>/tmp/never
done
EOF
}

# burn_counted MS CAP_MS: keep the CPU busy until the guest has counted MS ms of it busy, or for
# CAP_MS ms at most; sets BURN_MS and BURN_COUNTED_MS as burn does. On a crowded host a 500 ms
# burn was counted 110 ms, within a 30 s window's 150 ms idle budget: the work's end then held
# the window busy not at all, and nothing bounded how early idle could begin.
burn_counted() {
	busy_ms
	_b0=$BUSY_MS
	now_ms
	_t0=$NOW_MS
	_end=$((NOW_MS + $2))
	while [ $((BUSY_MS - _b0)) -lt "$1" ] && [ "$NOW_MS" -lt "$_end" ]; do
		now_ms
		busy_ms
	done
	# shellcheck disable=SC2034  # read by the scripts that source this file
	BURN_MS=$((NOW_MS - _t0)) BURN_COUNTED_MS=$((BUSY_MS - _b0))
}

# fill FILES...: reads files into the page cache (this is the workload: it may fork), then on
# the CPU until the guest has counted 500 ms busy (5 s at most): the work ends busy, when fill
# returns, whatever the disk's and the host's speed.
fill() {
	cat "$@" >/dev/null
	burn_counted 500 5000
}

# policy LINES...: writes /tmp/policy.yaml, one argument per line.
policy() {
	: >/tmp/policy.yaml
	for _line in "$@"; do echo "$_line" >>/tmp/policy.yaml; done
}
