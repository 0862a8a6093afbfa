"""vm.run with two additions the benchmarks need, built from vm.py's own parts:

- `disk`: attach a ready ext4 image (mounted at /data like vm.run's data disk) instead of one
  built from a `data` spec;
- `balloon_stats`: virtio-balloon with free page reporting *and* a QMP socket, so the host can
  read the guest's memory figures (free, total, page cache) through the balloon's statistics
  queue at no guest-userspace cost (hostmon.py does this); `reporting=False` keeps the
  statistics and turns free page reporting off (a control: the guest's free RAM stays with it);
- `icount`: QEMU's instruction counting (`-icount shift=N,sleep=off`): the guest's clock
  advances 2^N ns per instruction it executes and skips its idle waits, so a guest-clock
  duration counts the guest's work, whatever the host's speed.

Everything else (initramfs, retries, markers, exit codes, logs) is vm.py's. If vm.run gains
`disk=` and `extra_args=` parameters this module can shrink to a few lines.

    run(script, kernel="6.12", add=(), modules=(), disk=None, mem_mib=2048, smp=1,
        balloon_stats=True, env=None, timeout=300, boot_timeout=60, retries=2, log_dir=None,
        on_line=None, on_qemu_start=None, echo=True, reporting=True, icount=None) -> vm.Result
    on_qemu_start(pid, qmp_socket_path or None) is called for each QEMU started.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

import kernels
import vm

BALLOON_ID = "balloon0"


def run(script, kernel="6.12", add=(), modules=(), disk=None, mem_mib=2048, smp=1,
        balloon_stats=True, cmdline="", env=None, timeout=300, boot_timeout=60, retries=2,
        log_dir=None, on_line=None, on_qemu_start=None, echo=True, reporting=True, icount=None):
    log_dir = log_dir or tempfile.mkdtemp(prefix="reclaimd-vm-")
    os.makedirs(log_dir, exist_ok=True)
    for n in os.listdir(log_dir):
        if re.fullmatch(r"(console|test|qemu)(\.retry\d+)?\.log", n):
            os.unlink(os.path.join(log_dir, n))
    t_setup = time.monotonic()
    work = tempfile.mkdtemp(prefix="reclaimd-vmext-")
    qmp_path = os.path.join(work, "qmp.sock") if balloon_stats else None
    try:
        try:
            k = kernels.ensure(kernel)
            if disk and not os.path.exists(disk):
                raise OSError(f"no disk image {disk}")
            mods = list(modules) + (vm.DISK_MODULES if disk else []) + \
                (vm.BALLOON_MODULES if balloon_stats else [])
            initrd = os.path.join(work, "initramfs.cpio")
            size = vm.build_initramfs(initrd, k, script, add, mods, env, bool(disk))
        except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as e:
            vm.say(f"setup error: {e}")
            return vm.Result(vm.SETUP_ERROR, "setup-error", -1, 0, -1, 0.0, log_dir)
        vm.say(f"kernel {k.release}, initramfs {size / 2**20:.1f} MiB, prepared in "
               f"{time.monotonic() - t_setup:.1f} s, logs in {log_dir}")

        def started(pid):
            if on_qemu_start:
                on_qemu_start(pid, qmp_path)

        for attempt in range(1, retries + 2):
            suffix = "" if attempt == 1 else f".retry{attempt - 1}"
            cmd = vm.qemu_command(k, initrd, os.path.join(log_dir, f"console{suffix}.log"),
                                  mem_mib, smp, disk, False, cmdline)
            if icount is not None:
                cmd += ["-icount", f"shift={icount},sleep=off"]
            if balloon_stats:
                if os.path.exists(qmp_path):
                    os.unlink(qmp_path)
                fpr = "on" if reporting else "off"
                cmd += ["-device", f"virtio-balloon-pci,id={BALLOON_ID},free-page-reporting={fpr}",
                        "-qmp", f"unix:{vm._q(qmp_path)},server=on,wait=off"]
            outcome, status, boot_s, total, detail = vm._boot_once(
                cmd, log_dir, suffix, timeout, boot_timeout, on_line, started, echo)
            retryable = outcome == "boot-failed" and not detail.startswith("guest setup")
            if retryable and attempt <= retries:
                vm.say(f"boot attempt {attempt} failed ({detail}); retrying "
                       f"({attempt} of {retries} retries), see console{suffix}.log")
                continue
            break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    code = {"ok": status, "boot-failed": vm.BOOT_FAILED, "timeout": vm.TIMEOUT,
            "qemu-error": vm.QEMU_ERROR, "guest-died": vm.GUEST_DIED}[outcome]
    if outcome == "ok":
        vm.say(f"booted in {boot_s:.1f} s, test exited {status}, QEMU ran {total:.1f} s"
               + (f" ({detail})" if detail else ""))
    else:
        vm.say(f"{outcome} (exit {code}): {detail}; logs in {log_dir}")
    return vm.Result(code, outcome, status, attempt, boot_s, total, log_dir)
