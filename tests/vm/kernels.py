#!/usr/bin/env python3
"""Fetch and prepare the Debian kernels the VM tests boot.

ensure(series) -> Kernel, for series "6.1" (bookworm's default kernel), "6.12"
(bookworm-backports) and "newest" (what Debian unstable's linux-image-amd64 depends on, 7.2
in November 2026; through a private apt configuration, see sid.py). The first call downloads
the linux-image .deb (and the linux-binary/-modules/-base packages it depends on, where the
newer packaging splits the kernel) with apt-get download, unpacks them, runs depmod and
extracts the uncompressed vmlinux from the bzImage; later calls return the cached result.
Versions are resolved from apt at run time and the cache is keyed by package version, so a
new Debian upload is picked up by itself.

CLI: python3 tests/vm/kernels.py 6.12 [6.1 newest ...]   (prints the prepared paths)
Cache: ${RECLAIMD_VM_CACHE:-/var/cache/reclaimd-vm}/kernels/
"""
import bz2
import contextlib
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sid  # noqa: E402

SUITE = "bookworm"  # package names (+deb12) and suites below are bookworm's
SERIES = ("6.1", "6.12", "newest")
OWN_SOURCES = "/etc/apt/sources.list.d/reclaimd-bookworm-backports.sources"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class Kernel(NamedTuple):
    series: str    # "6.1", "6.12" or "newest"
    package: str   # e.g. linux-image-6.12.95+deb12-amd64
    version: str   # Debian package version
    release: str   # uname -r of the guest, e.g. 6.12.95+deb12-amd64
    vmlinux: str   # uncompressed ELF kernel, booted directly through QEMU's PVH entry
    modules: str   # the unpacked /lib/modules/<release> tree, with modules.dep
    config: str    # the kernel's config file (to tell built-in from module)


def log(msg):
    print(f"kernels: {msg}", file=sys.stderr, flush=True)


def cache_dir():
    d = os.environ.get("RECLAIMD_VM_CACHE", "/var/cache/reclaimd-vm")
    os.makedirs(d, exist_ok=True)
    return d


