#!/usr/bin/env python3
"""Check how a stackscope pprof file names the native frames that sit between two interpreter
frames (the VM's call machinery): each such location is placed in its function by an oracle of
its own, the FDE ranges `readelf --debug-dump=frames` prints for the location's file, and the
output says how many VM functions were seen and whether any one of them shows as more than one
frame name ("split") or under a "+0x" name that is not its start ("misnamed").

Usage: fold_check.py FILE.pb.gz  ->  "functions=N names=M split=K misnamed=J locations=L"
(mapping files are read by their paths: run it on the host the profile was recorded on).
"""
import bisect
import gzip
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_stacks import fields, ints, scalars  # noqa: E402

FDE = re.compile(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)")


def fde_ranges(path, cache={}):
    if path not in cache:
        out = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True,
                             text=True).stdout
        cache[path] = sorted((int(a, 16), int(b, 16)) for a, b in FDE.findall(out))
    return cache[path]


def fde_start(path, addr):
    ranges = fde_ranges(path)
    i = bisect.bisect_right(ranges, (addr, float("inf")))
    if i and ranges[i - 1][0] <= addr < ranges[i - 1][1]:
        return ranges[i - 1][0]
    return None


def main(path):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, samples, locs, funcs, maps = [], [], {}, {}, {}
    for num, wt, v in fields(data):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 2:
            samples.append([x for n2, w2, v2 in fields(v) if n2 == 1 for x in ints(w2, v2)])
        elif num == 3:
            m = scalars(v)
            maps[m.get(1, 0)] = m.get(5, 0)
        elif num == 4:
            loc = scalars(v)
            lines = [scalars(v2).get(1, 0) for n2, w2, v2 in fields(v) if n2 == 4]
            locs[loc.get(1, 0)] = (loc.get(2, 0), loc.get(3, 0), lines)
        elif num == 5:
            fn = scalars(v)
            funcs[fn.get(1, 0)] = fn.get(2, 0)
    seen = set()  # (file, address, name) of native locations between two runtime frames
    for ids in samples:
        runtime = [i for i, lid in enumerate(ids) if locs.get(lid, (0,))[0] == 0]
        for lo, hi in zip(runtime, runtime[1:]):
            for lid in ids[lo + 1:hi]:
                mapping, addr, lines = locs[lid]
                if len(lines) != 1:
                    continue  # DWARF inline chains: named by the debug info
                seen.add((strings[maps[mapping]], addr, strings[funcs[lines[0]]]))
    names_of = {}
    misnamed = 0
    for f, addr, name in seen:
        start = fde_start(f, addr)
        if start is None:
            continue
        names_of.setdefault((f, start), set()).add(name)
        m = re.match(r".*\+0x([0-9a-f]+)$", name)
        if m and int(m.group(1), 16) != start:
            misnamed += 1
    split = sum(1 for n in names_of.values() if len(n) > 1)
    print("functions=%d names=%d split=%d misnamed=%d locations=%d" % (
        len(names_of), len(set(n for _, _, n in seen)), split, misnamed, len(seen)))


if __name__ == "__main__":
    main(sys.argv[1])
