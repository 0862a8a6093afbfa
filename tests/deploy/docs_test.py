#!/usr/bin/env python3
"""The documentation as a new user meets it (the reference tables are checked against the binary
by the unit tests, ReferenceDocsTest):

- README.md's first screen says what reclaimd does, shows a picture (an existing plot) and the
  two set-up commands, build-and-run and the whole test suite, and nothing else is a set-up
  command there; its user's guide (install, configure, operate, troubleshoot) comes before the
  reference, and the benchmark figures live in docs/benchmarks.md;
- every relative link and image in README.md, docs/ and deploy/ leads to a file that exists;
- no issue numbers or development history in the docs, the tests' and deploy/'s files and
  comments, or test names.

Usage: docs_test.py
"""
import os
import re
import sys

from common import REPO, Checks

FIRST_SCREEN = 40  # lines: what a terminal or a repository page shows before scrolling
SETUP = ["deploy/build-and-run.sh", "tests/run-all.sh"]
# Development history, spelled so that this file does not match itself.
HISTORY = re.compile("|".join([r"\bissues? ?#?\d+", r"\bissue \d+'s", "this " + "session", "before the " + "fix",
                               "after the " + "fix", "fixed the same " + "(evening|day)", r"\bPR #\d+"]), re.I)


def text_files(top, exts):
    for root, dirs, files in os.walk(os.path.join(REPO, top)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for name in files:
            if name.endswith(exts) or (not exts and "." not in name):
                yield os.path.join(root, name)


def check_readme(c):
    text = open(os.path.join(REPO, "README.md")).read()
    lines = text.splitlines()
    first = "\n".join(lines[:FIRST_SCREEN])
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    # One on the first screen; further down, the never-idle section's plot per kernel.
    c.ok(images and images[0] in first, f"README.md's first screen shows a picture ({images[:1]})")
    for image in images:
        c.ok(os.path.isfile(os.path.join(REPO, image)), f"README.md's picture {image} exists")
    for cmd in SETUP:
        c.ok(re.search(rf"^    {re.escape(cmd)}$", first, re.M), f"the first screen gives `{cmd}`")
    # A set-up command: an indented code line that runs a script of the repository or installs.
    setup = [line.strip() for line in lines
             if re.match(r"^    (\./)?(deploy|tests)/\S+\.sh\b|^    (apt-get|apt|dpkg|cmake|make) ", line)]
    c.equal(setup, SETUP, "exactly two set-up commands in README.md")
    heads = [line for line in lines if line.startswith("#")]
    order = ["## User's guide", "### Install", "### Configure", "### Operate", "### Troubleshoot", "## Reference"]
    at = [heads.index(h) if h in heads else -1 for h in order]
    c.ok(-1 not in at and at == sorted(at), "a user's guide (install, configure, operate, troubleshoot), then the "
         "reference", "\n".join(heads))
    c.ok(not re.search(r"^\|.*\| (none|gradual|dropcache) \|.*MiB", text, re.M) and
         os.path.isfile(os.path.join(REPO, "docs", "benchmarks.md")),
         "the benchmark tables are in docs/benchmarks.md, not the README")


def check_links(c):
    pages = ([os.path.join(REPO, "README.md")] + list(text_files("docs", (".md",))) +
             list(text_files("deploy", (".md",))))
    broken = []
    for page in pages:
        prose = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)  # code is not links
        prose = "\n".join(line for line in prose.splitlines() if not line.startswith("    "))
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", prose):
            if re.match(r"^[a-z]+:", target):
                continue
            if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(page), target))):
                broken.append(f"{os.path.relpath(page, REPO)}: {target}")
    c.equal(broken, [], f"every relative link in {len(pages)} pages leads somewhere")


def history_files():
    """The docs, deploy/ and debian/ whole, the tests' sources and texts (a benchmark run's
    results only by their READMEs)."""
    files = {os.path.join(REPO, "README.md")}
    for top in ("docs", "deploy", "debian"):
        files |= set(text_files(top, ()))
        files |= set(text_files(top, (".md", ".txt", ".yaml", ".conf", ".service", ".sh", ".cmake", ".8", ".bash")))
    code = (".py", ".sh", ".cpp", ".h", ".md", ".txt", ".yaml", ".cmake", ".dict")
    files |= {f for f in text_files("tests", code) if "/results/" not in f or f.endswith(".md")}
    files |= {f for f in text_files("tests", ()) if "/corpus/" not in f and "/results/" not in f}
    return sorted(f for f in files if not f.endswith("docs_test.py"))


def check_history(c):
    files = history_files()
    found = []
    for path in files:
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if HISTORY.search(line):
                found.append(f"{os.path.relpath(path, REPO)}:{n}: {line.strip()[:100]}")
    c.equal(found, [], f"no issue numbers or development history in {len(files)} files (test names included)")
    named = [os.path.relpath(os.path.join(r, f), REPO) for r, _, fs in os.walk(os.path.join(REPO, "tests"))
             for f in fs if re.search(r"issue\d", f, re.I)]
    c.equal(named, [], "no file named after an issue")


def main():
    c = Checks("documentation")
    check_readme(c)
    check_links(c)
    check_history(c)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