@contextlib.contextmanager
def locked(name):
    """Exclusive lock on CACHE/<name>.lock: two test processes never prepare the same thing."""
    with open(os.path.join(cache_dir(), name + ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, **kw)


# ---- apt sources -------------------------------------------------------------------------

def _source_entries():
    """Yield (uris, suites, components, signed_by) of every enabled deb entry."""
    paths = ["/etc/apt/sources.list"]
    d = "/etc/apt/sources.list.d"
    if os.path.isdir(d):
        paths += [os.path.join(d, n) for n in sorted(os.listdir(d))]
    for p in paths:
        if not os.path.isfile(p):
            continue
        text = open(p, errors="replace").read()
        if p.endswith(".sources"):
            for stanza in re.split(r"\n\s*\n", text):
                f = {}
                for line in stanza.splitlines():
                    m = re.match(r"([A-Za-z-]+):\s*(.*)", line)
                    if m and not line.startswith("#"):
                        f[m.group(1).lower()] = m.group(2).split()
                if "deb" in f.get("types", []) and f.get("enabled", ["yes"])[0] != "no":
                    yield (f.get("uris", []), f.get("suites", []), f.get("components", []),
                           (f.get("signed-by") or [None])[0])
        elif p.endswith(".list") or p == "/etc/apt/sources.list":
            for line in text.splitlines():
                w = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
                if len(w) >= 4 and w[0] == "deb":
                    yield ([w[1]], [w[2]], w[3:], None)


def debian_mirror():
    """(mirror, keyring) of the machine's main Debian archive entry, else the defaults."""
    for uris, suites, _, signed_by in _source_entries():
        if SUITE in suites and uris:
            return uris[0], signed_by or DEFAULT_KEYRING
    return DEFAULT_MIRROR, DEFAULT_KEYRING


def ensure_backports():
    """Make sure apt knows bookworm-backports main; returns True if a sources file was added."""
    for uris, suites, comps, signed_by in _source_entries():
        if f"{SUITE}-backports" in suites and "main" in comps:
            return False
    mirror, keyring = debian_mirror()
    text = (f"# Added by reclaimd tests/vm/kernels.py for the 6.12 test kernel.\n"
            f"Types: deb\nURIs: {mirror}\nSuites: {SUITE}-backports\nComponents: main\n")
    if os.path.exists(keyring):
        text += f"Signed-By: {keyring}\n"
    log(f"adding {OWN_SOURCES} ({mirror} {SUITE}-backports main)")
    with open(OWN_SOURCES, "w") as f:
        f.write(text)
    return True


def apt_update():
    log("apt-get update")
    run(["apt-get", "-q", "update"], stdout=subprocess.DEVNULL)


# ---- version resolution --------------------------------------------------------------------

def _newest(versions):
    best = None
    for v in versions:
        if best is None or subprocess.run(
                ["dpkg", "--compare-versions", v, "gt", best]).returncode == 0:
            best = v
    return best


def _resolve_from_apt(series):
    """(package, version) from the apt lists, or None if they have no candidate."""
    if series == "6.1":
        # The 6.1.0-N-amd64 image that (some version of) linux-image-amd64 depends on.
        out = subprocess.run(["apt-cache", "show", "linux-image-amd64"], text=True,
                             capture_output=True).stdout
        found = {}
        for m in re.finditer(r"^Depends:.*?(linux-image-6\.1\.0-\d+-amd64) \(= ([^)]+)\)",
                             out, re.M):
            found[m.group(2)] = m.group(1)
        v = _newest(found)
        return (found[v], v) if v else None
    # 6.12: newest linux-image-6.12.N+deb12-amd64 that bookworm-backports carries.
    names = subprocess.run(["apt-cache", "pkgnames", "linux-image-6.12."], text=True,
                           capture_output=True).stdout.split()
    names = [n for n in names if re.fullmatch(r"linux-image-6\.12\.\d+\+deb12-amd64", n)]
    if not names:
        return None
    out = subprocess.run(["apt-cache", "madison"] + names, text=True,
                         capture_output=True).stdout
    found = {}
    for line in out.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) == 3 and f" {SUITE}-backports/" in f" {f[2]}":
            found[f[1]] = f[0]
    v = _newest(found)
    return (found[v], v) if v else None


