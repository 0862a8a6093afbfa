#!/usr/bin/env python3
"""Schema-level checks of deploy/kubernetes: the fields that decide whether reclaimd works on a
node and with how little privilege.

- the namespace, ConfigMap and DaemonSet refer to each other (names, keys, mount paths);
- the ConfigMap's policy passes `reclaimd check-config` and gives deploy/policy.yaml's settings;
- the container: its flags exist in the built binary's --help, its securityContext is
  unprivileged with no capabilities, its resources are requested and limited, its readiness
  probe runs `reclaimd status`;
- the host mounts: /proc read-only, /proc/sys/vm and /sys/fs/cgroup writable, node_exporter's
  textfile directory writable for --metrics-file, nothing else from the host; every file
  reclaimd reads under its proc root (controller/Paths.h) lies in them;
- tolerations that let it run on every node.

Usage: kubernetes_test.py --binary BUILD/controller/reclaimd
"""
import argparse
import glob
import os
import re
import sys
import tempfile

import yaml

from common import REPO, Checks, run

K8S = os.path.join(REPO, "deploy", "kubernetes")
PROC_ROOT, CGROUP_ROOT, CONFIG = "/host/proc", "/host/sys/fs/cgroup", "/etc/reclaimd/policy.yaml"
# node_exporter's textfile directory (Debian's prometheus-node-exporter default), in the pod.
TEXTFILE_DIR, TEXTFILE_MOUNT = "/var/lib/prometheus/node-exporter", "/host/node-exporter"
# The files reclaimd writes under its proc root (controller/Daemon.cpp).
WRITTEN = ["sys/vm/drop_caches", "sys/vm/compact_memory"]


def load():
    docs = {}
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        for doc in yaml.safe_load_all(open(path)):
            if doc:
                docs.setdefault(doc["kind"], []).append((os.path.basename(path), doc))
    return docs


def flag(args, name):
    return args[args.index(name) + 1] if name in args and args.index(name) + 1 < len(args) else None


def covering_mount(mounts, path):
    """The volumeMount whose mountPath is the longest prefix of path."""
    best = None
    for m in mounts:
        mp = m["mountPath"].rstrip("/")
        if (path == mp or path.startswith(mp + "/")) and (best is None or len(mp) > len(best["mountPath"])):
            best = m
    return best


def proc_files():
    """The paths under the proc root named in controller/Paths.h (`k... = "relative/path"`)."""
    text = open(os.path.join(REPO, "controller", "Paths.h")).read()
    return re.findall(r'constexpr std::string_view k\w+ = "([^"]+)"', text)


