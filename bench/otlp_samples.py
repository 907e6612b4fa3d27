#!/usr/bin/env python3
"""otlp_samples.py REQ_FILE...: every sample of the saved OTLP profiles requests (bare
ExportProfilesServiceRequest, as tests/system/otlp_receiver.py saves them; opentelemetry-proto
v1.11's v1development), whichever profiler sent them, one tab-separated line each:
    pid  exe  first_ts_ns  count  stack  lines  files
pid: the resource's process.pid (0 when none); exe: the basename of the resource's
process.executable.path or .name ("-" when none); first_ts_ns: the sample's earliest
timestamp (0 when it carries none); count: its number of timestamps, else the sum of its
values; stack: root first, ";" between frames. A frame is its function's name; a location
without one (an agent that leaves native symbolization to the backend, as the OpenTelemetry
eBPF profiler does) is "0xADDRESS@FILE", the address as sent and its mapping's file name, for
the caller to symbolize. lines and files: one entry a frame, ";" between them as in stack: the
frame's source line (0 when none is sent) and the basename of its location's mapping's file ("?"
when the location has none). Only the standard library: tests/system/pprof_stacks.py's reader
and otlp_profiles.py's tables."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "system"))
from pprof_stacks import fields, ints  # noqa: E402 (the minimal protobuf reader)
from otlp_profiles import one_int, stack_table, sub  # noqa: E402

def any_value(buf):
    """an AnyValue's string (1) or int (3), as text"""
    for n, wt, v in fields(buf):
        if n == 1 and wt == 2:
            return v.decode("utf-8", "replace")
        if n == 3 and wt == 0:
            return str(v)
    return ""


def attributes(kvs, strings):
    """KeyValue messages (key inline, or key_strindex 3 as a Collector re-encodes them)"""
    out = {}
    for kv in kvs:
        key = sub(kv, 1)
        if key:
            name = key[0].decode("utf-8", "replace")
        else:
            k = one_int(kv, 3)
            name = strings[k] if 0 <= k < len(strings) else ""
        out[name] = any_value((sub(kv, 2) or [b""])[0])
    return out


def request(path, out):
    data = open(path, "rb").read()
    dic = (sub(data, 2) or [b""])[0]
    strings = [v.decode("utf-8", "replace") for v in sub(dic, 5)]
    s = lambda i: strings[i] if 0 <= i < len(strings) else ""  # noqa: E731
    funcs = [s(one_int(f, 1)) for f in sub(dic, 3)]
    maps = [s(one_int(m, 4)) for m in sub(dic, 1)]
    locs = []  # per location: its frames, each (name, line, file), callee last
    for loc in sub(dic, 2):
        m = one_int(loc, 1)
        f = (os.path.basename(maps[m]) if 0 <= m < len(maps) else "") or "?"
        lines = [(funcs[one_int(ln, 1)], one_int(ln, 2)) for ln in sub(loc, 3)
                 if one_int(ln, 1) < len(funcs)]
        lines = [(n, no) for n, no in lines if n]
        if lines:  # inlined: the callee is the first Line
            locs.append([(n.replace(";", ":"), no, f) for n, no in reversed(lines)])
        else:
            locs.append([("0x%x@%s" % (one_int(loc, 2), f), 0, f)])
    stacks = stack_table(dic)
    for rp in sub(data, 1):
        res = attributes(sub((sub(rp, 1) or [b""])[0], 1), strings)
        pid = res.get("process.pid", "0") or "0"
        exe = os.path.basename(res.get("process.executable.path") or
                               res.get("process.executable.name") or "-")
        for sp in sub(rp, 2):
            for prof in sub(sp, 2):
                for smp in sub(prof, 2):
                    vals, ts = [], []
                    for n, wt, v in fields(smp):
                        if n == 4:
                            vals += ints(wt, v)
                        elif n == 5:
                            if wt == 2:
                                ts += struct.unpack("<%dQ" % (len(v) // 8), v)
                            else:
                                ts.append(struct.unpack("<Q", v)[0] if wt == 1 else v)
                    si = one_int(smp, 1)
                    frames = []
                    for loc in reversed(stacks[si] if si < len(stacks) else []):
                        if loc < len(locs):
                            frames += locs[loc]
                    out.write("%s\t%s\t%d\t%d\t%s\t%s\t%s\n" % (
                        pid, exe, min(ts) if ts else 0, len(ts) if ts else sum(vals),
                        ";".join(n for n, _, _ in frames),
                        ";".join(str(no) for _, no, _ in frames),
                        ";".join(f for _, _, f in frames)))


for p in sys.argv[1:]:
    request(p, sys.stdout)
