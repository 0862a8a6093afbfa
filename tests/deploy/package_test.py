#!/usr/bin/env python3
"""The Debian package, for real on this machine: what deb_build.py built (the source package and
the .deb of `dpkg-buildpackage -us -uc -b`) is linted, dpkg installs the .deb, the installed files
are checked and used, then it is removed and purged and nothing may be left behind.

Leaves the machine as it found it; a reclaimd package left by an interrupted earlier run is
purged first (this test owns the package name on a test machine).

Usage: package_test.py --deb-dir BUILD/deb/src
"""
import argparse
import glob
import os
import re
import shutil
import sys
import tempfile

from common import REPO, Checks, require_root, run

PKG = "reclaimd"
# Where this system's systemd takes packaged units: /lib/systemd/system on bookworm,
# /usr/lib/systemd/system from trixie on (where /lib is only an alias of /usr/lib).
UNIT_DIR = run(["pkg-config", "--variable=systemdsystemunitdir", "systemd"]).stdout.strip() or "/lib/systemd/system"
UNIT = UNIT_DIR + "/reclaimd.service"
INSTALLED = {
    "/usr/sbin/reclaimd": "the binary",
    UNIT: "the unit",
    "/usr/libexec/reclaimd/wsl-start": "the WSL start script",
    "/etc/reclaimd/policy.yaml": "the policy (a conffile)",
    "/usr/share/man/man8/reclaimd.8.gz": "the man page",
    "/usr/share/bash-completion/completions/reclaimd": "bash completion",
    "/usr/share/zsh/vendor-completions/_reclaimd": "zsh completion",
    "/etc/default/reclaimd": "RECLAIMD_OPTIONS for the unit (a conffile)",
    "/usr/share/doc/reclaimd/copyright": "the copyright file",
    "/usr/share/doc/reclaimd/changelog.gz": "the changelog",
    "/usr/share/doc/reclaimd/examples/metrics-http.conf": "the HTTP metrics drop-in",
    "/usr/share/doc/reclaimd/examples/metrics-textfile.conf": "the textfile metrics drop-in",
    "/usr/share/doc/reclaimd/examples/psi-triggers.conf": "the PSI triggers drop-in",
}
# Directories the package owns: they go with it on purge.
OWNED_DIRS = ["/etc/reclaimd/policy.d"]
WANTS = "/etc/systemd/system/multi-user.target.wants/reclaimd.service"
PROBE_KEYS = ["cgroup2_root", "memory_controller", "memory_reclaim", "swappiness_key", "swap_active", "page_size",
              "psi", "compact_memory", "drop_caches", "requested_mode", "effective_mode", "reason"]


def check_lintian(c, what, path):
    """lintian on a package (the .changes: the .deb and its debug symbols; the .dsc: the source):
    no error and no warning, pedantic tags printed."""
    if not c.ok(shutil.which("lintian"), "lintian is installed (tests/packages.txt)"):
        return
    r = run(["lintian", "--display-info", "--pedantic", "--tag-display-limit", "0", path])
    tags = [line for line in r.stdout.splitlines() if re.match(r"^[EWIXPON]: ", line)]
    bad = [line for line in tags if line[0] in "EW"]
    c.equal(bad, [], f"lintian on the {what}: no error, no warning")
    for line in tags:
        if line[0] not in "EW":
            print(f"      {line}")
    c.ok(r.returncode == 0 or bad, f"lintian ran on the {what}", r.stderr)


def check_source(c):
    """debian/ as a Debian developer reads it: debhelper 13, no root needed to build, the build
    dependencies the plain build's list names, the unit where systemd.pc says."""
    control = open(os.path.join(REPO, "debian", "control")).read()
    c.ok(re.search(r"debhelper-compat \(= 13\)", control), "Build-Depends: debhelper-compat (= 13)")
    c.ok(re.search(r"^Rules-Requires-Root: no$", control, re.M), "Rules-Requires-Root: no")
    depends = re.search(r"^Build-Depends:(.*?)^\S", control, re.M | re.S).group(1)
    names = {d.split()[0] for d in re.split(r"[,|]", re.sub(r"#.*", "", depends)) if d.strip()}
    listed = {w.strip() for w in open(os.path.join(REPO, "deploy", "build-packages.txt"))
              if w.strip() and not w.startswith("#")}
    essential = {"g++", "make"}  # build-essential, which policy forbids naming
    c.equal(sorted(listed - essential - names), [], "every package deploy/build-packages.txt names is a Build-Depends")
    c.equal(sorted(names - listed - {"debhelper-compat", "systemd-dev", "systemd"}), [],
            "every Build-Depends is in deploy/build-packages.txt")


