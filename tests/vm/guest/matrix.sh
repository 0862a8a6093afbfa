#!/bin/sh
# One cell of the never-idle matrix (tests/bench/matrix.py, tests/vm/matrix_test.py).
# The hard order: a background process (an editor, a language server) already runs and re-reads
# its hot set periodically BEFORE and DURING the work that fills the cold cache, so the hot set
# is older in the LRU than the cold cache; the work ends, the background process goes on.
#   1. the controller starts (reclaimd with /etc/matrix/policy.yaml, DAMON_RECLAIM, a DAMON
#      scheme (damos_on), or none);
#   2. the caches are dropped; the background process starts in BG_CGROUP: a burst of BURN_MS on
#      the CPU every second, and a reader of HOT_FILE (read() or mmap) every HOT_PERIOD_MS;
#   3. after WARM_MS the work runs in work.slice: it reads the cold files (file0..3) once, twice,
#      or twice through mmap, or writes them over (COLD=write: a build's objects, an image's
#      layers; dirty cache the kernel writes back after DIRTY_EXPIRE_CS, scaled as the rest);
#      with HOT_START=mid the hot reader starts only after the work has read file0 and file1
#      (an editor opened midway through a build), and once it has read its hot set the work
#      reads file2 and file3 (the hot set lies between older and newer cold cache);
#   4. OBSERVE_MS after the work's end, sampled every second; then everything stops.
#   With AGAIN_MS (over 0) the work runs twice, as an edit-and-rebuild loop does: a first time
#   (work1_start, work1_end), then AGAIN_MS later the same work again, and the figures follow the
#   second; what the first left (the kernel's learning, a hold's bottom) is still there.
# Env: CONTROLLER (none | reclaimd | damon | damos), COLD (once | twice | mmap | write), HOT_FILE,
# HOT_MODE (read | mmap), HOT_PERIOD_MS, BG_CGROUP (work.slice | bg.slice |
# system.slice/editor.service), BURN_MS (20), WARM_MS, OBSERVE_MS, AGAIN_MS, DAMON_MIN_AGE_US,
# DAMOS_INTERVAL_US, LRU_GEN (set: the @@LRUGEN lines), MGLRU (y | n: switch the kernel's
# multi-gen LRU on or off before anything runs; unset: as the kernel booted; @@MGLRU says what it
# is then),
# HOT_START (before | mid), HOT_MIB (the hot set's size: with mid, read once before the rest),
# HOT_OWNER (a cgroup that reads the hot set once before the reader starts, so its pages are
# charged there; empty: none), DIRTY_EXPIRE_CS and DIRTY_WRITEBACK_CS (with COLD=write: the
# kernel's writeback timing, centiseconds).
# Lines for the host:
#   @@MARK hot_start | [work1_start | work1_end] | work_start | work_end | end   (lib.sh)
#   @@SAMPLE t_ms=.. file_kib=.. hot_read=.. psi_us=.. psi_wl_us=.. refault=.. dirty_kib=.. ...
#     file_kib: Active(file)+Inactive(file); hot_read: bytes the hot reader read from disk
#     (/proc/PID/io read_bytes, its reaped children included); psi_us: /proc/pressure/memory
#     "some" total (the machine's: reclaimd's own stall in memory.reclaim included); psi_wl_us:
#     the same of the workload's cgroups (work.slice, and BG_CGROUP when apart); refault:
#     workingset_refault_file; dirty_kib: /proc/meminfo's Dirty (not yet written back); then
#     /proc/vmstat's nr_active_file, nr_inactive_file (pages), workingset_activate_file,
#     workingset_restore_file (pages, cumulative): where the kernel keeps the file cache, and
#     whether what comes back from disk is activated as in use
#   @@DAMON key=value ...   what DAMON_RECLAIM was set to, and its figures at the end
#   @@DAMOS key=value ...   the same of the DAMON scheme (damos_on)
#   @@EXIT matrix code=..   reclaimd's exit status on SIGTERM (0 when there is none)
#   @@CGFILE work_end|end work.slice=KiB [BG_CGROUP=KiB]   each cgroup's file cache (memory.stat):
#     where the hot set is charged (a page belongs to the cgroup that read it in)
#   @@LRUGEN t_ms=.. LINE    with LRU_GEN, every fifth sample: work.slice's block of
#     /sys/kernel/debug/lru_gen_full (MGLRU's generations, their ages and sizes, and per tier
#     what was refaulted, evicted and protected), one line each
# Sampling uses builtins only (lib.sh's rule).
# shellcheck source=lib.sh
. /test/lib.sh
R=/sys/fs/cgroup
BG_CGROUP=${BG_CGROUP:-work.slice}
mkdir -p $R/work.slice $R/bg.slice $R/system.slice
# system.slice as systemd sets it up: its units get the memory controller too.
echo "+memory +cpu +io" >$R/system.slice/cgroup.subtree_control
mkdir -p "$R/$BG_CGROUP"
D=/sys/module/damon_reclaim/parameters

