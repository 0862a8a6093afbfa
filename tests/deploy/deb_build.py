#!/usr/bin/env python3
"""Builds the Debian source and binary packages from this checkout, as a Debian user or a
derivative distribution would: the sources copied into OUT/src/reclaimd-VERSION (this checkout's
files as they are, build directories and .git left out), `dpkg-source -b` for the source package,
then `dpkg-buildpackage -us -uc -b` for the binary one. deploy_package and deploy_container use
what it leaves in OUT/src: the .dsc, the .deb and the .changes.

Where ccache's compiler links are installed (/usr/lib/ccache), they come first in PATH, so a
second run compiles little; a fresh machine compiles everything once.

Usage: deb_build.py --out BUILD/deb
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time

from common import REPO, Checks, run


def source_files():
    """This checkout's files, relative to REPO: git's list (tracked and untracked, ignored ones
    left out) in a git checkout, else every file outside build directories."""
    r = run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    if r.returncode == 0:
        return [f for f in r.stdout.split("\0") if f and os.path.lexists(os.path.join(REPO, f))]
    out = []
    for top, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not (top == REPO and (d.startswith("build") or d in (".git", "out")))]
        out += [os.path.relpath(os.path.join(top, f), REPO) for f in files]
    return out


def copy_tree(dest):
    for rel in source_files():
        src, dst = os.path.join(REPO, rel), os.path.join(dest, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    a = p.parse_args()
    c = Checks("Debian package build")
    version = run(["dpkg-parsechangelog", "-l", os.path.join(REPO, "debian", "changelog"), "-S", "Version"],
                  check=True).stdout.strip()
    src = os.path.join(os.path.abspath(a.out), "src")
    tree = os.path.join(src, f"reclaimd-{version}")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(tree)
    copy_tree(tree)

    t0 = time.monotonic()
    r = run(["dpkg-source", "-b", os.path.basename(tree)], cwd=src)
    c.ok(r.returncode == 0 and glob.glob(os.path.join(src, "*.dsc")),
         f"dpkg-source -b: the source package ({time.monotonic() - t0:.1f} s)", r.stdout + r.stderr)

    env = dict(os.environ, DEB_BUILD_OPTIONS=f"parallel={os.cpu_count() or 1}")
    if os.path.isdir("/usr/lib/ccache"):
        env["PATH"] = "/usr/lib/ccache:" + env["PATH"]
    t0 = time.monotonic()
    log = os.path.join(src, "dpkg-buildpackage.log")
    # At the caller's priority: nothing of the test command runs beside it, and at nice 10 a host
    # busy with two CPU-bound loops left it ~5 % of the CPU (over 1,200 s where it takes ~150).
    with open(log, "w") as f:
        rc = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=tree, env=env,
                            stdout=f, stderr=subprocess.STDOUT).returncode
    took = time.monotonic() - t0
    text = open(log).read()
    debs = [d for d in glob.glob(os.path.join(src, "*.deb")) if not re.search(r"-dbgsym_", d)]
    c.ok(rc == 0 and len(debs) == 1 and glob.glob(os.path.join(src, "*.changes")),
         f"dpkg-buildpackage -us -uc -b builds reclaimd's .deb ({took:.0f} s)", text[-4000:])
    for d in sorted(glob.glob(os.path.join(src, "*.deb"))):
        print(f"      {os.path.basename(d)}, {os.path.getsize(d) // 1024} KiB")
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