def check_layout(c, deb):
    """Trixie's merged /usr: nothing in /bin, /sbin or /lib but the unit, and that only where
    this system's systemd.pc puts packaged units."""
    files = [line.split()[-1].lstrip(".") for line in run(["dpkg-deb", "-c", deb], check=True).stdout.splitlines()]
    files = [f for f in files if not f.endswith("/")]
    outside = [f for f in files if re.match(r"^/(bin|sbin|lib)/", f) and f != UNIT]
    c.equal(outside, [], "no file in /bin, /sbin or /lib (the unit aside, where systemd.pc says)")
    c.ok(UNIT in files, f"the unit is in {UNIT_DIR}", "\n".join(files))


def check_hardening(c, deb):
    """The shipped binary: Debian's hardening flags (dpkg-buildflags), stripped as dh_strip does."""
    tmp = tempfile.mkdtemp(prefix="reclaimd-deb-x-")
    try:
        run(["dpkg-deb", "-x", deb, tmp], check=True)
        binary = os.path.join(tmp, "usr", "sbin", "reclaimd")
        dyn = run(["readelf", "-d", "-W", binary]).stdout
        c.ok(re.search(r"\(FLAGS\).*\bBIND_NOW\b", dyn) or re.search(r"\(FLAGS_1\).*\bNOW\b", dyn),
             "bind now (-z now)", dyn)
        c.ok("GNU_RELRO" in run(["readelf", "-l", "-W", binary]).stdout, "RELRO")
        syms = run(["readelf", "--dyn-syms", "-W", binary]).stdout
        c.ok(re.search(r"__\w+_chk@", syms), "fortified functions (_FORTIFY_SOURCE)", syms[-2000:])
        c.ok(re.search(r"__stack_chk_fail@", syms), "stack protector")
        sections = run(["readelf", "-S", "-W", binary]).stdout
        c.ok(not re.search(r"\s\.(comment|note|symtab)\s", sections), "stripped: no .comment, .note or .symtab",
             sections)
    finally:
        shutil.rmtree(tmp)


def dpkg_status():
    r = run(["dpkg-query", "-W", "-f=${Status}", PKG])
    return r.stdout.strip() if r.returncode == 0 else "not installed"


