#!/usr/bin/env python3
"""The bash and zsh completions from the source tree, driven as a user's shell drives them.

bash: _reclaimd called with COMP_WORDS, bash-completion loaded. zsh: an interactive zsh under
zpty with the completion in $fpath, a TAB typed, the offered matches captured. Both complete
`check-config FILE --explain` with cgroups from the cgroup2 mount named in a fixture
mountinfo (on hybrid hosts /sys/fs/cgroup is a tmpfs of v1 hierarchies, not the cgroup2 tree).

Usage: completion_test.py
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

from common import REPO, Checks, run

BASH = os.path.join(REPO, "deploy", "completion", "reclaimd.bash")
ZSH_DIR = os.path.join(REPO, "deploy", "completion")

BASH_DRIVER = r"""
source /usr/share/bash-completion/bash_completion
source "$1"
_reclaimd_mountinfo=$2
cd "$3"
complete_line() {
    COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
    read -ra COMP_WORDS <<<"$1"; [[ $1 == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
    _reclaimd reclaimd "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "$1=>${COMPREPLY[*]}"
}
while IFS= read -r line; do complete_line "$line"; done
"""

# An interactive zsh under zpty: compadd is wrapped to print every match it is given, and the
# completion ends the shell, so each line typed with a TAB prints its matches and exits. The
# compadd line is one line of the script, in two literals to keep within 120 columns.
ZSH_DRIVER = (r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PROMPT=''; fpath=($1 \$fpath); _reclaimd_mountinfo=$2; cd $3"
zpty -w z 'autoload -Uz compinit; compinit -u -D'
zpty -w z 'zstyle ":completion:*" list-grouped false; zstyle ":completion:*" insert-tab false'
zpty -w z 'compadd() { local -a __m; builtin compadd -O __m "$@"; """
              r"""print -rl -- "@@""M ${^__m[@]}"; builtin compadd "$@"; }'
zpty -w z 'comppostfuncs=(_capture_end); _capture_end() { print -r -- "@@""END"; exit; }'
zpty -w z "$4"$'\t'
while zpty -r z line; do
  line=${line%$'\r'}
  [[ $line == *@@M\ * ]] && print -r -- "${line#*@@M }"
  [[ $line == *@@END* ]] && break
done
zpty -d z
""")


def fixture(tmp):
    """A cgroup2 tree at tmp/unified, named by a hybrid host's mountinfo; a policy file and a
    recording."""
    cg = os.path.join(tmp, "unified")
    for d in ("system.slice/cron.service", "system.slice/ssh.service", "user.slice", "build.slice"):
        os.makedirs(os.path.join(cg, d))
    v1 = os.path.join(tmp, "v1")
    os.makedirs(os.path.join(v1, "memory", "v1-only"))
    mountinfo = os.path.join(tmp, "mountinfo")
    with open(mountinfo, "w") as f:
        f.write(f"30 22 0:27 / {v1} rw,relatime - tmpfs tmpfs rw,mode=755\n"
                f"34 30 0:31 / {v1}/memory rw,relatime - cgroup cgroup rw,memory\n"
                f"40 30 0:37 / {cg} rw,relatime - cgroup2 cgroup2 rw\n")
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    for name in ("policy.yaml", "run.rec"):
        open(os.path.join(work, name), "w").close()
    return mountinfo, work


def check_bash(c, mountinfo, work):
    lines = ["reclaimd ", "reclaimd --log-level ", "reclaimd run --metr", "reclaimd status --",
             "reclaimd record ", "reclaimd record --record-limit 64M ", "reclaimd replay ", "reclaimd replay run.rec ",
             "reclaimd check-config ", "reclaimd check-config policy.yaml --explain ",
             "reclaimd check-config policy.yaml --explain sys",
             "reclaimd check-config policy.yaml --explain system.slice/c"]
    r = run(["bash", "-c", BASH_DRIVER, "driver", BASH, mountinfo, work], input="\n".join(lines) + "\n")
    got = dict(line.split("=>", 1) for line in r.stdout.splitlines() if "=>" in line)
    c.ok(len(got) == len(lines), "bash completes every line", r.stdout + r.stderr)
    expect = {
        "reclaimd ": ["check-config", "probe", "record", "replay", "run", "status"],
        "reclaimd --log-level ": ["debug", "error", "info", "off", "trace", "warn"],
        "reclaimd run --metr": ["--metrics-file", "--metrics-listen"],
        "reclaimd status --": ["--help", "--json", "--socket"],
        # a recording is any file; --record-limit's size is skipped over
        "reclaimd record ": ["policy.yaml", "run.rec"],
        "reclaimd record --record-limit 64M ": ["policy.yaml", "run.rec"],
        "reclaimd replay ": ["policy.yaml", "run.rec"],
        "reclaimd replay run.rec ": [],
        "reclaimd check-config ": ["policy.yaml"],
        "reclaimd check-config policy.yaml --explain ": ["build.slice/", "system.slice/", "user.slice/"],
        "reclaimd check-config policy.yaml --explain sys": ["system.slice/"],
        "reclaimd check-config policy.yaml --explain system.slice/c": ["system.slice/cron.service/"],
    }
    for line, want in expect.items():
        c.equal(sorted(got.get(line, "").split()), want, f"bash: {line!r}")


def zsh_complete(mountinfo, work, line):
    r = run(["zsh", "-f", "-c", ZSH_DRIVER, "driver", ZSH_DIR, mountinfo, work, line], timeout=30)
    return sorted(set(r.stdout.split())), r


def check_zsh(c, mountinfo, work):
    if not c.ok(shutil.which("zsh"), "zsh is installed (tests/packages.txt)"):
        return
    expect = {
        "reclaimd ": ["check-config", "probe", "record", "replay", "run", "status"],
        "reclaimd --log-level=": ["debug", "error", "info", "off", "trace", "warn"],
        "reclaimd record ": ["policy.yaml", "run.rec"],
        "reclaimd replay ": ["policy.yaml", "run.rec"],
        "reclaimd run --metr": ["--metrics-file", "--metrics-listen"],
        "reclaimd status --": ["--help", "--json", "--socket"],
        "reclaimd check-config ": ["policy.yaml"],
        "reclaimd check-config policy.yaml --explain ": ["build.slice", "system.slice", "user.slice"],
        # _files also hands compadd the directory already typed.
        "reclaimd check-config policy.yaml --explain system.slice/": ["cron.service", "ssh.service", "system.slice"],
    }
    for line, want in expect.items():
        got, r = zsh_complete(mountinfo, work, line)
        c.equal(got, want, f"zsh: {line!r}") or print("      " + r.stdout[-1500:] + r.stderr[-1500:])


def help_options(binary, sub):
    """The long options `reclaimd SUB --help` lists: what a completion of SUB must offer."""
    out = run([binary, sub, "--help"]).stdout
    opts = set()
    for line in out.splitlines():
        if line.startswith("  -"):
            opts.update(re.findall(r"(?:^|,)(--[a-z][a-z-]*)", line.strip().split(" ")[0]))
    return sorted(opts)


def check_options(c, binary, mountinfo, work):
    """Each subcommand's completions offer exactly the options its --help lists."""
    lines = {sub: f"reclaimd {sub} --" for sub in ("run", "record", "replay", "probe", "status")}
    lines["check-config"] = "reclaimd check-config policy.yaml --"
    r = run(["bash", "-c", BASH_DRIVER, "driver", BASH, mountinfo, work], input="\n".join(lines.values()) + "\n")
    got = dict(line.split("=>", 1) for line in r.stdout.splitlines() if "=>" in line)
    for sub, line in lines.items():
        want = help_options(binary, sub)
        c.ok(len(want) >= 1, f"{sub} --help lists options")
        c.equal(sorted(got.get(line, "").split()), want, f"bash: {line!r} offers what {sub} --help lists")
        if shutil.which("zsh"):
            zgot, _ = zsh_complete(mountinfo, work, line)
            c.equal(zgot, want, f"zsh: {line!r} offers what {sub} --help lists")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", required=True)
    a = p.parse_args()
    c = Checks("shell completion")
    tmp = tempfile.mkdtemp(prefix="reclaimd-completion-")
    try:
        mountinfo, work = fixture(tmp)
        check_bash(c, mountinfo, work)
        check_zsh(c, mountinfo, work)
        check_options(c, os.path.realpath(a.binary), mountinfo, work)
    finally:
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
