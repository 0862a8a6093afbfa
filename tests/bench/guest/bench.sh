#!/bin/sh
# The benchmark inside one VM boot (busybox sh), for one configuration. tests/bench/bench.py
# boots it once per configuration and reads what it prints (host-stamped, see scenario.py).
# Env:
#   CONFIG        name of the configuration (printed only)
#   PHASES        space-separated, run in order: warm build archive long short noisy rebuild
#   GRACE_MS PAUSE_MS LONG_MS SHORT_MS   scaled durations (idle grace, warm pause, idle stretches)
#   WARM_CYCLES   warm rereads, each after a pause of PAUSE_MS
#   WARM_WORK_FILES  files of one source directory (of 48) compressed before each pause
#   BUILD_GZIP    how many of the 64 source directories the build compresses (all are read)
#   ARCHIVE_FILES how many of the 4 archive files the archive phase streams
#   WORK_CGROUP   if set, the phases run in this cgroup (created under /sys/fs/cgroup)
#   MINUTE_MS     a full-scale minute, scaled (the noisy phase's checkpoints)
#   NOISE_MS      the noisy phase's background burst: this many ms on the CPU every second
#   HOT_PERIOD_MS the noisy phase's hot set (/data/warm/d00-d03, 32 MiB) is re-read this often
#   DROP_AT_NOISY if set, the page cache is dropped as the noisy phase starts (a control)
#   REBUILD_DIRS REBUILD_GZIP REBUILD_ROUNDS   the rebuild's source directories (d00..), those
#                 recompressed per round, and its timed rounds
# /etc/bench/policy.yaml present = start reclaimd with it; absent = no controller.
#
# Idle-sensitive: between the work phases only shell builtins run (lib.sh's rule), and the
# only sampling is at phase boundaries; the host reads memory through the balloon instead.
# Lines (besides lib.sh's @@MARK/@@MEM and reclaimd's log):
#   @@CPU <label> busy=<ticks> idle=<ticks> user=<ticks> sys=<ticks>   aggregate /proc/stat
#                 (USER_HZ ticks; user counts nice, sys the kernel outside interrupts)
#   @@DISK <label> read_sectors=<n> read_ms=<n>   /dev/vda reads so far, and their time
#   @@CPU/@@DISK/@@MEM also at the noisy phase's checkpoints (noisy_start, noisy_2m, noisy_5m,
#   noisy_10m, noisy_end) and around each rebuild round (round_N_start, round_N_end), with
#   @@COST <label> reclaimd_ticks=<n> stall_some_us=<n> stall_full_us=<n>   (cost below)
#   @@RECLAIMD pid=.. utime=.. stime=.. hwm_kib=.. rss_kib=..  its own cost, read before stop
# The guest's helper library (tests/vm/guest/lib.sh, checked there), copied in by bench.py.
# shellcheck source=/dev/null
. /test/lib.sh

cpu() {
	read -r _c _u _n _s _i _w _q _sq _st _ </proc/stat
	echo "@@CPU $1 busy=$((_u + _n + _s + _q + _sq + _st)) idle=$((_i + _w)) user=$((_u + _n)) sys=$_s"
}

disk() { # read_ms: the time reads were outstanding (the 4th field), what a refault costs
	read -r _r _ _sec _rms _ </sys/block/vda/stat
	echo "@@DISK $1 read_sectors=$_sec read_ms=$_rms"
}

# own_ticks: reclaimd's CPU so far into _own (utime + stime, USER_HZ ticks: memory.reclaim runs
# in the writer's context, so the reclaim it asks for is in there too), _ut and _stt; unset
# without reclaimd.
own_ticks() {
	_own=
	[ -n "$PID" ] || return 0
	read -r _line <"/proc/$PID/stat" || return 0
	# Split on purpose: /proc/PID/stat's fields, utime and stime are the 14th and 15th.
	# shellcheck disable=SC2086
	set -- $_line
	shift 13
	_ut=$1 _stt=$2 _own=$(($1 + $2))
}

# cost LABEL: what the work can lose to reclaimd besides disk reads: its CPU (the guest has
# one vCPU) and the machine's memory stall totals (PSI, us; they include reclaimd's own).
cost() {
	own_ticks
	_ps=total= _pf=total=
	if [ -r /proc/pressure/memory ]; then
		{
			read -r _ _ _ _ _ps
			read -r _ _ _ _ _pf
		} </proc/pressure/memory
	fi
	echo "@@COST $1 reclaimd_ticks=${_own:-0} stall_some_us=${_ps#total=} stall_full_us=${_pf#total=}"
}

