#!/usr/bin/env python3
"""reference_chains.py SPEC T0_NS T1_NS T2_NS [FILE=PATH...] < SAMPLES: bench/reference.sh's
figures of one profiler's run, from bench/otlp_samples.py's lines on stdin.

SPEC: one workload a line, "NAME MATCH FRAME..." with MATCH "pid:N" (the samples of process N)
or "exe:NAME" (those of every process whose executable is NAME: a loop of short-lived ones),
and FRAME... its known chain, root to leaf. A sample holds the chain when its stack has those
frames one after another (a frame holds FRAME when FRAME is its name or a word of it:
"down" is in "Object#down" and in "JvmDeep30.down(int, long)").
Frames "0xADDR@FILE" (an agent that leaves native symbols to the backend) are named here from
the symbol table of the PATH given as FILE=PATH (nm -n; an address in no symbol stays as is).

Prints a line per workload: "NAME samples complete first_ms": the samples with their first
timestamp in [T1, T2], those of them holding the chain, and the milliseconds from T0 (the
profiler's start) to the first sample that holds the chain, whenever it came (- when none)."""
import bisect
import re
import subprocess
import sys

spec_file, t0, t1, t2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
symtabs = {}
for arg in sys.argv[5:]:
    name, path = arg.split("=", 1)
    syms = []
    nm = subprocess.run(["nm", "-n", "--defined-only", path], capture_output=True, text=True)
    for ln in nm.stdout.splitlines():
        parts = ln.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            syms.append((int(parts[0], 16), parts[2]))
    symtabs[name] = ([a for a, _ in syms], [n for _, n in syms])

ADDR = re.compile(r"^0x([0-9a-f]+)@(.*)$")


def frame_name(f):
    m = ADDR.match(f)
    if not m or m.group(2) not in symtabs:
        return f
    addrs, names = symtabs[m.group(2)]
    i = bisect.bisect_right(addrs, int(m.group(1), 16)) - 1
    return names[i] if i >= 0 else f


def holds(frame, want):
    return frame == want or re.search(r"(^|[^\w])" + re.escape(want) + r"($|[^\w])", frame)


def has_chain(frames, chain):
    n = len(chain)
    for i in range(len(frames) - n + 1):
        if all(holds(frames[i + k], chain[k]) for k in range(n)):
            return True
    return False


specs = []
for ln in open(spec_file):
    parts = ln.split()
    if len(parts) >= 3:
        specs.append((parts[0], parts[1], parts[2:]))
stats = {name: [0, 0, None] for name, _, _ in specs}
for ln in sys.stdin:
    pid, exe, ts, cnt, stack = ln.rstrip("\n").split("\t")
    ts, cnt = int(ts), int(cnt)
    for name, match, chain in specs:
        kind, _, val = match.partition(":")
        if (kind == "pid" and pid == val) or (kind == "exe" and exe == val):
            break
    else:
        continue
    ok = has_chain([frame_name(f) for f in stack.split(";")], chain)
    st = stats[name]
    if t1 <= ts <= t2:
        st[0] += cnt
        st[1] += cnt if ok else 0
    if ok and (st[2] is None or ts < st[2]):
        st[2] = ts
for name, _, _ in specs:
    n, ok, first = stats[name]
    print(name, n, ok, "-" if first is None else (first - t0) // 1000000)