def _lists_stamp(series):
    """Changes whenever apt's package lists or sources change: reuse a resolution until then."""
    dirs = ((sid.lists_dir(cache_dir()),) if series == "newest"
            else ("/var/lib/apt/lists", "/etc/apt/sources.list.d"))
    h = hashlib.sha256()
    for d in dirs:
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            st = os.stat(os.path.join(d, n))
            h.update(f"{n} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def apt_env(series):
    """Environment for apt commands about series (None: the machine's own configuration)."""
    return sid.env(cache_dir(), *debian_mirror()) if series == "newest" else None


def _resolve_newest(refresh):
    env = apt_env("newest")
    if refresh or sid.stale(cache_dir()):
        sid.update(cache_dir(), env, log)
    return sid.resolve(env)


def resolve(series, refresh=False):
    """(package, version) to use for series; call with the kernels lock held.

    refresh: fetch the lists first (the memoised version could not be downloaded).
    """
    path = os.path.join(cache_dir(), "resolved.json")
    memo = json.load(open(path)) if os.path.exists(path) else {}
    if series == "newest":
        if not refresh and not sid.stale(cache_dir()) and \
                memo.get(series, {}).get("stamp") == _lists_stamp(series):
            return memo[series]["package"], memo[series]["version"]
        got = _resolve_newest(refresh)
    else:
        if not refresh and memo.get(series, {}).get("stamp") == _lists_stamp(series):
            return memo[series]["package"], memo[series]["version"]
        updated = series == "6.12" and ensure_backports()
        if updated or refresh:
            apt_update()
        got = _resolve_from_apt(series)
        if got is None and not (updated or refresh):  # fresh machine, empty or stale lists
            apt_update()
            got = _resolve_from_apt(series)
    if got is None:
        raise RuntimeError(f"no Debian package found for kernel series {series}")
    memo[series] = {"stamp": _lists_stamp(series), "package": got[0], "version": got[1]}
    _write_json(path, memo)
    return got


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


# ---- preparing one kernel ------------------------------------------------------------------

def extract_vmlinux(bzimage, out_path):
    """Decompress the kernel payload of a bzImage into an ELF file; returns the compressor."""
    data = open(bzimage, "rb").read()
    if data[0x202:0x206] != b"HdrS":
        raise RuntimeError(f"{bzimage}: not a bzImage")
    setup_sects = data[0x1F1] or 4
    offset, length = struct.unpack_from("<II", data, 0x248)  # payload_offset, payload_length
    start = (setup_sects + 1) * 512 + offset
    payload = data[start:start + length]
    # Every compressor the kernel uses ends the payload with the uncompressed size (gzip's
    # trailer holds it; the others get it appended by size_append), so strip it for the
    # command-line tools, which would take it for a truncated next frame.
    size = struct.unpack("<I", payload[-4:])[0]
    if payload.startswith(b"\xfd7zXZ\x00"):
        kind, out = "xz", lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(payload)
    elif payload.startswith(b"\x28\xb5\x2f\xfd"):
        kind, out = "zstd", _tool(["zstd", "-dcq"], payload[:-4])
    elif payload.startswith(b"\x1f\x8b"):
        kind, out = "gzip", zlib.decompressobj(31).decompress(payload)
    elif payload.startswith(b"\x02\x21\x4c\x18"):
        kind, out = "lz4", _tool(["lz4", "-dcq"], payload[:-4])
    elif payload.startswith(b"BZh"):
        kind, out = "bzip2", bz2.BZ2Decompressor().decompress(payload)
    elif payload.startswith(b"\x5d\x00\x00"):
        kind, out = "lzma", lzma.LZMADecompressor(lzma.FORMAT_ALONE).decompress(payload)
    else:
        raise RuntimeError(f"{bzimage}: unknown payload compression {payload[:6].hex()}")
    if not out.startswith(b"\x7fELF") or len(out) != size:
        raise RuntimeError(f"{bzimage}: {kind} payload did not give a {size}-byte ELF")
    with open(out_path + ".tmp", "wb") as f:
        f.write(out)
    os.replace(out_path + ".tmp", out_path)
    return kind


def _tool(cmd, data):
    return subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True).stdout


def _download(series, package, version, dest):
    """apt-get download the package and the same-version packages named after its release.

    bookworm's linux-image-<release> holds the whole kernel. From Debian 14 (unstable today)
    it is a meta package depending on linux-binary-<release> (the bzImage, at
    /usr/lib/modules/<release>/vmlinuz), linux-modules-<release> and linux-base-<release>
    (config, System.map, modules.builtin): those come along.
    """
    env = apt_env(series)
    release = package[len("linux-image-"):]
    out = subprocess.run(["apt-cache", "show", f"{package}={version}"], env=env, text=True,
                         capture_output=True, check=True).stdout
    deps = re.search(r"^Depends: (.*)$", out, re.M)
    names = [package] + [m.group(1) for m in re.finditer(
        r"(linux-[a-z]+-" + re.escape(release) + r") \(= " + re.escape(version) + r"\)",
        deps.group(1) if deps else "")]
    log(f"downloading {', '.join(names)} ({version})")
    # Root downloads into a root-owned cache dir; apt's _apt sandbox user could not write there.
    run(["apt-get", "-q", "download", "-o", "APT::Sandbox::User=root"]
        + [f"{n}={version}" for n in names], cwd=dest, stdout=subprocess.DEVNULL, env=env)
    return [os.path.join(dest, n) for n in sorted(os.listdir(dest)) if n.endswith(".deb")]