# damon_on: DAMON_RECLAIM as a user has to switch it on. DAMON_STAT (on by default on 7.x)
# holds DAMON's context and DAMON_RECLAIM then silently stays off; the free-memory watermarks
# (by default active only while free memory is between 20 % and 40 %) are opened so that it
# acts on a machine with free memory; min_age on the run's scale.
damon_on() {
	if [ ! -d $D ]; then
		echo "@@DAMON available=0"
		return
	fi
	[ -w /sys/module/damon_stat/parameters/enabled ] && echo N >/sys/module/damon_stat/parameters/enabled
	echo 1000 >$D/wmarks_high
	echo 999 >$D/wmarks_mid
	echo 0 >$D/wmarks_low
	echo "${DAMON_MIN_AGE_US:-120000000}" >$D/min_age
	echo Y >$D/enabled
	sleep 1
	read -r _en <$D/enabled
	_pid=-1
	[ -r $D/kdamond_pid ] && read -r _pid <$D/kdamond_pid
	echo "@@DAMON available=1 enabled=$_en kdamond_pid=$_pid min_age_us=$DAMON_MIN_AGE_US"
}

# damos_on: a DAMON sysfs scheme as reclaimd could set one up: page out work.slice's pages that
# were not accessed within DAMOS_INTERVAL_US (the young filter: a folio read or touched since
# the last pass is kept, and marked old for the next one), over all of the biggest System RAM
# range, every DAMOS_INTERVAL_US; monitoring sampled once per interval so its own marking
# disturbs little. @@DAMOS says what was set, and the scheme's stats at the end.
S=/sys/kernel/mm/damon/admin/kdamonds/0
damos_on() {
	if [ ! -d /sys/kernel/mm/damon/admin ]; then
		echo "@@DAMOS available=0"
		return
	fi
	[ -w /sys/module/damon_stat/parameters/enabled ] && echo N >/sys/module/damon_stat/parameters/enabled
	_lo=0 _hi=0
	while read -r _r _c _n _m; do
		[ "$_n $_m" = "System RAM" ] || continue
		_a=$((0x${_r%-*})) _b=$((0x${_r#*-} + 1))
		[ $((_b - _a)) -gt $((_hi - _lo)) ] && _lo=$_a _hi=$_b
	done </proc/iomem
	_i=${DAMOS_INTERVAL_US:-10000000}
	echo 1 >/sys/kernel/mm/damon/admin/kdamonds/nr_kdamonds
	echo 1 >$S/contexts/nr_contexts
	C=$S/contexts/0
	echo paddr >$C/operations
	echo "$_i" >$C/monitoring_attrs/intervals/sample_us
	echo "$_i" >$C/monitoring_attrs/intervals/aggr_us
	echo "$_i" >$C/monitoring_attrs/intervals/update_us
	echo 1 >$C/targets/nr_targets
	echo 1 >$C/targets/0/regions/nr_regions
	echo "$_lo" >$C/targets/0/regions/0/start
	echo "$_hi" >$C/targets/0/regions/0/end
	echo 1 >$C/schemes/nr_schemes
	H=$C/schemes/0
	echo pageout >$H/action
	echo "$_i" >$H/apply_interval_us
	echo 18446744073709551615 >$H/access_pattern/sz/max
	echo 4294967295 >$H/access_pattern/nr_accesses/max
	echo 4294967295 >$H/access_pattern/age/max
	echo 2 >$H/filters/nr_filters
	echo memcg >$H/filters/0/type
	echo /work.slice >$H/filters/0/memcg_path
	echo N >$H/filters/0/matching
	echo young >$H/filters/1/type
	echo Y >$H/filters/1/matching
	echo on >$S/state
	read -r _st <$S/state
	echo "@@DAMOS available=1 state=$_st region=$_lo-$_hi interval_us=$_i"
}

damon_figures() {
	if [ "$CONTROLLER" = damos ] && [ -d $S ]; then
		echo update_schemes_stats >$S/state
		_out="@@DAMOS end=1"
		for _k in nr_tried sz_tried nr_applied sz_applied qt_exceeds; do
			read -r _v <$S/contexts/0/schemes/0/stats/$_k && _out="$_out $_k=$_v"
		done
		echo "$_out"
	fi
	[ "$CONTROLLER" = damon ] && [ -d $D ] || return 0
	_out="@@DAMON end=1"
	for _k in nr_reclaim_tried_regions bytes_reclaim_tried_regions nr_reclaimed_regions \
		bytes_reclaimed_regions nr_quota_exceeds kdamond_pid enabled; do
		[ -r $D/$_k ] && read -r _v <$D/$_k && _out="$_out $_k=$_v"
	done
	echo "$_out"
}

# The background process (lib.sh's bg_script) and the hot set's reader; each moves itself to $1.
bg_script $R
_period_s=$((HOT_PERIOD_MS / 1000)).$(((HOT_PERIOD_MS % 1000) / 100))$(((HOT_PERIOD_MS % 100) / 10))
if [ "${HOT_MODE:-read}" = mmap ]; then
	cat >/tmp/hot.sh <<EOF
echo \$\$ >$R/\$1/cgroup.procs
exec /usr/bin/mtouch -p $HOT_PERIOD_MS $HOT_FILE
EOF
else
	cat >/tmp/hot.sh <<EOF
echo \$\$ >$R/\$1/cgroup.procs
while :; do
	cat $HOT_FILE >/dev/null
	sleep $_period_s
done
EOF
fi

# hot_read: the hot reader's bytes read from disk so far (HOT_READ).
hot_read() {
	HOT_READ=0
	while read -r _k _v; do
		case $_k in
		read_bytes:) HOT_READ=$_v ;;
		esac
	done <"/proc/$HOT/io"
}

sample() {
	while read -r _k _v _; do
		case $_k in
		Active\(file\):) _af=$_v ;;
		Inactive\(file\):) _if=$_v ;;
		Dirty:) _dt=$_v ;;
		esac
	done </proc/meminfo
	_ws=""
	while read -r _k _v; do
		case $_k in
		workingset_refault_file) _rf=$_v ;;
		nr_active_file|nr_inactive_file|workingset_activate_file|workingset_restore_file) _ws="$_ws $_k=$_v" ;;
		esac
	done </proc/vmstat
	read -r _ _ _ _ _t </proc/pressure/memory
	read -r _ _ _ _ _w <$R/work.slice/memory.pressure
	_w=${_w#total=}
	if [ "$BG_CGROUP" != work.slice ]; then
		read -r _ _ _ _ _b <"$R/$BG_CGROUP/memory.pressure"
		_w=$((_w + ${_b#total=}))
	fi
	hot_read
	now_ms
	echo "@@SAMPLE t_ms=$NOW_MS file_kib=$((_af + _if)) hot_read=$HOT_READ psi_us=${_t#total=} psi_wl_us=$_w refault=$_rf dirty_kib=$_dt$_ws"
	SAMPLES=$((SAMPLES + 1))
	[ -n "${LRU_GEN:-}" ] && [ $((SAMPLES % 5)) = 1 ] && lru_gen
	return 0
}

# lru_gen: work.slice's block of MGLRU's debugfs file (nothing where the kernel has none).
lru_gen() {
	[ -r /sys/kernel/debug/lru_gen_full ] || return 0
	_in=0
	while read -r _l; do
		case $_l in
		memcg*" /work.slice") _in=1 ;;
		memcg*) _in=0 ;;
		esac
		[ $_in = 1 ] && echo "@@LRUGEN t_ms=$NOW_MS $_l"
	done </sys/kernel/debug/lru_gen_full
}

# cg_files TAG: the file cache of work.slice and of BG_CGROUP (lib.sh's cg_file).
cg_files() {
	cg_file work.slice
	_out="@@CGFILE $1 work.slice=$CGF"
	if [ "$BG_CGROUP" != work.slice ]; then
		cg_file "$BG_CGROUP"
		_out="$_out $BG_CGROUP=$CGF"
	fi
	echo "$_out"
}

# sleep_sampling MS: sample every second for MS ms.
sleep_sampling() {
	now_ms
	_until=$((NOW_MS + $1))
	while [ "$NOW_MS" -lt $_until ]; do
		sample
		sleep 1
		now_ms
	done
}

scenario matrix
SAMPLES=0
# Before the caches are filled: pages the kernel held when the LRU switched are moved over, but
# what this run measures should all be read under one.
if [ -n "${MGLRU:-}" ]; then
	if [ -w /sys/kernel/mm/lru_gen/enabled ]; then
		echo "$MGLRU" >/sys/kernel/mm/lru_gen/enabled || echo "@@MGLRU switch failed"
	else
		echo "@@MGLRU not in this kernel"
	fi
fi
[ -r /sys/kernel/mm/lru_gen/enabled ] && echo "@@MGLRU enabled=$(cat /sys/kernel/mm/lru_gen/enabled)"
if [ -n "${LRU_GEN:-}" ] && [ ! -e /sys/kernel/debug/lru_gen_full ]; then
	mount -t debugfs debugfs /sys/kernel/debug || echo "@@LRUGEN no debugfs"
fi
PID=
case ${CONTROLLER:-none} in
reclaimd)
	# debug: the figures count each trim probe (reclaim_step kind=trim), which info only summarizes
	reclaimd --config /etc/matrix/policy.yaml --log-level debug &
	PID=$!
	;;
