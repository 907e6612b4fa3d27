#!/usr/bin/env python3
"""otlp_profiles.py PID REQ_FILE...: the profiles of process PID in the saved OTLP requests
(bare ExportProfilesServiceRequest, as otlp_receiver.py saves them), as folded lines
"REQ TYPE root;...;leaf VALUE": TYPE is the profile's sample type ("samples", "off_cpu"), VALUE
the sum of the sample's values (timestamps only: their count). A sample whose values and
timestamps are both set but differ in length prints "REQ TYPE !shape". Needs only the
standard library (a minimal protobuf reader for the fields used)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_stacks import fields, ints  # noqa: E402 (the same minimal protobuf reader)


def sub(buf, num):
    return [v for n, wt, v in fields(buf) if n == num]


def one_int(buf, num):
    return next((v for n, wt, v in fields(buf) if n == num and wt == 0), 0)


def stack_table(dic):
    """the dictionary's stacks: each a list of location indices, leaf first"""
    stacks = []
    for st in sub(dic, 7):
        ids = []
        for n, wt, v in fields(st):
            if n == 1:
                ids += ints(wt, v)
        stacks.append(ids)
    return stacks


def request(path, want_pid):
    data = open(path, "rb").read()
    name = os.path.basename(path)
    dic = (sub(data, 2) or [b""])[0]
    strings = [v.decode("utf-8", "replace") for v in sub(dic, 5)]
    funcs = [one_int(f, 1) for f in sub(dic, 3)]
    locs = [[one_int(line, 1) for line in sub(loc, 3)] for loc in sub(dic, 2)]
    stacks = stack_table(dic)
    for rp in sub(data, 1):
        pid = None
        for res in sub(rp, 1):
            for kv in sub(res, 1):
                # the key inline, or (a Collector's re-encoding, opentelemetry-proto
                # v1.11) key_strindex into the string table
                key = sub(kv, 1) or [strings[one_int(kv, 3)].encode()
                                     if 0 <= one_int(kv, 3) < len(strings) else b""]
                if key == [b"process.pid"]:
                    pid = one_int((sub(kv, 2) or [b""])[0], 3)
        if pid != want_pid:
            continue
        for sp in sub(rp, 2):
            for prof in sub(sp, 2):
                kind = strings[one_int((sub(prof, 1) or [b""])[0], 1)]
                for s in sub(prof, 2):
                    vals, ts = [], 0
                    for n, wt, v in fields(s):
                        if n == 4:
                            vals += ints(wt, v)
                        elif n == 5:
                            ts += len(v) // 8 if wt == 2 else 1
                    if vals and ts and len(vals) != ts:
                        print("%s %s !shape" % (name, kind))
                    names = []
                    for loc in reversed(stacks[one_int(s, 1)] if stacks else []):
                        for fn in reversed(locs[loc]):
                            names.append(strings[funcs[fn]].replace(";", ":"))
                    print("%s %s %s %d" % (name, kind, ";".join(names), sum(vals) if vals else ts))


if __name__ == "__main__":
    for p in sys.argv[2:]:
        request(p, int(sys.argv[1]))
