#!/usr/bin/env python3
"""sample_window.py PID...: one line per PID, "pid run_time_ns run_cnt samples", read now, for
bench/fp_cost_together.sh, which takes two such snapshots and divides the differences.

A PID is a stackscope (it holds a map named "counters": samples = COUNTER_SAMPLES, key 0, summed
over the CPUs; run time and runs of its programs named on_sample*) or a bpftrace (samples = the
sum of every count in its @ maps, "AT_*"; run time and runs of its perf_event programs). The
run times count only while kernel.bpf_stats_enabled=1."""
import json, os, subprocess, sys


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 and out.stdout.strip() else None


def number(v):
    """A map value as bpftool prints it: a number (with BTF) or little-endian hex bytes."""
    if isinstance(v, int):
        return v
    if isinstance(v, list):
        return int.from_bytes(bytes(int(b, 16) for b in v), "little")
    return 0


def values(entry):
    """Every value of a dumped entry: one, or one per CPU (per-CPU maps)."""
    if "values" in entry:
        return [number(c.get("value", 0)) for c in entry["values"]]
    if "formatted" in entry:
        f = entry["formatted"]
        if "values" in f:
            return [number(c.get("value", 0)) for c in f["values"]]
        return [number(f.get("value", 0))]
    return [number(entry.get("value", 0))]


def snapshot(pid):
    progs, maps = set(), set()
    for fd in os.listdir("/proc/%s/fd" % pid):
        try:
            with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
                info = dict(l.split(":", 1) for l in f if ":" in l)
        except OSError:
            continue
        if "prog_id" in info:
            progs.add(info["prog_id"].strip())
        elif "map_id" in info:
            maps.add(info["map_id"].strip())
    names = {}
    for m in maps:
        s = bpftool("map", "show", "id", m)
        if s:
            names[m] = s.get("name", "")
    stackscope = "counters" in names.values()
    run = cnt = 0
    for p in progs:
        s = bpftool("prog", "show", "id", p)
        if not s:
            continue
        if stackscope and not s.get("name", "").startswith("on_sample"):
            continue
        if not stackscope and s.get("type") != "perf_event":
            continue
        run += s.get("run_time_ns", 0)
        cnt += s.get("run_cnt", 0)
    samples = 0
    for m, name in names.items():
        if stackscope and name == "counters":
            e = bpftool("map", "lookup", "id", m, "key", "0", "0", "0", "0")
            samples = sum(values(e)) if e else 0
        elif not stackscope and name.startswith("AT_"):
            for e in bpftool("map", "dump", "id", m) or []:
                samples += sum(values(e))
    return run, cnt, samples


for pid in sys.argv[1:]:
    print(pid, *snapshot(pid))
