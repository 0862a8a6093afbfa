#!/usr/bin/env python3
"""The DaemonSet's image, built here from the repository, run as the DaemonSet runs it, and its
metrics scraped by Prometheus:

1. a base image from Debian's archive: these machines reach Debian's mirror but no container
   registry, so `mmdebstrap --variant=apt bookworm` makes what debian:bookworm-slim holds and
   podman imports it. It stays in podman's store as BASE_IMAGE and is reused by later runs
   (--rebuild-base makes it afresh);
2. deploy/container/Containerfile built on it with podman, from the .deb deploy_deb_build made,
   as deploy/README.md says (BASE is the Containerfile's only argument);
3. the DaemonSet's container run from that image with `podman run`: the manifest's command,
   args (plus --dry-run: nothing is reclaimed on this machine), env, volumes, securityContext
   and memory limit. The readiness probe's command answers, `kill -HUP 1` from a shell inside
   reloads (the ConfigMap's instruction), SIGTERM stops it with exit 0;
4. its metrics, the way the manifests let Prometheus in: the textfile it writes into the
   hostPath directory passes `promtool check metrics`, node_exporter's textfile collector
   serves it, and a real Prometheus scraping node_exporter answers `reclaimd_up` 1 while the
   pod runs and 0 once it has stopped.

What is not reproduced: the kubelet (probes are run once, by hand), the pod's network (the
container gets none: reclaimd listens on nothing, its metrics leave through the hostPath), and
the runtime's AppArmor/SELinux profile (podman's default seccomp profile is the runtime default).

Usage: container_test.py --deb-dir BUILD/deb/src [--rebuild-base]
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

from common import REPO, Checks, require_root, run, wait_for
from scrape import Scraper, promtool

CONTAINERFILE = os.path.join(REPO, "deploy", "container", "Containerfile")
K8S = os.path.join(REPO, "deploy", "kubernetes")
BASE_IMAGE = "localhost/reclaimd-test-base:bookworm"
IMAGE = "localhost/reclaimd:deploy-test"


def debian_mirror():
    """The Debian mirror this machine's apt uses for bookworm (a local mirror or proxy stays in
    use), else deb.debian.org."""
    for line in run(["apt-cache", "policy"]).stdout.splitlines():
        m = re.match(r"^\s*\d+ (\S+) bookworm/main ", line)
        if m:
            return m.group(1)
    return "http://deb.debian.org/debian"


def base_image(c, rebuild):
    """BASE_IMAGE, made with mmdebstrap from Debian's mirror when podman has none (or asked)."""
    have = run(["podman", "image", "exists", BASE_IMAGE]).returncode == 0
    if have and not rebuild:
        created = run(["podman", "image", "inspect", "-f", "{{.Created}}", BASE_IMAGE]).stdout.strip()
        print(f"      reusing {BASE_IMAGE} (made {created})")
        return True
    tmp = tempfile.mkdtemp(prefix="reclaimd-base-")
    try:
        t0 = time.monotonic()
        tar = os.path.join(tmp, "rootfs.tar")
        r = run(["mmdebstrap", "--variant=apt", "--mode=root", "bookworm", tar, debian_mirror()])
        if not c.ok(r.returncode == 0,
                    f"mmdebstrap: a bookworm root from Debian's mirror ({time.monotonic() - t0:.0f} s)",
                    r.stderr[-3000:]):
            return False
        r = run(["podman", "import", "--change", "CMD [\"/bin/bash\"]", tar, BASE_IMAGE])
        return c.ok(r.returncode == 0, f"podman import as {BASE_IMAGE}", r.stderr)
    finally:
        shutil.rmtree(tmp)


def build_image(c, deb):
    """The Containerfile on the base, with the .deb as its context, as deploy/README.md says."""
    ctx = tempfile.mkdtemp(prefix="reclaimd-image-")
    try:
        shutil.copy(deb, ctx)
        t0 = time.monotonic()
        # The build's apt-get reaches Debian's mirror as this machine does.
        r = run(["podman", "build", "--network", "host", "--build-arg", f"BASE={BASE_IMAGE}", "-f", CONTAINERFILE,
                 "-t", IMAGE, ctx])
        return c.ok(r.returncode == 0,
                    f"podman build -f deploy/container/Containerfile ({time.monotonic() - t0:.0f} s)",
                    (r.stdout + r.stderr)[-3000:])
    finally:
        shutil.rmtree(ctx)


