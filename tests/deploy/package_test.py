#!/usr/bin/env python3
"""The Debian package, for real on this machine: cpack builds it, dpkg installs it, the installed
files are checked and used, then it is removed and purged and nothing may be left behind.

Leaves the machine as it found it; a reclaimd package left by an interrupted earlier run is
purged first (this test owns the package name on a test machine).

Usage: package_test.py --build-dir BUILD
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
INSTALLED = {
    "/usr/sbin/reclaimd": "the binary",
    "/lib/systemd/system/reclaimd.service": "the unit",
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
MASK = "/etc/systemd/system/reclaimd.service"
PROBE_KEYS = ["cgroup2_root", "memory_controller", "memory_reclaim", "swappiness_key", "swap_active", "psi",
              "compact_memory", "drop_caches", "requested_mode", "effective_mode", "reason"]


def check_lintian(c, deb):
    """lintian on the .deb: no error and no warning (information tags are printed)."""
    if not c.ok(shutil.which("lintian"), "lintian is installed (tests/packages.txt)"):
        return
    r = run(["lintian", "--display-info", "--no-tag-display-limit", deb])
    tags = [line for line in r.stdout.splitlines() if re.match(r"^[EWIXPON]: ", line)]
    bad = [line for line in tags if line[0] in "EW"]
    c.equal(bad, [], "lintian: no error, no warning")
    for line in tags:
        if line[0] not in "EW":
            print(f"      {line}")
    c.ok(r.returncode == 0 or bad, "lintian ran", r.stderr)


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
    c.equal(open("/usr/share/doc/reclaimd/copyright").read(), open(os.path.join(REPO, "deploy", "debian", "copyright")).read(),
            "the copyright file is deploy/debian/copyright")
    license_text = open(os.path.join(REPO, "LICENSE")).read()
    license_text = " ".join(license_text[license_text.index("Permission is hereby granted"):].split())
    copyright_text = " ".join(w for w in open("/usr/share/doc/reclaimd/copyright").read().split() if w != ".")
    c.ok(license_text in copyright_text, "the copyright file carries LICENSE's terms (MIT: Expat)")
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout
    c.ok(re.search(r"\blibc6\b", depends) and re.search(r"libyaml-cpp", depends),
         "Depends: comes from dpkg-shlibdeps (libc6, libyaml-cpp...)", depends)

    version = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
    r = run(["dpkg-parsechangelog", "-l", os.path.join(REPO, "deploy", "debian", "changelog"), "-S", "Version"])
    c.equal(r.stdout.strip(), version, "deploy/debian/changelog's latest entry is the package's version")
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
    r = run(["systemd-analyze", "verify", "/lib/systemd/system/reclaimd.service"])
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
    c.equal(sorted(got.get("reclaimd ", "").split()), ["check-config", "probe", "run", "status"],
            "completion offers the subcommands")
    c.equal(sorted(got.get("reclaimd --log-level ", "").split()), ["debug", "error", "info", "off", "trace", "warn"],
            "completion offers the log levels")
    c.equal(sorted(got.get("reclaimd run --metr", "").split()), ["--metrics-file", "--metrics-listen"],
            "completion offers run's metrics options")
    c.equal(sorted(got.get("reclaimd status --", "").split()), ["--help", "--json", "--socket"],
            "completion offers status's options")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build-dir", required=True)
    a = p.parse_args()
    require_root("package test")
    c = Checks("Debian package")
    if dpkg_status() != "not installed":
        print(f"note: a {PKG} package is here already ({dpkg_status()}); purging it first")
        run(["dpkg", "-P", PKG], check=True)

    out = tempfile.mkdtemp(prefix="reclaimd-deb-")
    try:
        r = run(["cpack", "-G", "DEB", "-B", out, "--config", os.path.join(a.build_dir, "CPackConfig.cmake")])
        debs = glob.glob(os.path.join(out, "*.deb"))
        if not c.ok(r.returncode == 0 and len(debs) == 1, "cpack -G DEB builds one .deb", r.stdout + r.stderr):
            return c.done()
        deb = debs[0]
        print(f"      {os.path.basename(deb)}, {os.path.getsize(deb) // 1024} KiB")
        check_lintian(c, deb)
        check_hardening(c, deb)

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
        c.equal(os.path.realpath(MASK) if os.path.islink(MASK) else None, "/dev/null",
                "dpkg -r masks the unit (deb-systemd-helper): the leftover enablement cannot start it")
        for path, what in INSTALLED.items():
            if path.startswith("/etc/"):
                c.ok(os.path.isfile(path), f"dpkg -r keeps {what}")
            else:
                c.ok(not os.path.exists(path), f"dpkg -r removes {what}")
        r = run(["dpkg", "-P", PKG])
        c.ok(r.returncode == 0, "dpkg -P", r.stdout + r.stderr)
        c.equal(dpkg_status(), "not installed", "after dpkg -P dpkg knows nothing of reclaimd")
        c.ok(not os.path.exists("/etc/reclaimd"), "dpkg -P removes /etc/reclaimd, changed conffile included")
        leftovers = [p for p in list(INSTALLED) + OWNED_DIRS + [WANTS, MASK] if os.path.lexists(p)]
        c.equal(leftovers, [], "no installed file, enablement link or mask is left")
    finally:
        if dpkg_status() != "not installed":
            run(["dpkg", "-P", PKG])
        shutil.rmtree(out)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
