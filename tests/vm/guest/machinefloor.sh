#!/bin/sh
# On a real kernel: the machine's floor binds a cgroup target's steps.
# work.slice reads 200 MiB of files (charged to it); its rule keeps a 16 MiB floor, but the
# machine's reclaim.floor is set 64 MiB under what the machine holds after the read. Expected:
# the idle step takes work.slice down by about 64 MiB and the machine stays at its floor, even on
# a kernel that frees more than it is asked (6.1: 15-25 % more).
# shellcheck source=lib.sh
. /test/lib.sh
G=${GRACE:-10}
R=/sys/fs/cgroup
mkdir $R/work.slice
scenario machinefloor
sh -c "echo \$\$ >$R/work.slice/cgroup.procs && exec sh -c '. /test/lib.sh && fill /data/file0'"
mark fill_end
mem after_fill
# The floor from the figures just printed (mem's reclaimable_kib, before cgmem reuses its
# variables): Active(file) + Inactive(file) + SReclaimable, as reclaimd counts the machine's.
FLOOR_MIB=$(((_af + _if + _sr) / 1024 - 64))
cgmem after_fill work.slice
mark floor floor_mib=$FLOOR_MIB
policy "idle:
  grace: ${G}s
trim:
  enabled: false
reclaim:
  floor: ${FLOOR_MIB}M
rules:
  - match: work.slice
    floor: 16M"
reclaimd --config /tmp/policy.yaml --log-level debug &
PID=$!
sleep $((G + 20))
mem after_wait
cgmem after_wait work.slice
kill -TERM $PID
wait $PID
echo "@@EXIT machinefloor code=$?"