def check_installed(c, deb):
    for path, what in INSTALLED.items():
        c.ok(os.path.isfile(path), f"installed: {what} at {path}")
    c.ok(os.access("/usr/sbin/reclaimd", os.X_OK), "the binary is executable")
    c.equal(open("/etc/reclaimd/policy.yaml").read(), open(os.path.join(REPO, "deploy", "policy.yaml")).read(),
            "the installed policy is deploy/policy.yaml")
    conffiles = run(["dpkg-query", "-W", "-f=${Conffiles}", PKG]).stdout
    for conffile in ("/etc/reclaimd/policy.yaml", "/etc/default/reclaimd"):
        c.ok(conffile in conffiles, f"dpkg lists {conffile} as a conffile", conffiles)
    owned = run(["dpkg-query", "-L", PKG]).stdout.split()
    for d in OWNED_DIRS:
        c.ok(os.path.isdir(d) and d in owned, f"the package owns the directory {d}", "\n".join(owned))
    c.equal(open("/usr/share/doc/reclaimd/copyright").read(), open(os.path.join(REPO, "debian", "copyright")).read(),
            "the copyright file is debian/copyright")
    license_text = open(os.path.join(REPO, "LICENSE")).read()
    license_text = " ".join(license_text[license_text.index("Permission is hereby granted"):].split())
    copyright_text = " ".join(w for w in open("/usr/share/doc/reclaimd/copyright").read().split() if w != ".")
    c.ok(license_text in copyright_text, "the copyright file carries LICENSE's terms (MIT: Expat)")
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    c.ok(re.search(r"\blibc6\b", depends) and re.search(r"libyaml-cpp", depends),
         "Depends: comes from dpkg-shlibdeps (libc6, libyaml-cpp...)", depends)

    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    r = run(["dpkg-parsechangelog", "-l", os.path.join(REPO, "debian", "changelog"), "-S", "Version"])
    c.equal(r.stdout.strip(), version, "debian/changelog's latest entry is the package's version")
    r = run(["/usr/sbin/reclaimd", "--version"])
    c.ok(r.returncode == 0 and version in r.stdout, f"reclaimd --version says {version}", r.stdout + r.stderr)

    # This machine's memory controller may be on cgroup v1: 69 (nothing can reclaim) is fine.
    r = run(["/usr/sbin/reclaimd", "probe", "--config", "/etc/reclaimd/policy.yaml"])
    c.ok(r.returncode in (0, 69), f"reclaimd probe exits 0 or 69 (got {r.returncode})", r.stderr)
    keys = [line.split(":", 1)[0] for line in r.stdout.splitlines() if ":" in line]
    missing = [k for k in PROBE_KEYS if k not in keys]
    c.equal(missing, [], "reclaimd probe prints every probe key of the README")
    print("      " + r.stdout.rstrip().replace("\n", "\n      "))

    r = run(["/usr/sbin/reclaimd", "check-config", "/etc/reclaimd/policy.yaml"])
    c.ok(r.returncode == 0 and "valid" in r.stdout, "reclaimd check-config /etc/reclaimd/policy.yaml",
         r.stdout + r.stderr)

    r = run(["man", "-w", "reclaimd"])
    c.equal(r.stdout.strip(), "/usr/share/man/man8/reclaimd.8.gz", "man -w reclaimd finds the page")
    r = run(["man", "--warnings", "-l", "/usr/share/man/man8/reclaimd.8.gz"],
            env=dict(os.environ, MANPAGER="cat", MANWIDTH="80", LC_ALL="C.UTF-8"))
    c.ok(r.returncode == 0 and not r.stderr.strip(), "man -l renders the page without warnings", r.stderr)
    for heading in ("SYNOPSIS", "COMMANDS", "OPTIONS", "POLICY", "SIGNALS", "EXIT STATUS", "FILES"):
        c.ok(re.search(rf"^{heading}$", r.stdout, re.M), f"man page has {heading}")

    completion = "/usr/share/bash-completion/completions/reclaimd"
    r = run(["bash", "-n", completion])
    c.ok(r.returncode == 0, "bash -n accepts the completion", r.stderr)
    check_completion(c, completion)

    # The installed unit as it is, with the installed binary and man page.
    r = run(["systemd-analyze", "verify", UNIT])
    c.ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
         "systemd-analyze verify of the installed unit: no error, no warning", r.stdout + r.stderr)