damon) damon_on ;;
damos) damos_on ;;
esac
if [ "${COLD:-twice}" = write ]; then
	echo "${DIRTY_EXPIRE_CS:-3000}" >/proc/sys/vm/dirty_expire_centisecs
	echo "${DIRTY_WRITEBACK_CS:-500}" >/proc/sys/vm/dirty_writeback_centisecs
fi
sync
echo 3 >/proc/sys/vm/drop_caches
mem start
sh /tmp/bg.sh "$BG_CGROUP" &
BG=$!
# work_reads FILE...: the work reads its cold files in work.slice, as COLD says.
work_reads() {
	case ${COLD:-twice} in
	once) sh -c "echo \$\$ >$R/work.slice/cgroup.procs && exec cat $*" >/dev/null ;;
	mmap) sh -c "echo \$\$ >$R/work.slice/cgroup.procs && exec /usr/bin/mtouch -n 2 $*" ;;
	write)
		# In place (conv=notrunc: the data disk has no room for new files), as many MiB as each has.
		sh -c "echo \$\$ >$R/work.slice/cgroup.procs && for f in $*; do
			dd if=/dev/zero of=\$f bs=1M count=\$((\$(stat -c %s \$f) / 1048576)) conv=notrunc status=none
		done"
		;;
	*)
		sh -c "echo \$\$ >$R/work.slice/cgroup.procs && exec cat $*" >/dev/null
		sh -c "echo \$\$ >$R/work.slice/cgroup.procs && exec cat $*" >/dev/null
		;;
	esac
}

