#!/usr/bin/env python3
"""serve_counts.py PORT FROM_NS TO_NS SPEC: per workload of bench/reference_chains.py's SPEC,
the samples `stackscope serve` on 127.0.0.1:PORT holds for it in the intervals overlapping
[FROM_NS, TO_NS): a "pid:N" workload's with pid=N, an "exe:NAME" one's with exe=PATH summed over
the executables whose basename is NAME (/api/filters lists them). Prints "NAME samples" lines
(bench/reference.sh checks them against the Python receiver's decoding of the same requests)."""
import json
import os
import sys
import urllib.parse
import urllib.request

port, t_from, t_to, spec_file = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]


def api(path, **params):
    params.update({"from": t_from, "to": t_to})
    url = "http://127.0.0.1:%s%s?%s" % (port, path, urllib.parse.urlencode(params))
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)


exes = {}
for proc in api("/api/filters")["processes"]:
    if proc.get("exe"):
        exes.setdefault(os.path.basename(proc["exe"]), set()).add(proc["exe"])
for ln in open(spec_file):
    parts = ln.split()
    if len(parts) < 3:
        continue
    kind, _, val = parts[1].partition(":")
    if kind == "pid":
        n = api("/api/flamegraph", pid=val)["total"]
    else:
        n = sum(api("/api/flamegraph", exe=e)["total"] for e in sorted(exes.get(val, ())))
    print(parts[0], n)
