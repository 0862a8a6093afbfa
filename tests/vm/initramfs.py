"""The guest's initramfs, written in Python: an uncompressed newc cpio holding static busybox,
guest/init.sh as /init with the punctuality canary it starts (canary.py), the files a test
adds (ELF files with the libraries ldd lists), the kernel modules it needs (with their
dependencies, decompressed for busybox insmod) and the environment. Used by vm.py (and
vmext.py through it).

    build_initramfs(path, kernel, script, adds=(), modules=(), env=None, data=False) -> bytes
    resolve_modules(kernel, names) -> [(name, file, optional)]
"""
import gzip
import lzma
import os
import re
import shutil
import subprocess

import canary
import kernels

HERE = os.path.dirname(os.path.abspath(__file__))

class Initramfs:
    """An uncompressed newc cpio built in memory: path -> (mode, bytes) with parents implied."""

    def __init__(self):
        self.entries = {}

    def add(self, path, data, mode=0o644):
        path = path.strip("/")
        parts = path.split("/")
        for i in range(1, len(parts)):
            self.entries.setdefault("/".join(parts[:i]), (0o040755, b""))
        self.entries[path] = (mode, data)

    def file(self, path, data, mode=0o644):
        self.add(path, data, 0o100000 | (mode & 0o7777))

    def symlink(self, path, target):
        self.add(path, target.encode(), 0o120777)

    def dir(self, path):
        self.add(path, b"", 0o040755)

    def host_file(self, src, dest):
        """Copy a host file; for a dynamic ELF also its libraries and loader (same paths)."""
        with open(src, "rb") as f:
            data = f.read()
        self.file(dest, data, os.stat(src).st_mode)
        if data[:4] == b"\x7fELF":
            for lib in elf_deps(src):
                if lib.strip("/") not in self.entries:
                    self.host_file(lib, lib)

    def write(self, path):
        with open(path, "wb") as f:
            # Sorted: a directory always comes before what it holds, as the unpacker needs.
            for ino, (name, (mode, data)) in enumerate(sorted(self.entries.items()), 1):
                _cpio_entry(f, name, mode, data, ino)
            _cpio_entry(f, "TRAILER!!!", 0, b"", 0)
            return f.tell()


def _cpio_entry(f, name, mode, data, ino):
    nlink = 2 if mode & 0o170000 == 0o040000 else 1
    fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0)
    hdr = b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
    f.write(hdr + b"\0" * (-len(hdr) % 4))
    f.write(data + b"\0" * (-len(data) % 4))


def elf_deps(path):
    """Shared libraries and loader of an ELF, as ldd lists them (empty for a static one)."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0:
        return []  # "not a dynamic executable"
    libs = []
    for line in r.stdout.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+) \(0x", line)
        if "not found" in line:
            raise RuntimeError(f"{path}: {line.strip()}")
        if m:
            libs.append(m.group(1))
    return libs


def resolve_modules(kernel, names):
    """[(name, file, optional)] in load order for names plus their dependencies.

    Built-in modules are skipped. Soft pre-dependencies (ext4 needs a crc32c driver it asks
    the crypto API for, which would call modprobe) are loaded too, as optional.
    """
    mdir = kernel.modules
    deps, by_name = {}, {}
    for line in open(os.path.join(mdir, "modules.dep")):
        mod, _, rest = line.partition(":")
        deps[mod] = rest.split()
        by_name[_modname(mod)] = mod
    builtin = {_modname(x) for x in open(os.path.join(mdir, "modules.builtin")).read().split()}
    aliases, softdeps = {}, {}
    for line in open(os.path.join(mdir, "modules.alias")):
        w = line.split()
        if len(w) == 3 and w[0] == "alias" and not any(c in w[1] for c in "*?["):
            aliases.setdefault(w[1].replace("-", "_"), []).append(w[2])
    for line in open(os.path.join(mdir, "modules.softdep")):
        w = line.split()
        if len(w) > 3 and w[0] == "softdep" and w[2] == "pre:":
            softdeps[_modname(w[1])] = [x for x in w[3:] if not x.endswith(":")]

    order, seen = [], set()

    def visit(mod, optional):
        if mod in seen:
            return
        seen.add(mod)
        for pre in softdeps.get(_modname(mod), []):
            want(pre, True)
        for d in deps[mod]:
            visit(d, optional)
        order.append((_modname(mod), os.path.join(mdir, mod), optional))

    def want(name, optional):
        n = name.replace("-", "_")
        if n in builtin:
            return
        if n in by_name:
            return visit(by_name[n], optional)
        # An alias (e.g. crypto-crc32c) may name several drivers: load all, each optional.
        alts = [a for a in aliases.get(n, []) if a.replace("-", "_") not in builtin]
        if not alts and n in aliases:
            return  # provided by a built-in driver
        if not alts:
            raise RuntimeError(f"kernel {kernel.release} has no module {name}")
        for a in alts:
            want(a, True)

    for name in names:
        want(name, False)
    return order


def _modname(path):
    base = os.path.basename(path)
    return re.sub(r"\.ko(\.(xz|zst|gz))?$", "", base).replace("-", "_")


def module_bytes(path):
    if path.endswith(".xz"):
        return lzma.decompress(open(path, "rb").read())
    if path.endswith(".gz"):
        return gzip.decompress(open(path, "rb").read())
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dcq", path], stdout=subprocess.PIPE, check=True).stdout
    return open(path, "rb").read()  # busybox insmod cannot decompress by itself


def build_initramfs(path, kernel, script, adds=(), modules=(), env=None, data=False):
    """Write the initramfs to path; returns its size in bytes."""
    img = Initramfs()
    busybox = shutil.which("busybox") or "/bin/busybox"
    img.file("bin/busybox", open(busybox, "rb").read(), 0o755)
    for applet in subprocess.run([busybox, "--list-full"], capture_output=True, text=True,
                                 check=True).stdout.split():
        if applet != "bin/busybox":  # the list names busybox itself too
            img.symlink(applet, "/bin/busybox")
    for d in ("proc", "sys", "dev", "tmp", "run", "data", "root", "etc/vm"):
        img.dir(d)
    img.file("init", open(os.path.join(HERE, "guest", "init.sh"), "rb").read(), 0o755)
    img.host_file(canary.binary(kernels.cache_dir()), canary.GUEST_PATH)  # /init starts it
    for src, dest in adds:
        if os.path.isdir(src):
            for top, _, files in os.walk(src):
                for n in files:
                    rel = os.path.relpath(os.path.join(top, n), src)
                    img.host_file(os.path.join(top, n), os.path.join(dest, rel))
        else:
            img.host_file(src, dest)
    img.file("test/run.sh", open(script, "rb").read(), 0o755)
    lines = []
    for name, file, optional in resolve_modules(kernel, modules):
        img.file(f"lib/modules/{name}.ko", module_bytes(file))
        lines.append(f"{name} {int(optional)}\n")
    img.file("etc/vm/modules", "".join(lines).encode())
    env = dict(env or {})
    libdirs = sorted({os.path.dirname(p) for p in img.entries if re.search(r"\.so[.\d]*$", p)})
    if libdirs:  # no ld.so.cache in the guest: tell the loader where the copied libraries are
        env.setdefault("LD_LIBRARY_PATH", ":".join("/" + d for d in libdirs))
    for k in env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise ValueError(f"bad environment variable name {k!r}")
    img.file("etc/vm/env", "".join(
        "export %s='%s'\n" % (k, str(v).replace("'", "'\\''")) for k, v in env.items()).encode())
    if data:
        img.file("etc/vm/data", b"")
    return img.write(path)