def check_image(c):
    config = run(["podman", "image", "inspect", "-f", "{{json .Config}}", IMAGE], check=True).stdout
    cfg = yaml.safe_load(config)
    c.equal(cfg.get("Entrypoint"), ["/usr/sbin/reclaimd"], "ENTRYPOINT is the packaged binary")
    c.equal(cfg.get("Cmd"), ["run", "--config", "/etc/reclaimd/policy.yaml"], "CMD runs the packaged policy")
    c.equal(cfg.get("User"), "0:0", "USER 0:0 (drop_caches is writable by uid 0 only)")
    r = run(["podman", "run", "--rm", "--network", "none", *ULIMITS, IMAGE, "--version"])
    c.ok(r.returncode == 0 and r.stdout.startswith("reclaimd "), f"the image runs: {r.stdout.strip()}", r.stderr)
    readme = " ".join(open(os.path.join(REPO, "deploy", "README.md")).read().split())
    for cmd in ("dpkg-buildpackage -us -uc -b", "podman build -f deploy/container/Containerfile"):
        c.ok(cmd in readme, f"deploy/README.md's image build runs: {cmd}")


def cgroup2_mount():
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return fields[4]
    raise RuntimeError("no cgroup2 mount on this machine")


# podman raises the open-files and process limits of a container to its own maximum, which a
# root without CAP_SYS_RESOURCE (this project's build machines) may not do; a kubelet's runtime
# sets its own. reclaimd raises its soft fd limit itself, up to the hard one.
ULIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"]


def volume_flags(pod, ctr, cm, tmp, textfile):
    """podman flags for the container's volumeMounts. The hostPath the kubelet would create
    (DirectoryOrCreate: node_exporter's textfile directory) is `textfile`, a scratch directory."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    out = []
    for m in ctr["volumeMounts"]:
        v, dest, ro = volumes[m["name"]], m["mountPath"], m.get("readOnly", False)
        if "hostPath" in v:
            src = v["hostPath"]["path"]
            if src == "/sys/fs/cgroup":
                src = cgroup2_mount()
            elif v["hostPath"].get("type") == "DirectoryOrCreate":
                src = textfile
            out += ["-v", f"{src}:{dest}:{'ro' if ro else 'rw'}"]
        elif "configMap" in v:
            d = tempfile.mkdtemp(dir=tmp)
            for item in v["configMap"]["items"]:
                with open(os.path.join(d, item["path"]), "w") as f:
                    f.write(cm["data"][item["key"]])
            out += ["-v", f"{d}:{dest}:{'ro' if ro else 'rw'}"]
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit", "1Mi").replace("Mi", "m")
            out += ["--tmpfs", f"{dest}:rw,size={size},mode=0755"]
    return out


def run_flags(pod, ctr):
    """podman flags for the container's securityContext, env and limits."""
    sc = ctr["securityContext"]
    out = ["--user", f"{sc['runAsUser']}:{sc.get('runAsGroup', 0)}", "--cgroupns", "private"]
    if sc.get("readOnlyRootFilesystem"):
        out += ["--read-only", "--read-only-tmpfs=false"]  # Kubernetes adds no tmpfs of its own
    if sc.get("allowPrivilegeEscalation") is False:
        out += ["--security-opt", "no-new-privileges"]
    if sc.get("privileged"):
        out += ["--privileged"]
    if "ALL" in sc.get("capabilities", {}).get("drop", []):
        out += ["--cap-drop", "all"]
    for cap in sc.get("capabilities", {}).get("add", []):
        out += ["--cap-add", cap]
    for e in ctr.get("env", []):
        out += ["-e", f"{e['name']}={e['value']}"]
    limit = ctr.get("resources", {}).get("limits", {}).get("memory")
    if limit:
        out += ["--memory", limit.replace("Mi", "m")]
    if ctr.get("command"):
        out += ["--entrypoint", ctr["command"][0]]
    return out


def container_log(name):
    r = run(["podman", "logs", name])
    return r.stdout + r.stderr


