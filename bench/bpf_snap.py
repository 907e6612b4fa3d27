#!/usr/bin/env python3
"""bpf_snap.py PID IDS_FILE [PROGS_FILE]: one line "now_ns cpu_ticks bpf_run_ns bpf_run_cnt
sample_ns sample_cnt map_bytes cpu_ns prog_ids..." of process PID, read in one pass (for
bench/agent.sh and bench/reference.sh): utime+stime (fields 14, 15 of /proc/PID/stat, in clock
ticks), the same in ns (cpu_ns: the process's CPU-time clock, see below), and over the distinct
bpf-prog and bpf-map fds of PID (fdinfo): run_time_ns and run_cnt (those of the prog ids listed
in IDS_FILE apart: sample_ns, sample_cnt; IDS_FILE may be missing), memlock. With PROGS_FILE,
also writes "id run_time_ns run_cnt" of each program there. Run times count only while
kernel.bpf_stats_enabled=1.

cpu_ns is clock_gettime() of PID's process CPU-time clock (what clock_getcpuclockid(PID) gives:
((~PID) << 3) | 2, CPUCLOCK_SCHED of the whole thread group): every live thread's
sum_exec_runtime plus what the process's exited threads ran (the kernel's signal struct keeps
it), in ns. Summing /proc/PID/task/*/schedstat instead would lose a thread that ends inside a
window (its time leaves the sum), and ticks are too coarse for a quiet agent: over 40 s one tick
of 10 ms is 0.025 % of a core."""
import os, sys, time
pid, ids_file = sys.argv[1], sys.argv[2]
progs_file = sys.argv[3] if len(sys.argv) > 3 else None
try:
    sample_ids = set(open(ids_file).read().split())
except OSError:
    sample_ids = set()
now = time.time_ns()
with open("/proc/%s/stat" % pid) as f:
    fields = f.read().rsplit(")", 1)[1].split()
ticks = int(fields[11]) + int(fields[12])
cpu_ns = time.clock_gettime_ns(((~int(pid)) << 3) | 2)
progs, maps = {}, {}
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        if link not in ("anon_inode:bpf-prog", "anon_inode:bpf-map"):
            continue
        with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
            info = dict(l.split(":", 1) for l in f if ":" in l)
    except OSError:
        continue
    info = {k: v.strip() for k, v in info.items()}
    if link.endswith("prog"):
        progs[info["prog_id"]] = info
    else:
        maps[info["map_id"]] = info
run = sum(int(p.get("run_time_ns", 0)) for p in progs.values())
cnt = sum(int(p.get("run_cnt", 0)) for p in progs.values())
srun = sum(int(p.get("run_time_ns", 0)) for i, p in progs.items() if i in sample_ids)
scnt = sum(int(p.get("run_cnt", 0)) for i, p in progs.items() if i in sample_ids)
mem = sum(int(m.get("memlock", 0)) for m in maps.values())
print(now, ticks, run, cnt, srun, scnt, mem, cpu_ns, " ".join(sorted(progs)))
if progs_file:
    with open(progs_file, "w") as f:
        for i, p in sorted(progs.items()):
            print(i, p.get("run_time_ns", 0), p.get("run_cnt", 0), file=f)
