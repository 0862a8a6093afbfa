#!/usr/bin/env python3
"""The DaemonSet's privilege, tried for real: its container (command line, securityContext,
volumes) is translated into an OCI bundle the way a CRI runtime would and run with runc, the
low-level runtime under containerd and CRI-O, without any extra privilege:

- `reclaimd probe` with the manifest's flags finds drop_caches and compact_memory writable;
- from inside, compact_memory and drop_caches take a write (4 to drop_caches only silences its
  log line; it drops nothing), and so does a root-owned 0200 cgroup file (cgroup.kill of an
  empty cgroup, the same permission check as memory.reclaim); a host kernel sysctl,
  /proc/sysrq-trigger and the container's own /proc/sys refuse;
- the daemon starts with the manifest's exact arguments (plus --dry-run) and stops on SIGTERM.

What is not reproduced: the runtime's seccomp and AppArmor/SELinux profiles, and the kubelet.
The hostPath /sys/fs/cgroup is bound from this machine's cgroup2 mount (on a hybrid host that
is /sys/fs/cgroup/unified), which is what the path is on a cgroup v2 node.

Usage: kubernetes_runc_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from common import REPO, Checks, require_root, run

K8S = os.path.join(REPO, "deploy", "kubernetes")
TEST_CGROUP = "reclaimd-runc-test"


def manifests():
    docs = [d for f in ("daemonset.yaml", "configmap.yaml") for d in yaml.safe_load_all(open(os.path.join(K8S, f)))]
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    return ds, cm


def cgroup2_mount():
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return fields[4]
    raise RuntimeError("no cgroup2 mount on this machine")


def make_rootfs(rootfs, binary):
    """The built binary, dash, and the shared libraries both load."""
    files = {binary: "/usr/sbin/reclaimd", "/bin/dash": "/bin/sh"}
    for exe in list(files):
        for lib in re.findall(r"(/\S+) \(0x", run(["ldd", exe], check=True).stdout):
            files[lib] = lib
    for src, dst in files.items():
        os.makedirs(os.path.dirname(rootfs + dst), exist_ok=True)
        shutil.copy(src, rootfs + dst)


def oci_config(bundle, pod, ctr, cm, args, scratch):
    """The bundle's config.json: runc's default spec (the same masked and read-only /proc paths
    as containerd's) with the container's user, capabilities and volumes applied. A hostPath the
    kubelet would create (DirectoryOrCreate: node_exporter's textfile directory) is `scratch`,
    so the test leaves nothing in this machine's own."""
    path = os.path.join(bundle, "config.json")
    if os.path.exists(path):
        os.remove(path)
    run(["runc", "spec", "--bundle", bundle], check=True)
    spec = json.load(open(path))
    sc = ctr["securityContext"]
    caps = [] if "ALL" in sc["capabilities"].get("drop", []) else spec["process"]["capabilities"]["bounding"]
    caps += ["CAP_" + c for c in sc["capabilities"].get("add", [])]
    spec["process"].update(terminal=False, args=args, noNewPrivileges=not sc["allowPrivilegeEscalation"],
                           user={"uid": sc["runAsUser"], "gid": sc.get("runAsGroup", 0)},
                           capabilities={k: list(caps) for k in
                                         ("bounding", "effective", "inheritable", "permitted", "ambient")})
    spec["root"]["readonly"] = sc["readOnlyRootFilesystem"]
    if not any(ns["type"] == "cgroup" for ns in spec["linux"]["namespaces"]):
        spec["linux"]["namespaces"].append({"type": "cgroup"})
    volumes = {v["name"]: v for v in pod["volumes"]}
    for m in sorted(ctr["volumeMounts"], key=lambda m: m["mountPath"].count("/")):
        v = volumes[m["name"]]
        ro = ["ro"] if m.get("readOnly") else ["rw"]
        if "hostPath" in v:
            src = v["hostPath"]["path"]
            if src == "/sys/fs/cgroup":
                src = cgroup2_mount()
            elif v["hostPath"].get("type") == "DirectoryOrCreate":
                src = scratch
            spec["mounts"].append({"destination": m["mountPath"], "type": "bind", "source": src,
                                   "options": ["rbind", "nosuid", "nodev", "noexec"] + ro})
        elif "configMap" in v:
            d = tempfile.mkdtemp(dir=bundle)
            for item in v["configMap"]["items"]:
                with open(os.path.join(d, item["path"]), "w") as f:
                    f.write(cm["data"][item["key"]])
            spec["mounts"].append({"destination": m["mountPath"], "type": "bind", "source": d,
                                   "options": ["rbind"] + ro})
        elif "emptyDir" in v:
            spec["mounts"].append({"destination": m["mountPath"], "type": "tmpfs", "source": "tmpfs",
                                   "options": ["nosuid", "nodev", "mode=755"]})
        os.makedirs(os.path.join(bundle, "rootfs") + m["mountPath"], exist_ok=True)
    json.dump(spec, open(path, "w"), indent=1)


PROBE_SCRIPT = r"""
try() { if sh -c "$2" 2>/dev/null; then echo "RESULT $1 written"; else echo "RESULT $1 refused"; fi; }
/usr/sbin/reclaimd probe {flags}
echo "RESULT probe_exit $?"
try compact_memory 'echo 1 > /host/proc/sys/vm/compact_memory'
try drop_caches 'echo 4 > /host/proc/sys/vm/drop_caches'
try cgroup_0200_file 'echo 1 > /host/sys/fs/cgroup/{cgroup}/cgroup.kill'
try host_kernel_sysctl 'cat /host/proc/sys/kernel/sched_child_runs_first > /host/proc/sys/kernel/sched_child_runs_first'
try sysrq_trigger 'echo h > /host/proc/sysrq-trigger'
try own_proc_sys 'echo 1 > /proc/sys/vm/compact_memory'
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    a = p.parse_args()
    require_root("runc test")
    c = Checks("DaemonSet under runc")
    ds, cm = manifests()
    pod = ds["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    # The daemon's flags that `reclaimd probe` takes too (the rest are run's alone).
    args = ctr["args"]
    flags = " ".join(f"{x} {args[i + 1]}" for i, x in enumerate(args)
                     if x in ("--config", "--proc-root", "--cgroup-root"))
    bundle = tempfile.mkdtemp(prefix="reclaimd-runc-")
    cgroup = os.path.join(cgroup2_mount(), TEST_CGROUP)
    cid = f"reclaimd-test-{os.getpid()}"
    try:
        os.makedirs(cgroup, exist_ok=True)
        make_rootfs(os.path.join(bundle, "rootfs"), os.path.abspath(a.binary))

        scratch = tempfile.mkdtemp(dir=bundle)
        oci_config(bundle, pod, ctr, cm, ["/bin/sh", "-c", PROBE_SCRIPT.replace("{flags}", flags)
                                          .replace("{cgroup}", TEST_CGROUP)], scratch)
        r = run(["runc", "run", "--bundle", bundle, cid], timeout=60)
        print("      " + (r.stdout + r.stderr).rstrip().replace("\n", "\n      "))
        res = dict(line.split()[1:3] for line in r.stdout.splitlines() if line.startswith("RESULT "))
        c.ok(res.get("probe_exit") in ("0", "69"), "reclaimd probe with the manifest's flags ran")
        c.ok(re.search(r"^drop_caches: writable$", r.stdout, re.M), "probe: drop_caches writable")
        c.ok(re.search(r"^compact_memory: yes$", r.stdout, re.M), "probe: compact_memory writable")
        if re.search(r"^memory_controller: yes", r.stdout, re.M):
            c.ok(re.search(r"^memory_reclaim: writable", r.stdout, re.M), "probe: memory.reclaim writable")
        for name in ("compact_memory", "drop_caches", "cgroup_0200_file"):
            c.equal(res.get(name), "written", f"{name}: written from the container")
        for name in ("host_kernel_sysctl", "sysrq_trigger", "own_proc_sys"):
            c.equal(res.get(name), "refused", f"{name}: refused")

        # The daemon itself, with the manifest's exact arguments.
        oci_config(bundle, pod, ctr, cm, ["/usr/sbin/reclaimd"] + ctr["args"] + ["--dry-run"], scratch)
        proc = subprocess.Popen(["runc", "run", "--bundle", bundle, cid], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        time.sleep(2)
        started = proc.poll() is None
        # The ConfigMap's reload instruction, as kubectl exec runs it: SIGHUP to PID 1 from a
        # shell inside the container (PID 1 gets only signals it does not leave at default;
        # reclaimd blocks them for its signalfd, so they are delivered).
        hup = run(["runc", "exec", cid, "/bin/sh", "-c", "kill -HUP 1"])
        time.sleep(1)
        run(["runc", "kill", cid, "TERM"])
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate()
        c.ok(started and re.search(r"event=start", out), "the daemon starts with the manifest's arguments", out)
        c.ok(hup.returncode == 0 and re.search(r"event=reload", out),
             "sh -c 'kill -HUP 1' inside the container reloads the policy", hup.stderr + out)
        c.ok(proc.returncode == 0 and re.search(r"event=stop", out), "and stops cleanly on SIGTERM",
             f"exit {proc.returncode}\n{out}")
        prom = os.path.join(scratch, os.path.basename(ctr["args"][ctr["args"].index("--metrics-file") + 1]))
        text = open(prom).read() if os.path.exists(prom) else ""
        c.ok("\nreclaimd_up 0\n" in text and (os.stat(prom).st_mode & 0o777) == 0o644,
             "--metrics-file: the textfile is in the hostPath directory, mode 0644, reclaimd_up 0 once stopped",
             text[:500])
    finally:
        run(["runc", "delete", "--force", cid])
        if os.path.isdir(cgroup):
            os.rmdir(cgroup)
        shutil.rmtree(bundle)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
