#!/usr/bin/env python3
"""The trimming rounds of a matrix boot: MiB the probes freed between two refault events against
the MiB read back at the second (its excess_pages, 4 KiB pages), and what was freed after the last.

    python3 rounds.py LOGDIR/test.log [...]
"""
import re
import sys


def rounds(path):
    freed, out = 0.0, []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"event=reclaim_step .*freed_mib=([\d.]+)", line)
            if m and "kind=trim" in line:
                freed += float(m.group(1))
                continue
            m = re.search(r"event=(trim_refaulted|trim_held) .*excess_pages=(\d+)", line)
            if m:
                out.append((m.group(1)[len("trim_"):], freed, int(m.group(2)) * 4 / 1024))
                freed = 0.0
    return out, freed


def main(paths):
    for path in paths:
        got, after = rounds(path)
        print(path, " ".join(f"{kind}:{f:.0f}->{back:.0f}" for kind, f, back in got), f"(then {after:.0f} freed)")


if __name__ == "__main__":
    main(sys.argv[1:])