def check_pod(c, ds, cm, tmp):
    pod = ds["spec"]["template"]["spec"]
    (ctr,) = pod["containers"]
    textfile = os.path.join(tmp, "node-exporter")
    os.makedirs(textfile)
    name = f"reclaimd-deploy-test-{os.getpid()}"
    args = (ctr.get("command", [])[1:]) + ctr["args"] + ["--dry-run"]
    cmd = ["podman", "run", "-d", "--name", name, "--network", "none", *ULIMITS, *run_flags(pod, ctr),
           *volume_flags(pod, ctr, cm, tmp, textfile), IMAGE, *args]
    print("      " + " ".join(cmd))
    r = run(cmd)
    if not c.ok(r.returncode == 0, "podman run: the DaemonSet's container from the image", r.stderr):
        return
    scraper = Scraper(tmp, textfile)
    try:
        c.ok(wait_for(lambda: "event=start" in container_log(name), 15),
             "the daemon starts with the manifest's arguments", container_log(name)[-3000:])
        probe = ctr["readinessProbe"]["exec"]["command"]
        r = run(["podman", "exec", name, *probe])
        c.ok(r.returncode == 0, f"the readiness probe's command answers: {' '.join(probe)}", r.stdout + r.stderr)
        hwm = run(["podman", "exec", name, "sh", "-c", "grep VmHWM /proc/1/status"]).stdout.split()
        print(f"      reclaimd in the container: peak resident {int(hwm[1]) / 1024:.1f} MiB" if len(hwm) > 1 else "")
        check_metrics(c, ctr, scraper, textfile, up=1)
        r = run(["podman", "exec", name, "sh", "-c", "kill -HUP 1"])
        c.ok(r.returncode == 0 and wait_for(lambda: "event=reload" in container_log(name), 10),
             "sh -c 'kill -HUP 1' inside the container reloads the policy", r.stderr + container_log(name)[-2000:])
        run(["podman", "stop", "-t", "10", name])
        code = run(["podman", "inspect", "-f", "{{.State.ExitCode}}", name]).stdout.strip()
        c.ok(code == "0" and "event=stop" in container_log(name), f"SIGTERM stops it cleanly (exit {code})",
             container_log(name)[-2000:])
        check_metrics(c, ctr, scraper, textfile, up=0)
    finally:
        scraper.stop()
        run(["podman", "rm", "-f", name])


def check_metrics(c, ctr, scraper, textfile, up):
    """The textfile in the hostPath directory, through node_exporter and Prometheus."""
    args = ctr["args"]
    prom = os.path.join(textfile, os.path.basename(args[args.index("--metrics-file") + 1]))
    want = f"\nreclaimd_up {up}\n"
    text = wait_for(lambda: os.path.exists(prom) and want in open(prom).read() and open(prom).read(), 15) or ""
    c.ok(want in text, f"the textfile in the hostPath directory says reclaimd_up {up}", text[:300])
    if up:
        c.equal(os.stat(prom).st_mode & 0o777, 0o644,
                "the textfile is world-readable (node_exporter runs as prometheus)")
        promtool(c, text, "the textfile as written")
        c.ok(scraper.start(), "node_exporter (textfile collector) and Prometheus (scraping it) are up", scraper.log())
    got = wait_for(lambda: scraper.query("reclaimd_up") == str(up), 30)
    c.ok(got, f"Prometheus, scraping node_exporter, answers reclaimd_up {up}",
         f"last answer: {scraper.query('reclaimd_up')}\n{scraper.log()}")
    if up:
        version = run(["dpkg-parsechangelog", "-l", os.path.join(REPO, "debian", "changelog"), "-S", "Version"]
                      ).stdout.strip()
        c.ok(scraper.query(f'count(reclaimd_build_info{{version="{version}"}})') == "1",
             f"and reclaimd_build_info names the packaged version ({version})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--deb-dir", required=True, help="where deb_build.py left the packages")
    p.add_argument("--rebuild-base", action="store_true", help="make the base image afresh")
    a = p.parse_args()
    require_root("container test")
    c = Checks("DaemonSet image")
    for tool in ("podman", "mmdebstrap", "prometheus", "prometheus-node-exporter", "promtool"):
        c.ok(shutil.which(tool), f"{tool} is installed (tests/packages.txt)")
    debs = glob.glob(os.path.join(a.deb_dir, "reclaimd_*.deb"))
    if c.failures or not c.ok(len(debs) == 1, f"deploy_deb_build left one .deb in {a.deb_dir}"):
        return c.done()
    if not base_image(c, a.rebuild_base) or not build_image(c, debs[0]):
        return c.done()
    docs = [d for f in ("daemonset.yaml", "configmap.yaml") for d in yaml.safe_load_all(open(os.path.join(K8S, f)))]
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    tmp = tempfile.mkdtemp(prefix="reclaimd-pod-")
    try:
        check_image(c)
        c.equal(ds["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"][0],
                "/usr/sbin/reclaimd", "the DaemonSet's probe runs the image's binary")
        check_pod(c, ds, cm, tmp)
    finally:
        run(["podman", "rmi", "-f", IMAGE])
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
