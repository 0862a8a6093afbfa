#!/bin/sh
# PID 1 of every test VM (busybox sh). Sets the machine up the way reclaimd finds a real one,
# runs /test/run.sh with its output on the second serial port (ttyS1, streamed to the host),
# reports the status there and powers off. The kernel console (ttyS0) is the host's log file.
# Markers on ttyS1 (vm.py parses them): @@VM-START@@, @@VM-EXIT <status>@@,
# @@VM-SETUP-FAILED <why>@@ (deterministic, the host does not retry it).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
out=/dev/ttyS1

fail() {
	echo "vm-init: setup failed: $*" >/dev/console
	[ -c $out ] && echo "@@VM-SETUP-FAILED $*@@" >$out && stty -F $out raw
	poweroff -f
}

mount -t proc proc /proc || fail "mount /proc"
mount -t sysfs sysfs /sys || fail "mount /sys"
mount -t devtmpfs devtmpfs /dev || fail "mount /dev"
mount -t tmpfs -o mode=1777 tmpfs /tmp || fail "mount /tmp"
mount -t tmpfs -o mode=755 tmpfs /run || fail "mount /run"
# raw: no \n -> \r\n translation. stty also drains the port (tcsetattr TCSADRAIN), used below
# so that nothing is lost when poweroff cuts the machine.
stty -F $out raw -echo || fail "no $out"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
echo "+memory +cpu +io +pids" >/sys/fs/cgroup/cgroup.subtree_control ||
	fail "cannot enable controllers (have: $(cat /sys/fs/cgroup/cgroup.controllers))"

# /etc/vm/modules: one "name optional" line per module, in load order (vm.py resolved deps).
while read -r name optional; do
	insmod "/lib/modules/$name.ko" 2>/dev/console && continue
	[ "$optional" = 1 ] || fail "insmod $name"
	echo "vm-init: optional module $name not loaded" >/dev/console
done </etc/vm/modules

if [ -e /etc/vm/data ]; then
	# virtio_blk probes synchronously, but do not rely on it: wait up to 5 s for the disk.
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	# noatime: reads must not dirty inodes (journal writes would disturb idle measurements).
	mount -t ext4 -o noatime /dev/vda /data || fail "mount /dev/vda on /data"
fi

# shellcheck source=/dev/null  # written by vm.py: export lines only
. /etc/vm/env
cd /
# The punctuality canary (canary.c) times the vCPU beside the test; its records follow the
# test's output, before the exit marker, for the host's deadline judgements (canary.py).
/bin/vm-canary /run/canary.log &
canary=$!
echo "@@VM-START@@" >$out
sh /test/run.sh </dev/null >$out 2>&1
status=$?
kill "$canary"
while read -r a b c; do echo "@@CANARY $a $b $c"; done </run/canary.log >$out
echo "@@VM-EXIT $status@@" >$out
stty -F $out raw  # drain: wait until the host has every byte
poweroff -f