def _first(root, *candidates):
    found = [rel for rel in candidates if os.path.exists(os.path.join(root, rel))]
    if not found:
        raise RuntimeError(f"none of {', '.join(candidates)} in the unpacked kernel")
    return found[0]


def _prepare(series, package, version):
    """Download, unpack, depmod and extract into CACHE/kernels/<package>_<version>."""
    base = os.path.join(cache_dir(), "kernels")
    final = os.path.join(base, f"{package}_{version}")
    tmp = final + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    root = os.path.join(tmp, "root")
    for deb in _download(series, package, version, tmp):
        run(["dpkg", "-x", deb, root])
        os.unlink(deb)  # ~100 MiB we never need again
    release = package[len("linux-image-"):]
    mod_rel = _first(root, f"lib/modules/{release}", f"usr/lib/modules/{release}")
    if mod_rel.startswith("usr/") and not os.path.exists(os.path.join(root, "lib")):
        os.symlink("usr/lib", os.path.join(root, "lib"))  # depmod -b looks in BASE/lib/modules
    run(["depmod", "-b", root, release])  # the package ships no modules.dep
    kind = extract_vmlinux(os.path.join(root, _first(root, f"boot/vmlinuz-{release}",
                                                     f"{mod_rel}/vmlinuz")),
                           os.path.join(tmp, "vmlinux"))
    log(f"extracted vmlinux ({kind}) for {release}")
    config = _first(root, f"boot/config-{release}", f"{mod_rel}/config")
    k = Kernel(series, package, version, release, os.path.join(final, "vmlinux"),
               os.path.join(final, "root", mod_rel), os.path.join(final, "root", config))
    _write_json(os.path.join(tmp, "kernel.json"), k._asdict())
    shutil.rmtree(final, ignore_errors=True)  # a leftover without kernel.json
    os.replace(tmp, final)
    _drop_other_versions(base, final, series)
    return k


def _drop_other_versions(base, keep, series):
    """Keep only the newest version of each series: an unpacked kernel is 0.2-0.6 GiB."""
    for n in os.listdir(base):
        other = os.path.join(base, n)
        if other != keep and os.path.isdir(other):
            try:
                if json.load(open(os.path.join(other, "kernel.json")))["series"] == series:
                    shutil.rmtree(other, ignore_errors=True)
            except (OSError, ValueError, KeyError):
                pass


def _cached(package, version):
    p = os.path.join(cache_dir(), "kernels", f"{package}_{version}", "kernel.json")
    return Kernel(**json.load(open(p))) if os.path.exists(p) else None


def _newest_cached(series):
    base = os.path.join(cache_dir(), "kernels")
    for n in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        p = os.path.join(base, n, "kernel.json")
        if os.path.exists(p) and json.load(open(p))["series"] == series:
            return Kernel(**json.load(open(p)))
    return None


def ensure(series):
    """Return the prepared Kernel for series (one of SERIES), preparing it on first use.

    Raises RuntimeError or subprocess.CalledProcessError when the kernel cannot be prepared.
    If apt cannot be reached but an older version is cached, that one is used with a warning.
    A download that fails (the mirror dropped the version the lists named) is retried once
    after fetching the lists again.
    """
    if series not in SERIES:
        raise ValueError(f"unknown kernel series {series!r}; known: {', '.join(SERIES)}")
    with locked("kernels"):
        try:
            package, version = resolve(series)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            k = _newest_cached(series)
            if k is None:
                raise
            log(f"warning: cannot resolve {series} from apt ({e}); using cached {k.version}")
            return k
        k = _cached(package, version)
        if k:
            return k
        try:
            return _prepare(series, package, version)
        except subprocess.CalledProcessError as e:
            log(f"preparing {package}={version} failed ({e}); fetching the lists again")
            package, version = resolve(series, refresh=True)
            return _cached(package, version) or _prepare(series, package, version)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    for series in argv:
        k = ensure(series)
        for field, value in k._asdict().items():
            print(f"{field}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
