#!/usr/bin/env python3
"""reference_chains.py SPEC T0_NS T1_NS T2_NS [FILE=PATH...] < SAMPLES: bench/reference.sh's
figures of one profiler's run, from bench/otlp_samples.py's lines on stdin.

SPEC: one workload a line, "NAME MATCH [lines:N,...] TOKEN..." with MATCH "pid:N" (the samples
of process N) or "exe:NAME" (those of every process whose executable is NAME: a loop of
short-lived ones, a server's forks), and TOKEN... its known chain, root to leaf. A sample holds
the chain when its stack has the chain's frames one after another, where a token is
  NAME   a frame holding NAME: NAME is its name or a word of it ("down" is in "Object#down"
         and in "JvmDeep30.down(int, long)"; "clang::FrontendAction::Execute" in its
         demangled signature);
  @FILE  a frame in the file FILE (its mapping's basename), named or not;
  A|B    a frame that holds A or B;
  ...    any number of frames, none too;
  ^      (first only) the chain starts at the stack's root: the whole stack was walked.
lines:N,...: the hot lines of the chain's last frame: its line is checked too (see below).
Frames "0xADDR@FILE" (an agent that leaves native symbols to the backend) are named here from
the symbol table of the PATH given as FILE=PATH (nm -n -C; a stripped file's dynamic symbols,
as Debian ships its programs and libraries; an address in no symbol stays as is).

Prints a line per workload: "NAME samples complete first_ms lined hot all": the samples with their
first timestamp in [T1, T2], those of them holding the chain, the milliseconds from T0 (the
profiler's start) to the first sample that holds the chain, whenever it came (- when none);
of the complete samples in the window, those whose last chain frame has a line, and those
whose line is one of the hot lines ("-" and "-" when the spec names none); all its samples,
whenever they were taken."""
import bisect
import re
import subprocess
import sys

spec_file, t0, t1, t2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def symbols(path, dynamic):
    nm = subprocess.run(["nm", "-n", "-C", "--defined-only"] + (["-D"] if dynamic else []) +
                        [path], capture_output=True, text=True)
    syms = []
    for ln in nm.stdout.splitlines():
        parts = ln.split(None, 2)
        if len(parts) == 3 and parts[1] in "tTwWiI":
            syms.append((int(parts[0], 16), re.sub(r"@.*$", "", parts[2])))
    return syms


symtabs = {}
for arg in sys.argv[5:]:
    name, path = arg.split("=", 1)
    syms = symbols(path, False) or symbols(path, True)
    symtabs[name] = ([a for a, _ in syms], [n for _, n in syms])

ADDR = re.compile(r"^0x([0-9a-f]+)@(.*)$")


def frame_name(f):
    m = ADDR.match(f)
    if not m or m.group(2) not in symtabs:
        return f
    addrs, names = symtabs[m.group(2)]
    i = bisect.bisect_right(addrs, int(m.group(1), 16)) - 1
    return names[i] if i >= 0 else f


def holds(frame, file, want):
    if "|" in want:
        return any(holds(frame, file, w) for w in want.split("|"))
    if want.startswith("@"):
        return file == want[1:]
    return frame == want or re.search(r"(^|[^\w])" + re.escape(want) + r"($|[^\w])", frame)


def match_at(frames, files, i, chain, k):
    """the index of the frame that matches chain[-1] when chain[k:] matches from frame i"""
    if k == len(chain):
        return i - 1
    if chain[k] == "...":
        for j in range(i, len(frames) + 1):
            end = match_at(frames, files, j, chain, k + 1)
            if end is not None:
                return end
        return None
    if i < len(frames) and holds(frames[i], files[i], chain[k]):
        return match_at(frames, files, i + 1, chain, k + 1)
    return None


def chain_end(frames, files, chain):
    """the index of the chain's last frame in the stack, None when the stack does not hold it"""
    if chain[0] == "^":
        return match_at(frames, files, 0, chain, 1)
    for i in range(len(frames)):
        end = match_at(frames, files, i, chain, 0)
        if end is not None:
            return end
    return None


specs = []
for ln in open(spec_file):
    parts = ln.split()
    if len(parts) < 3:
        continue
    hot = None
    if parts[2].startswith("lines:"):
        hot = set(parts[2][6:].split(","))
        del parts[2]
    specs.append((parts[0], parts[1], hot, parts[2:]))
stats = {name: [0, 0, None, 0, 0, 0] for name, _, _, _ in specs}
for ln in sys.stdin:
    pid, exe, ts, cnt, stack, lines, files = ln.rstrip("\n").split("\t")
    ts, cnt = int(ts), int(cnt)
    for name, match, hot, chain in specs:
        kind, _, val = match.partition(":")
        if (kind == "pid" and pid == val) or (kind == "exe" and exe == val):
            break
    else:
        continue
    lines = lines.split(";")
    end = chain_end([frame_name(f) for f in stack.split(";")], files.split(";"), chain)
    st = stats[name]
    st[5] += cnt
    if t1 <= ts <= t2:
        st[0] += cnt
        if end is not None:
            st[1] += cnt
            if lines[end] != "0":
                st[3] += cnt
                st[4] += cnt if hot and lines[end] in hot else 0
    if end is not None and (st[2] is None or ts < st[2]):
        st[2] = ts
for name, _, hot, _ in specs:
    n, ok, first, lined, on_hot, every = stats[name]
    print(name, n, ok, "-" if first is None else (first - t0) // 1000000,
          lined if hot else "-", on_hot if hot else "-", every)