# sleep_ms N: sleep N milliseconds (busybox sleep takes fractions).
sleep_ms() {
	_s=$(($1 / 1000)) _f=$(($1 % 1000))
	if [ "$_f" -lt 10 ]; then
		_f=00$_f
	elif [ "$_f" -lt 100 ]; then
		_f=0$_f
	fi
	sleep "$_s.$_f"
}

reread() {
	cat /data/warm/*/* | cat >/dev/null  # through a pipe: ~0.45 s from the cache
}

# Each cycle: some work (compress one source directory: ~2.5 s of CPU, like a small rebuild;
# the smoke run compresses 8 of its 48 files, plenty for a 4.8 s grace),
# a pause shorter than the grace period, then the timed reread. The work matters: a 0.45 s
# reread alone is under 0.5 % of a 2-minute window, so it never restarts the grace period, and
# back-to-back read-pause cycles would be one idle period that reclaims in the second pause.
warm() {
	mark warm_start
	reread
	mark warm_read_end
	i=1
	while [ $i -le "${WARM_CYCLES:-3}" ]; do
		mark work_${i}_start
		n=0
		for f in /data/src/d63/*; do
			[ $n -lt "${WARM_WORK_FILES:-48}" ] && cat "$f"
			n=$((n + 1))
		done | gzip -1 >/dev/null
		mark work_${i}_end
		sleep_ms "$PAUSE_MS"
		disk reread_${i}_start
		mark reread_${i}_start
		reread
		mark reread_${i}_end
		disk reread_${i}_end
		i=$((i + 1))
	done
}

# A build: every source directory is read; the first BUILD_GZIP are compressed into /data/out
# (the CPU-busy part, like compiling), then "linked" into one file; sync ends it, as the
# build's writes reaching the disk (no writeback minutes later inside the idle stretch).
build() {
	mark work_start
	n=0
	for d in /data/src/d*; do
		if [ $n -lt "${BUILD_GZIP:-64}" ]; then
			cat "$d"/* | gzip -1 >/data/out/"${d##*/}".gz
		else
			cat "$d"/* >/dev/null
		fi
		n=$((n + 1))
	done
	cat /data/out/*.gz >/data/out/image
	sync
	mark work_end
	mem work_end
}

# An archive run: stream large files through tar (read-heavy, little CPU).
archive() {
	mark work_start
	set --
	n=0
	for f in /data/archive/file*; do
		[ $n -lt "${ARCHIVE_FILES:-4}" ] && set -- "$@" "archive/${f##*/}"
		n=$((n + 1))
	done
	tar -cf - -C /data "$@" | cat >/dev/null
	mark work_end
	mem work_end
}

# The noisy phase's background (an editor's language server, say): a short burst on the CPU
# every second, waiting with builtins (a read timing out on a FIFO nobody writes: a sleep fork
# would cost more guest CPU under TCG than the burst itself).
noise() {
	while :; do
		burn "${NOISE_MS:-20}"
		# shellcheck disable=SC3045  # busybox sh's read has -t
		read -r -t 1 _ <>/tmp/never
	done
}