def check_policy(c, binary, policy_text):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(policy_text)
        f.flush()
        got = run([binary, "check-config", f.name])
    want = run([binary, "check-config", os.path.join(REPO, "deploy", "policy.yaml")])
    c.ok(got.returncode == 0, "the ConfigMap's policy passes reclaimd check-config", got.stdout + got.stderr)
    def settings(out):
        return [line for line in out.splitlines()[1:] if not line.startswith("drop-ins")]
    c.equal(settings(got.stdout), settings(want.stdout), "the ConfigMap's policy gives deploy/policy.yaml's settings")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    a = p.parse_args()
    c = Checks("Kubernetes manifests")
    docs = load()
    kinds = {k: len(v) for k, v in docs.items()}
    c.equal(kinds, {"Namespace": 1, "ConfigMap": 1, "DaemonSet": 1, "Kustomization": 1},
            "one Namespace, ConfigMap, DaemonSet and kustomization")
    kust = docs["Kustomization"][0][1]
    c.equal(sorted(kust["resources"]), sorted(f for f, _ in docs["Namespace"] + docs["ConfigMap"] + docs["DaemonSet"]),
            "kustomization.yaml lists every manifest")

    ns = docs["Namespace"][0][1]
    c.equal(ns["metadata"]["name"], "reclaimd", "namespace reclaimd")
    c.equal(ns["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce"), "privileged",
            "the namespace admits hostPath volumes (Pod Security label)")
    cm = docs["ConfigMap"][0][1]
    ds = docs["DaemonSet"][0][1]
    c.equal((cm["metadata"]["namespace"], ds["metadata"]["namespace"]), ("reclaimd", "reclaimd"),
            "ConfigMap and DaemonSet in namespace reclaimd")
    c.equal(ds["apiVersion"], "apps/v1", "DaemonSet apps/v1")
    c.equal(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
            True, "the selector matches the pod template's labels")

    pod = ds["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    args = ctr.get("args", [])
    mounts = ctr["volumeMounts"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    c.ok(all(m["name"] in volumes for m in mounts), "every volumeMount names a volume")

    # The policy: the ConfigMap key, mounted where --config looks.
    c.equal(args[:1], ["run"], "the container runs `reclaimd run`")
    c.equal(flag(args, "--config"), CONFIG, f"--config {CONFIG}")
    m = covering_mount(mounts, CONFIG)
    vol = volumes.get(m["name"], {}) if m else {}
    items = {i["path"]: i["key"] for i in vol.get("configMap", {}).get("items", [])}
    rel = os.path.relpath(CONFIG, m["mountPath"]) if m else None
    c.ok(vol.get("configMap", {}).get("name") == cm["metadata"]["name"] and items.get(rel) in cm["data"],
         f"{CONFIG} is the ConfigMap's key {items.get(rel)!r}", f"mount {m}, volume {vol}")
    c.ok(m and m.get("readOnly") is True, "the policy is mounted read-only")
    check_policy(c, a.binary, cm["data"].get("policy.yaml", ""))
    # A Kubernetes user has no systemctl for the pod: the file says how to reload there.
    text = open(os.path.join(REPO, "deploy", "kubernetes", "configmap.yaml")).read()
    c.ok("systemctl" not in text, "the ConfigMap does not tell a Kubernetes user to use systemctl")
    c.ok("kill -HUP 1" in text and "rollout restart daemonset/reclaimd" in text,
         "the ConfigMap says how to reload: SIGHUP through kubectl exec, or a rollout restart")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    c.ok(all(f"-l {k}={v}" in text for k, v in labels.items()), "its pod selector matches the DaemonSet's labels",
         str(labels))

    # The flags exist in the binary (the readiness probe's subcommand as well).
    # Each subcommand takes its own options: the daemon's are `reclaimd run`'s.
    help_text = run([a.binary, "--help"]).stdout
    run_help = run([a.binary, "run", "--help"]).stdout
    for opt in [x for x in args if x.startswith("--")]:
        c.ok(re.search(rf"(^|[ ,]){re.escape(opt)}\b", run_help, re.M), f"reclaimd run --help knows {opt}")
    probe = ctr.get("readinessProbe", {}).get("exec", {}).get("command", [])
    c.equal(probe, ["/usr/sbin/reclaimd", "status"], "readiness probe: exec reclaimd status")
    c.ok(re.search(r"^\s+status\b", help_text, re.M), "reclaimd --help lists the `status` subcommand the probes run",
         help_text)
    c.equal(ctr.get("livenessProbe", {}).get("exec", {}).get("command"), probe, "liveness probe: the same command")
    c.equal(covering_mount(mounts, "/run/reclaimd/status.sock") and
            "emptyDir" in volumes[covering_mount(mounts, "/run/reclaimd/status.sock")["name"]], True,
            "/run/reclaimd (the status socket) is a writable emptyDir")

    # Least privilege.
    sc = ctr.get("securityContext", {})
    c.equal(sc.get("privileged"), False, "privileged: false")
    c.equal(sc.get("allowPrivilegeEscalation"), False, "allowPrivilegeEscalation: false")
    c.equal(sc.get("readOnlyRootFilesystem"), True, "readOnlyRootFilesystem: true")
    c.equal(sc.get("capabilities"), {"drop": ["ALL"]}, "capabilities: drop ALL, add none")
    c.equal(sc.get("seccompProfile", {}).get("type"), "RuntimeDefault", "seccomp RuntimeDefault")
    c.equal(sc.get("runAsUser"), 0, "runAsUser 0 (drop_caches is writable by uid 0 only)")
    for key in ("hostPID", "hostNetwork", "hostIPC"):
        c.ok(not pod.get(key), f"no {key}")
    c.ok(pod.get("hostUsers", True) is True, "no user namespace (hostUsers would map uid 0 away)")
    c.equal(pod.get("automountServiceAccountToken"), False, "no service account token")

    # Host mounts: exactly these, with these modes.
    host = {}
    for mt in mounts:
        hp = volumes[mt["name"]].get("hostPath")
        if hp:
            host[hp["path"]] = (mt["mountPath"], bool(mt.get("readOnly")))
    c.equal(host, {"/proc": (PROC_ROOT, True), "/proc/sys/vm": (PROC_ROOT + "/sys/vm", False),
                   "/sys/fs/cgroup": (CGROUP_ROOT, False), TEXTFILE_DIR: (TEXTFILE_MOUNT, False)},
            "host mounts: /proc read-only, /proc/sys/vm, /sys/fs/cgroup and the textfile directory writable, "
            "nothing else")
    metrics = flag(args, "--metrics-file") or ""
    c.equal(os.path.dirname(metrics), TEXTFILE_MOUNT, f"--metrics-file writes into the textfile directory ({metrics})")
    c.ok(metrics.endswith(".prom"), "the textfile collector reads *.prom files")
    c.equal((flag(args, "--proc-root"), flag(args, "--cgroup-root")), (PROC_ROOT, CGROUP_ROOT),
            "--proc-root and --cgroup-root point at the host mounts")
    files = proc_files()
    c.ok(files, "controller/Paths.h names the files under the proc root", files)
    for rel in files:
        if rel.startswith("self/"):
            continue  # only used to find the cgroup2 mount, which --cgroup-root gives
        path = f"{PROC_ROOT}/{rel}"
        mt = covering_mount(mounts, path)
        ok = mt is not None and "hostPath" in volumes[mt["name"]]
        if rel in WRITTEN:
            c.ok(ok and not mt.get("readOnly"), f"{path} is on a writable host mount")
        else:
            c.ok(ok, f"{path} is on a host mount")

    # Small, and everywhere.
    res = ctr.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    c.ok(req.get("cpu") and req.get("memory") and lim.get("memory"), "requests cpu+memory, limits memory", res)
    c.ok("cpu" not in lim, "no CPU limit (throttling would stretch reclaim steps)")
    c.ok(any(t.get("operator") == "Exists" and "key" not in t and "effect" not in t
             for t in pod.get("tolerations", [])),
         "tolerates every taint (runs on every node)")
    c.ok(pod.get("priorityClassName") in (None, "system-node-critical", "system-cluster-critical"),
         "priorityClassName is absent or a system class")
    c.equal(ctr["image"].split(":")[0], kust["images"][0]["name"], "kustomize's images: names the container image")
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
