"""The benchmark's data disk: an ext4 image built once and cached beside vm.py's images.

    /src/dNN/fNNN.c    a source-like tree: 64 directories x 48 files, 64-448 KiB of
                       compressible C-like text each (768 MiB): the build-like workload
    /warm/dNN/fNNN.c   a second tree of the same kind, 16 x 32 files of 256 KiB (128 MiB):
                       the warm-reread set
    /archive/fileN     4 files of 160 MiB random bytes (incompressible, like compressed
                       archives): the archive-like workload
    /out/              empty: where the build writes its output (~150 MiB)
Sized so that the page cache dominates the host footprint as in the seed (QEMU's own memory
and TCG's code cache are ~200-300 MiB of it).
Deterministic (seeded), so every machine builds the same bytes.
"""
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import kernels  # noqa: E402

VERSION = "bench-v2"
SRC_DIRS, SRC_FILES = 64, 48
WARM_DIRS, WARM_FILES, WARM_KIB = 16, 32, 256
ARCHIVE_FILES, ARCHIVE_MIB = 4, 160
IMAGE_MIB = 2048

WORDS = ("static int void struct unsigned long return if else for while const char case "
         "break switch default sizeof goto continue u64 u32 size_t page folio lru mem cgroup "
         "reclaim spin_lock spin_unlock rcu_read_lock list_for_each_entry NULL err ret nr "
         "pgdat zone node vmscan swap file anon active inactive memcg stat count pages "
         "#include #define /* */ { } ( ) ; , = == != < > <= >= + - * & | -> . 0 1 2 16 4096 "
         "EINVAL ENOMEM EAGAIN unlikely likely WARN_ON BUG_ON READ_ONCE WRITE_ONCE").split()


def _corpus(rng, size):
    out, n = [], 0
    while n < size:
        line = "\t" * rng.randrange(4) + " ".join(rng.choices(WORDS, k=rng.randrange(3, 14))) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out).encode()[:size]


def _tree(root, dirs, files, sizes_kib, corpus, rng):
    for d in range(dirs):
        dpath = os.path.join(root, f"d{d:02d}")
        os.makedirs(dpath)
        for i in range(files):
            kib = sizes_kib(rng)
            off = rng.randrange(len(corpus) - kib * 1024)
            head = f"/* {dpath}/f{i:03d}.c */\n".encode()
            with open(os.path.join(dpath, f"f{i:03d}.c"), "wb") as f:
                f.write(head + corpus[off:off + kib * 1024 - len(head)])


def path():
    return os.path.join(kernels.cache_dir(), "data", f"{VERSION}.ext4")


def ensure():
    """Path of the cached image, building it the first time (~15 s, 2 GiB)."""
    img = path()
    if os.path.exists(img):
        return img
    with kernels.locked("data"):
        if os.path.exists(img):
            return img
        os.makedirs(os.path.dirname(img), exist_ok=True)
        print(f"bench: building data image {img}", file=sys.stderr, flush=True)
        rng = random.Random(41096)
        corpus = _corpus(rng, 4 << 20)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(img)) as tmp:
            root = os.path.join(tmp, "root")
            _tree(os.path.join(root, "src"), SRC_DIRS, SRC_FILES,
                  lambda r: r.randrange(64, 449), corpus, rng)
            _tree(os.path.join(root, "warm"), WARM_DIRS, WARM_FILES, lambda r: WARM_KIB,
                  corpus, rng)
            os.makedirs(os.path.join(root, "archive"))
            os.makedirs(os.path.join(root, "out"))
            for i in range(ARCHIVE_FILES):
                with open(os.path.join(root, "archive", f"file{i}"), "wb") as f:
                    for _ in range(ARCHIVE_MIB):
                        f.write(rng.randbytes(1 << 20))
            out = os.path.join(tmp, "img")
            # As vm.data_image: 4 KiB blocks, no lazy init (no ext4lazyinit writes in the guest).
            subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-m", "0", "-L", "bench",
                            "-E", "lazy_itable_init=0,lazy_journal_init=0",
                            "-d", root, out, f"{IMAGE_MIB}M"], check=True,
                           stdout=subprocess.DEVNULL)
            os.replace(out, img)
    return img


if __name__ == "__main__":
    print(ensure())