# The workload's hot set, re-read every HOT_PERIOD_MS (it forks: this is the work).
hot() {
	while :; do
		cat /data/warm/d00/* /data/warm/d01/* /data/warm/d02/* /data/warm/d03/* >/dev/null
		sleep_ms "${HOT_PERIOD_MS:-12000}"
	done
}

# checkpoint LABEL: the figures the host reads at a moment of a busy phase.
checkpoint() {
	mark "$1"
	cpu "$1"
	disk "$1"
	mem "$1"
	cost "$1"
}

# Never idle: after the build's cold cache, background noise and a hot set for LONG_MS; the
# figures at 2, 5 and 10 full-scale minutes and at the end.
noisy() {
	mkfifo /tmp/never 2>/dev/null
	if [ -n "$DROP_AT_NOISY" ]; then # a control: the cache gone without a controller
		sync
		echo 1 >/proc/sys/vm/drop_caches
	fi
	checkpoint noisy_start
	noise &
	_noise=$!
	hot &
	_hot=$!
	now_ms
	_t0=$NOW_MS
	for _m in 2 5 10; do
		now_ms
		_left=$((_t0 + _m * MINUTE_MS - NOW_MS))
		[ "$_left" -gt 0 ] && sleep_ms "$_left"
		checkpoint noisy_${_m}m
	done
	now_ms
	_left=$((_t0 + LONG_MS - NOW_MS))
	[ "$_left" -gt 0 ] && sleep_ms "$_left"
	checkpoint noisy_end
	kill "$_noise" "$_hot"
	wait "$_noise" "$_hot" 2>/dev/null
}

# compile FROM COUNT: recompress COUNT source directories from d<FROM> on (of REBUILD_DIRS),
# every source directory read (as make's dependency scan and the preprocessor do).
compile() {
	n=0
	while [ $n -lt "$REBUILD_DIRS" ]; do
		_d=d$((n / 10))$((n % 10))
		if [ $(((n - $1 + REBUILD_DIRS) % REBUILD_DIRS)) -lt "$2" ]; then
			cat /data/src/$_d/* | gzip -1 >/data/out/rb/$_d.gz
		else
			cat /data/src/$_d/* >/dev/null
		fi
		n=$((n + 1))
	done
	cat /data/out/rb/d*.gz >/data/out/rb/image # the link reads every object
	sync
}

# A busy workload whose working set (REBUILD_DIRS source directories, their objects and the
# linked image: ~300 MiB for 16) is larger than the floor: one full build (round 0), then
# REBUILD_ROUNDS timed rounds, each recompressing REBUILD_GZIP directories, back to back.
rebuild() {
	: "${REBUILD_DIRS:=16}" "${REBUILD_GZIP:=2}" "${REBUILD_ROUNDS:=5}"
	mkdir -p /data/out/rb
	checkpoint round_0_start
	compile 0 "$REBUILD_DIRS"
	checkpoint round_0_end
	set --
	n=0
	while [ $n -lt "$REBUILD_DIRS" ]; do
		set -- "$@" /data/src/d$((n / 10))$((n % 10))
		n=$((n + 1))
	done
	du -sck "$@" | while read -r _s _name; do
		[ "$_name" = total ] && du -sk /data/out/rb | while read -r _o _; do
			echo "@@MARK rebuild_set t_ms=0 src_kib=$_s obj_kib=$_o"
		done
	done
	r=1
	while [ $r -le "$REBUILD_ROUNDS" ]; do
		checkpoint round_${r}_start
		compile $(((r - 1) * REBUILD_GZIP % REBUILD_DIRS)) "$REBUILD_GZIP"
		checkpoint round_${r}_end
		r=$((r + 1))
	done
}

idle() { # idle NAME MS: stay quiet; figures at both ends
	cpu "${1}_start"
	mark "${1}_start"
	sleep_ms "$2"
	mark "${1}_end"
	cpu "${1}_end"
	mem "${1}_end"
}

if [ -e /etc/bench/policy.yaml ]; then
	# debug: the figures count each trim probe (reclaim_step kind=trim), which info only summarizes
	reclaimd --config /etc/bench/policy.yaml --log-level debug &
	PID=$!
fi
if [ -n "$WORK_CGROUP" ]; then # reclaimd stays in the root cgroup; the work moves
	mkdir -p "/sys/fs/cgroup/$WORK_CGROUP"
	echo $$ >"/sys/fs/cgroup/$WORK_CGROUP/cgroup.procs"
fi
scenario "$CONFIG"
sleep 2  # let the balloon driver answer its first statistics request before the baseline
mem boot
for p in $PHASES; do
	case $p in
	warm | build | archive | noisy | rebuild) echo "@@PHASE $p"; $p ;;
	long) echo "@@PHASE long"; idle long "$LONG_MS" ;;
	short) echo "@@PHASE short"; idle short "$SHORT_MS" ;;
	*) echo "unknown phase $p"; exit 2 ;;
	esac
done
if [ -n "$PID" ]; then
	own_ticks
	while read -r _k _v _; do
		case $_k in
		VmHWM:) _hwm=$_v ;;
		VmRSS:) _rss=$_v ;;
		esac
	done <"/proc/$PID/status"
	echo "@@RECLAIMD pid=$PID utime=$_ut stime=$_stt hwm_kib=$_hwm rss_kib=$_rss"
	kill -TERM "$PID"
	wait "$PID"
	echo "@@EXIT $CONFIG code=$?"
fi
mark 'done'
