#!/usr/bin/env python3
"""One line per @@LRUGEN dump of a matrix boot's test.log (matrix.py --lru-gen), beside its marks.

Each generation as gSEQ:FILE_MiB; after it, each of its tiers with a nonzero file figure as
[tTIER refaulted evicted protected] (lower-case r/e/p: this generation's counts; upper-case R/T:
the kernel's running averages). Usage: generations.py LOGS/<boot>/test.log
"""
import re
import sys


def main(path):
    out = {}
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.strip()
            m = re.match(r"@@LRUGEN t_ms=(\d+) (.*)", line)
            if m:
                t, f = int(m[1]), m[2].split()
                if len(f) == 4 and all(x.isdigit() for x in f):  # seq age_ms anon_pages file_pages
                    out.setdefault(t, []).append(f"g{f[0]}:{int(f[3]) * 4 // 1024}M")
                elif len(f) == 7 and f[0].isdigit() and f[4][-1] in "rR":  # tier, anon r e p, file r e p
                    if any(x[:-1] not in ("0", "") for x in f[4:]):
                        out.setdefault(t, []).append(f"[t{f[0]} {' '.join(f[4:])}]")
                continue
            m = re.match(r"@@MARK (\S+) t_ms=(\d+)", line)
            if m:
                out.setdefault(int(m[2]), []).append("MARK " + m[1])
    for t in sorted(out):
        print(t, " ".join(out[t]))


if __name__ == "__main__":
    main(sys.argv[1])
