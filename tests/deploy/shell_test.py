#!/usr/bin/env python3
"""Every shell script of the repository outside tests/vm/ (which the VM tests check) through
shellcheck, with no finding at any severity (style included); the zsh completion, which
shellcheck cannot read, through `zsh -n`.

A shell script: a .sh or .bash file, or a file whose #! line names sh, bash or dash
(deploy/wsl/wsl-start, .ci/run). Build trees and dot-directories other than .ci are skipped.

Usage: shell_test.py
"""
import os
import re
import shutil
import sys

from common import REPO, Checks, run

SKIP_DIRS = {os.path.join("tests", "vm")}
SHEBANG = re.compile(rb"^#!\s*\S*/(?:env\s+)?(?:ba|da)?sh\b")
# Scripts that must be found: a finder that finds nothing would pass anything.
EXPECTED = ["deploy/build-and-run.sh", "deploy/completion/reclaimd.bash", "deploy/wsl/install.sh",
            "deploy/wsl/wsl-start", "tests/run-all.sh", ".ci/run"]
ZSH = ["deploy/completion/_reclaimd"]


def shell_scripts():
    found = []
    for top, dirs, files in os.walk(REPO):
        rel_top = os.path.relpath(top, REPO)
        dirs[:] = sorted(d for d in dirs
                         if os.path.normpath(os.path.join(rel_top, d)) not in SKIP_DIRS
                         and not d.startswith("build") and (d == ".ci" or not d.startswith(".")))
        for name in sorted(files):
            path = os.path.normpath(os.path.join(rel_top, name))
            if name.endswith((".sh", ".bash")):
                found.append(path)
                continue
            with open(os.path.join(REPO, path), "rb") as f:
                if SHEBANG.match(f.readline()):
                    found.append(path)
    return found


def main():
    c = Checks("shell scripts")
    scripts = shell_scripts()
    print("      " + " ".join(scripts))
    missing = [s for s in EXPECTED if s not in scripts]
    c.equal(missing, [], "the scripts the project ships are all found")
    if c.ok(shutil.which("shellcheck"), "shellcheck is installed (tests/packages.txt)"):
        r = run(["shellcheck", "--version"])
        print("      " + " ".join(r.stdout.split()[:5]))
        r = run(["shellcheck", "--severity=style", "--format=gcc"] + scripts, cwd=REPO)
        c.ok(r.returncode == 0 and not r.stdout.strip(), f"shellcheck: no finding in {len(scripts)} scripts",
             r.stdout + r.stderr)
    if c.ok(shutil.which("zsh"), "zsh is installed (tests/packages.txt)"):
        for path in ZSH:
            r = run(["zsh", "-n", os.path.join(REPO, path)])
            c.ok(r.returncode == 0 and not r.stderr.strip(), f"zsh -n {path}", r.stderr)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