# hot_starts: the hot reader starts and has read its hot set once (at most 60 s); with
# HOT_OWNER, that cgroup reads it first and the reader finds it cached.
hot_starts() {
	_want=$((${HOT_MIB:-0} * 1048576))
	if [ -n "${HOT_OWNER:-}" ]; then
		sh -c "echo \$\$ >$R/$HOT_OWNER/cgroup.procs && exec cat $HOT_FILE" >/dev/null
		_want=0
	fi
	sh /tmp/hot.sh "$BG_CGROUP" &
	HOT=$!
	mark hot_start
	_i=0
	while hot_read; [ "$HOT_READ" -lt $_want ] && [ $_i -lt 600 ]; do
		sleep 0.1
		_i=$((_i + 1))
	done
}

if [ "${HOT_START:-before}" = mid ]; then
	sleep_sampling "${WARM_MS:-10000}"
	mark work_start
	work_reads /data/file0 /data/file1
	hot_starts
	work_reads /data/file2 /data/file3
else
	hot_starts
	sleep_sampling "${WARM_MS:-10000}"
	if [ "${AGAIN_MS:-0}" -gt 0 ]; then
		# matrix.py keeps two episodes to this branch: the hot reader has started before either.
		mark work1_start
		work_reads /data/file0 /data/file1 /data/file2 /data/file3
		mark work1_end
		mem work1_end
		sleep_sampling "$AGAIN_MS"
	fi
	mark work_start
	work_reads /data/file0 /data/file1 /data/file2 /data/file3
fi
mark work_end
mem work_end
cg_files work_end
sleep_sampling "${OBSERVE_MS:-50000}"
sample
mark end
mem end
cg_files end
damon_figures
_code=0
if [ -n "$PID" ]; then
	kill -TERM "$PID"
	wait "$PID"
	_code=$?
fi
kill "$BG" "$HOT"
wait "$BG" "$HOT" 2>/dev/null
echo "@@EXIT matrix code=$_code"
