"""Debian unstable (sid) through a private apt configuration, for the "newest" kernel series.

The machine's own apt sources never see unstable: a later `apt-get install` could otherwise
pull unstable packages into the machine. Instead CACHE/apt-unstable/ holds a sources list
with only `unstable main` (on the mirror the machine's entries use), its own package lists
and archive cache, and an apt.conf that points apt there; commands run with APT_CONFIG set
to it. The dpkg status is /dev/null: nothing is ever installed through it.

The lists are fetched when missing or a day old (about 11 MB; apt's own list mtimes are the
archive's publication times, so the age is kept in a stamp file of our own), and once more
when a download finds the resolved version gone from the mirror (sid drops superseded kernels
within days). Between refreshes the resolution is memoised like the other series'.
"""
import os
import re
import subprocess
import time

SUITE = "unstable"


def apt_dir(cache):
    return os.path.join(cache, "apt-unstable")


def env(cache, mirror, keyring):
    """Write the private configuration (idempotent); returns an environment for apt commands."""
    d = apt_dir(cache)
    for sub in ("lists/partial", "archives/partial", "sources.list.d", "preferences.d"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    signed = f" [signed-by={keyring}]" if os.path.exists(keyring) else ""
    files = {
        "sources.list": f"deb{signed} {mirror} {SUITE} main\n",
        "apt.conf": "".join(f'{k} "{v}";\n' for k, v in (
            ("Dir::Etc::SourceList", f"{d}/sources.list"),
            ("Dir::Etc::SourceParts", f"{d}/sources.list.d"),
            ("Dir::Etc::Preferences", f"{d}/preferences"),
            ("Dir::Etc::PreferencesParts", f"{d}/preferences.d"),
            ("Dir::State::Lists", f"{d}/lists"),
            ("Dir::State::status", "/dev/null"),
            ("Dir::Cache", d),
            ("Dir::Cache::pkgcache", ""),  # no binary caches to go stale or race on
            ("Dir::Cache::srcpkgcache", ""),
            ("Acquire::Languages", "none"),
            ("APT::Architecture", "amd64"),
            ("APT::Sandbox::User", "root"))),
    }
    for name, text in files.items():
        p = os.path.join(d, name)
        if not os.path.exists(p) or open(p).read() != text:
            with open(p + ".tmp", "w") as f:
                f.write(text)
            os.replace(p + ".tmp", p)
    return dict(os.environ, APT_CONFIG=os.path.join(d, "apt.conf"))


MAX_AGE_S = 24 * 3600


def _stamp(cache):
    return os.path.join(apt_dir(cache), "updated")


def lists_dir(cache):
    return os.path.join(apt_dir(cache), "lists")


def stale(cache):
    """True if the private lists were never fetched or were fetched over a day ago."""
    try:
        return time.time() - os.stat(_stamp(cache)).st_mtime > MAX_AGE_S
    except FileNotFoundError:
        return True


def update(cache, apt_env, log):
    log(f"apt-get update ({SUITE}, private lists in {apt_dir(cache)})")
    subprocess.run(["apt-get", "-q", "update"], env=apt_env, check=True, text=True,
                   stdout=subprocess.DEVNULL)
    with open(_stamp(cache), "w"):
        pass  # its mtime is when the lists were last fetched


def resolve(apt_env):
    """(package, version): the linux-image-<release> that unstable's linux-image-amd64 needs."""
    out = subprocess.run(["apt-cache", "show", "linux-image-amd64"], env=apt_env, text=True,
                         capture_output=True).stdout
    m = re.search(r"^Depends:.*?(linux-image-\S+-amd64) \(= ([^)]+)\)", out, re.M)
    return (m.group(1), m.group(2)) if m else None