def check_completion(c, completion):
    """Completes a few command lines in bash with bash-completion loaded."""
    script = f"""
source /usr/share/bash-completion/bash_completion
source {completion}
complete_line() {{
    COMP_LINE="$1"; COMP_POINT=${{#COMP_LINE}}
    read -ra COMP_WORDS <<<"$1"; [[ $1 == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=()
    _reclaimd reclaimd "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
    echo "$1=>${{COMPREPLY[*]}}"
}}
complete_line 'reclaimd '
complete_line 'reclaimd --log-level '
complete_line 'reclaimd run --metr'
complete_line 'reclaimd status --'
"""
    r = run(["bash", "-c", script])
    got = dict(line.split("=>", 1) for line in r.stdout.splitlines() if "=>" in line)
    c.equal(sorted(got.get("reclaimd ", "").split()), ["check-config", "probe", "record", "replay", "run", "status"],
            "completion offers the subcommands")
    c.equal(sorted(got.get("reclaimd --log-level ", "").split()), ["debug", "error", "info", "off", "trace", "warn"],
            "completion offers the log levels")
    c.equal(sorted(got.get("reclaimd run --metr", "").split()), ["--metrics-file", "--metrics-listen"],
            "completion offers run's metrics options")
    c.equal(sorted(got.get("reclaimd status --", "").split()), ["--help", "--json", "--socket"],
            "completion offers status's options")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--deb-dir", required=True, help="where deb_build.py left the packages")
    a = p.parse_args()
    require_root("package test")
    c = Checks("Debian package")
    debs = [d for d in glob.glob(os.path.join(a.deb_dir, "reclaimd_*.deb"))]
    changes = glob.glob(os.path.join(a.deb_dir, "reclaimd_*.changes"))
    dscs = glob.glob(os.path.join(a.deb_dir, "reclaimd_*.dsc"))
    if not c.ok(len(debs) == 1 and len(changes) == 1 and len(dscs) == 1,
                f"deploy_deb_build left one .deb, .changes and .dsc in {a.deb_dir}"):
        return c.done()
    deb = debs[0]
    print(f"      {os.path.basename(deb)}, {os.path.getsize(deb) // 1024} KiB")
    check_source(c)
    check_lintian(c, "source package", dscs[0])
    check_lintian(c, "binary packages", changes[0])
    check_layout(c, deb)
    check_hardening(c, deb)
    if dpkg_status() != "not installed":
        print(f"note: a {PKG} package is here already ({dpkg_status()}); purging it first")
        run(["dpkg", "-P", PKG], check=True)
    try:
        check_life_cycle(c, deb)
    finally:
        if dpkg_status() != "not installed":
            run(["dpkg", "-P", PKG])
    return c.done()


def check_life_cycle(c, deb):
    """Install, enable, upgrade, remove, purge, as an administrator does."""
    r = run(["dpkg", "-i", deb])
    c.ok(r.returncode == 0, "dpkg -i", r.stdout + r.stderr)
    c.equal(dpkg_status(), "install ok installed", "dpkg says installed")
    check_installed(c, deb)

    c.ok(not os.path.exists(WANTS), "the install does not enable the service")
    # The admin enables it; a second dpkg -i runs the upgrade paths of the maintainer scripts.
    r = run(["systemctl", "enable", "reclaimd.service"])
    c.ok(os.path.islink(WANTS), "systemctl enable reclaimd", r.stdout + r.stderr)
    r = run(["dpkg", "-i", deb])
    c.ok(r.returncode == 0 and "systemctl" not in r.stderr, "dpkg -i again (upgrade path), quietly",
         r.stdout + r.stderr)
    c.ok(os.path.islink(WANTS), "an upgrade keeps the service enabled")

    # A local change to the conffile must survive removal and go on purge.
    with open("/etc/reclaimd/policy.yaml", "a") as f:
        f.write("# a local change\n")
    r = run(["dpkg", "-r", PKG])
    c.ok(r.returncode == 0, "dpkg -r", r.stdout + r.stderr)
    c.equal(dpkg_status(), "deinstall ok config-files", "after dpkg -r only the conffiles remain")
    for path, what in INSTALLED.items():
        if path.startswith("/etc/"):
            c.ok(os.path.isfile(path), f"dpkg -r keeps {what}")
        else:
            c.ok(not os.path.exists(path), f"dpkg -r removes {what}")
    r = run(["dpkg", "-P", PKG])
    c.ok(r.returncode == 0, "dpkg -P", r.stdout + r.stderr)
    c.equal(dpkg_status(), "not installed", "after dpkg -P dpkg knows nothing of reclaimd")
    c.ok(not os.path.exists("/etc/reclaimd"), "dpkg -P removes /etc/reclaimd, changed conffile included")
    leftovers = [p for p in list(INSTALLED) + OWNED_DIRS + [WANTS] if os.path.lexists(p)]
    c.equal(leftovers, [], "no installed file or enablement link is left (deb-systemd-helper purge)")


if __name__ == "__main__":
    sys.exit(main())
