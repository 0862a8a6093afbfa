#!/usr/bin/env python3
"""deploy/container/Containerfile, checked without a container engine (there is none in CI):

- both stages are Debian bookworm, the build stage installs deploy/build-packages.txt, and every
  package either stage installs has an installation candidate in this machine's apt (bookworm);
- the build stage is replayed here: exactly the files it COPYs go into a scratch tree and its
  build commands run there, which must produce the one .deb the runtime stage copies;
- that .deb's dependencies (dpkg-shlibdeps') all have candidates, so the runtime stage's
  `apt-get install` resolves;
- its build commands are the plain build of deploy/README.md, and its entry point is the path the
  DaemonSet's probes run.

Usage: container_test.py
"""
import glob
import os
import re
import shutil
import sys
import tempfile

import yaml

from common import REPO, Checks, run

CONTAINERFILE = os.path.join(REPO, "deploy", "container", "Containerfile")


def instructions():
    """[(stage index, INSTRUCTION, arguments)], continuation lines joined, comments dropped."""
    out, stage, pending = [], -1, ""
    for raw in open(CONTAINERFILE):
        line = raw.rstrip("\n")
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line, pending = pending + line, ""
        word, _, rest = line.strip().partition(" ")
        if word.upper() == "FROM":
            stage += 1
        out.append((stage, word.upper(), rest.strip()))
    return out


def apt_packages(command, root):
    """The packages an `apt-get install` command names; $(grep -v '^#' FILE) is read from root."""
    m = re.search(r"apt-get install (.*?)(&&|$)", command)
    if not m:
        return []
    words = m.group(1)
    for sub in re.findall(r"\$\(grep -v '\^#' (\S+)\)", words):
        listed = [w.strip() for w in open(root + sub) if w.strip() and not w.startswith("#")]
        words = words.replace(f"$(grep -v '^#' {sub})", " ".join(listed))
    return [w for w in words.split() if not w.startswith("-")]


def has_candidate(package):
    """Whether apt can install package: a real one with a candidate, or a virtual one that some
    package provides (libspdlog1.10-fmt9 is provided by libspdlog1.10)."""
    r = run(["apt-cache", "policy", package])
    m = re.search(r"Candidate: (\S+)", r.stdout)
    if m is not None and m.group(1) != "(none)":
        return True
    provides = run(["apt-cache", "showpkg", package]).stdout.partition("Reverse Provides:")[2]
    return bool(provides.strip())


def main():
    c = Checks("Containerfile")
    steps = instructions()
    froms = [args for _, ins, args in steps if ins == "FROM"]
    c.equal([f.split()[0] for f in froms], ["docker.io/library/debian:bookworm", "docker.io/library/debian:bookworm-slim"],
            "build on debian:bookworm, run on debian:bookworm-slim")

    root = tempfile.mkdtemp(prefix="reclaimd-containerfile-")
    try:
        workdir, env, debs = root, dict(os.environ), []
        for stage, ins, args in steps:
            if ins == "ENV":
                key, _, value = args.partition("=")
                env[key] = value
            elif ins == "WORKDIR":
                workdir = root + args
                os.makedirs(workdir, exist_ok=True)
            elif ins == "COPY" and stage == 0:
                src, dst = args.split()
                dst = os.path.join(workdir, dst) if not dst.startswith("/") else root + dst
                os.makedirs(os.path.dirname(dst.rstrip("/")), exist_ok=True)
                (shutil.copytree if os.path.isdir(os.path.join(REPO, src)) else shutil.copy)(os.path.join(REPO, src), dst)
            elif ins == "COPY" and args.startswith("--from=build "):
                src, dst = args.split()[1:]
                debs = glob.glob(root + src)
                c.equal(len(debs), 1, f"the runtime stage copies the one .deb the build made ({src})")
            elif ins == "RUN" and "apt-get" in args:
                # Not run here (it would change this machine); its packages are looked up instead.
                names = apt_packages(args, root)
                if stage == 0:
                    listed = [w.strip() for w in open(os.path.join(REPO, "deploy", "build-packages.txt"))
                              if w.strip() and not w.startswith("#")]
                    c.ok(set(listed) <= set(names), "the build stage installs deploy/build-packages.txt")
                    # It builds with tests and benchmarks off: their libraries would be unused.
                    unused = sorted(set(names) & {"libgtest-dev", "libgmock-dev", "libbenchmark-dev"})
                    c.equal(unused, [], "the build stage installs no test or benchmark library")
                    for name in names:
                        c.ok(has_candidate(name), f"build stage: apt has {name}")
                else:
                    c.equal(names, ["/tmp/reclaimd_*.deb"], "the runtime stage installs only reclaimd's .deb")
                    if debs:
                        depends = run(["dpkg-deb", "-f", debs[0], "Depends"]).stdout
                        for dep in filter(None, (d.strip() for d in depends.split(","))):
                            name = dep.split("|")[0].split()[0]
                            c.ok(has_candidate(name), f"runtime stage: apt has {name} (Depends: {dep})")
                        r = run(["apt-get", "install", "--simulate", "--no-install-recommends", debs[0]])
                        c.ok(r.returncode == 0 and re.search(r"^Inst reclaimd ", r.stdout, re.M),
                             "apt-get install --simulate of the .deb resolves", r.stdout[-2000:] + r.stderr)
            elif ins == "RUN" and stage == 0:
                commands = [x.strip() for x in args.split("&&")]
                readme = " ".join(open(os.path.join(REPO, "deploy", "README.md")).read().split())
                for cmd in commands:
                    c.ok(" ".join(cmd.split()) in readme, f"deploy/README.md's plain build runs: {cmd}")
                r = run(["bash", "-c", args], cwd=workdir, env=env)
                c.ok(r.returncode == 0, "the build stage's commands succeed on the copied sources",
                     (r.stdout + r.stderr)[-3000:])

        entry = next(args for _, ins, args in steps if ins == "ENTRYPOINT")
        cmd = next(args for _, ins, args in steps if ins == "CMD")
        c.equal(yaml.safe_load(entry), ["/usr/sbin/reclaimd"], "ENTRYPOINT is the packaged binary")
        c.equal(yaml.safe_load(cmd), ["run", "--config", "/etc/reclaimd/policy.yaml"], "CMD runs the packaged policy")
        ds = next(d for d in yaml.safe_load_all(open(os.path.join(REPO, "deploy", "kubernetes", "daemonset.yaml"))))
        probe = ds["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]
        c.equal(probe[0], yaml.safe_load(entry)[0], "the DaemonSet's probe runs the image's binary")
        c.equal(next(args for _, ins, args in steps if ins == "USER"), "0:0", "USER 0:0 (drop_caches needs uid 0)")
    finally:
        shutil.rmtree(root)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
