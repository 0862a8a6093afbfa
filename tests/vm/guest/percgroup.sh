#!/bin/sh
# On a real kernel: per-cgroup rules and per-cgroup idleness.
# idle.slice, busy.slice and kept.slice each read 100 MiB of files (charged to them). A CPU-bound
# loop then runs in busy.slice (so the machine is never idle either), while cgroups are created and
# removed under the root and under idle.slice. Expected: idle.slice (idle source cgroup) is
# reclaimed to its 32M floor; busy.slice (idle source cgroup, busy) and kept.slice (disabled)
# keep their cache; nothing is written at the root; no errors. The run is recorded (`reclaimd
# record`) and replayed afterwards: the replay gives the same commands, twice alike.
# shellcheck source=lib.sh
. /test/lib.sh
G=${GRACE:-15}
R=/sys/fs/cgroup
mkdir $R/idle.slice $R/busy.slice $R/kept.slice
# Trimming is off: this scenario is about idleness judged per cgroup (busy.slice keeps its
# cache because it is busy); trimming a busy cgroup is neveridle_test.py's.
policy "idle:
  grace: ${G}s
trim:
  enabled: false
rules:
  - match: idle.slice
    idle_source: cgroup
    floor: 32M
  - match: busy.slice
    idle_source: cgroup
    floor: 32M
  - match: \"kept.slice/**\"
    mode: disabled"

# inside CGROUP CMD...: runs CMD inside cgroup CGROUP (a child shell moves itself, then execs).
inside() {
	_cg=$1
	shift
	sh -c "echo \$\$ >$R/$_cg/cgroup.procs && exec $*"
}

scenario percgroup
reclaimd record /tmp/recording --config /tmp/policy.yaml --log-level debug &
PID=$!
sleep 2
# fill ends on the CPU (lib.sh), in idle.slice: its idleness is judged from its own CPU.
inside idle.slice "sh -c '. /test/lib.sh && fill /data/file0'"
mark idle_read_end
inside busy.slice cat /data/file1 >/dev/null
inside kept.slice cat /data/file2 >/dev/null
mark fill_end
for s in idle.slice busy.slice kept.slice; do cgmem after_fill $s; done
inside busy.slice "sh -c 'while :; do :; done'" &
BUSY=$!

# Cgroups come and go while reclaimd walks and reclaims.
(
	i=0
	while [ $i -lt 60 ]; do
		mkdir $R/churn-$i $R/idle.slice/job-$i 2>/dev/null
		[ $i -ge 3 ] && rmdir $R/churn-$((i - 3)) $R/idle.slice/job-$((i - 3)) 2>/dev/null
		i=$((i + 1))
		sleep 0.4
	done
	rmdir $R/churn-* $R/idle.slice/job-* 2>/dev/null
	mark churn_done
) &
CHURN=$!

sleep $((G + 14))
wait $CHURN
# The walk reads the tree from directory link counts (leaves are never opened): after a walk
# period of quiet, its count must equal what find sees. Nested cgroups make it worth checking;
# they are under kept.slice, whose rule ("kept.slice/**") can match below it, so the walk lists
# them (below a cgroup no rule can match under, it lists nothing).
mkdir -p $R/kept.slice/a/b/c $R/kept.slice/d
sleep 6
echo "@@MARK cgroups_counted t_ms=0 count=$(find $R -type d | wc -l)"
for s in idle.slice busy.slice kept.slice; do cgmem after_wait $s; done
mem after_wait
kill $BUSY
kill -TERM $PID
wait $PID
echo "@@EXIT percgroup code=$?"
# replay exits 0 only when the engine asked for the recorded readings and gave the recorded
# commands, each in its order.
reclaimd replay /tmp/recording >/tmp/replayed 2>/tmp/replay.err
_code=$?
_same=0
reclaimd replay /tmp/recording 2>/dev/null | cmp -s - /tmp/replayed && _same=1
mark replayed code=$_code same=$_same commands="$(grep -c '^command ' /tmp/replayed)" \
	reclaims="$(grep -c '^command reclaim ' /tmp/replayed)" recorded="$(grep -c '^did reclaim ' /tmp/recording)" \
	bytes="$(wc -c </tmp/recording)" error="$(head -c 200 /tmp/replay.err | tr ' \n' '__')"
rmdir $R/kept.slice/a/b/c $R/kept.slice/a/b $R/kept.slice/a $R/kept.slice/d
