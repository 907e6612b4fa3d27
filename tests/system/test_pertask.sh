#!/bin/bash
# Per-task perf events (src/sampler/task_events.h): `record -p` and `record -- COMMAND` open one
# cpu-clock event per thread of their processes, with attr.inherit, instead of one per CPU:
#  (a) -p: a thread the target makes after the attach is sampled (the kernel copies the program
#      into the inherited event) and once: its samples are its own CPU time at the frequency,
#      0.6-1.4x (two events would give 2x); a process it forks is not sampled (inherit_thread,
#      or the pid filter); the summary says "per-task events on N threads of 1 processes";
#  (b) -- COMMAND stays on per-CPU events: an inherited event starts a whole period, so a process
#      shorter than one is never sampled per task; a loop of 1,000 /bin/true comes out (~400
#      samples per CPU at 499 Hz, ~7 per task). With STACKSCOPE_PER_TASK=1 the event is on the
#      command's process before its exec: a thread and a forked child it makes later are both
#      sampled, each once per period of its CPU time;
#  (c) over 4096 threads: per-CPU events, said in one line, the target still sampled; too few
#      fds (RLIMIT_NOFILE's hard limit) the same; a soft limit too low under a high enough hard
#      one is raised, and the events are per task;
#  (d) system-wide recording and STACKSCOPE_PER_TASK=0 keep the per-CPU events.
# The ratios are of CPU time each thread measured itself (CLOCK_THREAD_CPUTIME_ID), so the
# load changes how long they take, not what they should get.
source "$(dirname "$0")/lib.sh"
need_root
for w in wl_spawn_late wl_many_threads; do have_fixture $w || finish; done
HZ=499

# per_period FOLDED REGEX CPU_MS: samples matching REGEX per 100 periods of CPU_MS at HZ
per_period()
{
	local n
	n=$(samples "$1" wl_spawn_late "$2")
	echo $((n * 100000 / ($3 * HZ + 1)))
}

# sampling ERRFILE: the summary's sampling line
sampling() { sed -n 's/^sampling  *//p' "$1"; }

# (a) -p PID, a thread and a child made after the attach
"$FIX/wl_spawn_late" 1.0 --on-signal >"$TMP/a.out" 2>/dev/null &
wl=$!
_bg_pids+=($wl)
sleep 0.2
timeout -k 5 "$SS_TIMEOUT" "$SS" record -F $HZ -d 40 -p "$wl" -o "$TMP/a.folded" 2>"$TMP/a.err" &
rec=$!
_bg_pids+=($rec)
if wait_recording "$TMP/a.err" "$rec"; then
	sleep 0.5 # the main thread sampled before it makes anything
	kill -USR1 "$wl"
	wait "$wl"
	sleep 0.2
fi
kill -INT "$rec" 2>/dev/null
wait "$rec"
check_eq "-p: exit status" $? 0
check "-p: sampling per task ($(sampling "$TMP/a.err"))" \
	grep -q '^sampling  *per-task events on [0-9]* threads of 1 processes' "$TMP/a.err"
cpu=$(sed -n 's/^thread_cpu_ms=//p' "$TMP/a.out")
check_ge "-p: the late thread burned its CPU second (ms)" "${cpu:-0}" 900
f=$TMP/a.folded
check_ge "-p: samples of the main thread before the signal" "$(samples "$f" wl_spawn_late wait_leaf)" 10
r=$(per_period "$f" 'late_thread_(main|work|leaf)' "${cpu:-0}")
check_ge "-p: a thread made after the attach sampled: samples per 100 periods of its CPU" "$r" 60 ||
	show "$f" wl_spawn_late
check_le "-p: ... once, not by two events" "$r" 140
check_eq "-p: the child forked after the attach not sampled" \
	"$(samples "$f" wl_spawn_late 'late_child_')" 0

# (b) -- COMMAND: per CPU, its short processes sampled; per task when asked, its later thread
# and child
f=$TMP/short.folded
record "$TMP/short.err" -F $HZ -o "$f" -- sh -c 'i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done'
check_eq "-- COMMAND of short processes: exit status" $? 0
check "-- COMMAND: per-CPU events ($(sampling "$TMP/short.err"))" \
	grep -q '^sampling  *per-CPU events' "$TMP/short.err"
check_ge "-- COMMAND: samples of 1,000 /bin/true of ~0.5 ms each" "$(samples "$f" true)" 100
f=$TMP/b.folded
STACKSCOPE_PER_TASK=1 record "$TMP/b.err" -F $HZ -o "$f" -- "$FIX/wl_spawn_late" 0.6 >"$TMP/b.out"
check_eq "-- COMMAND: exit status" $? 0
check "-- COMMAND: per task, processes inherit ($(sampling "$TMP/b.err"))" \
	grep -q '^sampling  *per-task events on 1 threads of 1 processes (new threads and processes inherit' \
	"$TMP/b.err"
cpu=$(sed -n 's/^thread_cpu_ms=//p' "$TMP/b.out")
r=$(per_period "$f" 'late_thread_(main|work|leaf)' "${cpu:-0}")
check_ge "-- COMMAND: its thread sampled: samples per 100 periods of its CPU" "$r" 60 ||
	show "$f" wl_spawn_late
check_le "-- COMMAND: ... once" "$r" 140
cpu=$(sed -n 's/^child_cpu_ms=//p' "$TMP/b.out")
r=$(per_period "$f" 'late_child_(main|work|leaf)' "${cpu:-0}")
check_ge "-- COMMAND: its forked child sampled: samples per 100 periods of its CPU" "$r" 60
check_le "-- COMMAND: ... once" "$r" 140

# (c) over the cap, and the fd limits
spawn many "$FIX/wl_many_threads" 4100 20
for i in $(seq 200); do
	[[ $(ls "/proc/$many/task" 2>/dev/null | wc -l) -ge 4100 ]] && break
	sleep 0.1
done
f=$TMP/c.folded
record "$TMP/c.err" -F $HZ -d 1 -p "$many" -o "$f"
check_eq "over 4096 threads: exit status" $? 0
check "over 4096 threads: said in one line" grep -q 'more than 4096 threads.*per-CPU events' "$TMP/c.err"
check "over 4096 threads: per-CPU events ($(sampling "$TMP/c.err"))" \
	grep -q '^sampling  *per-CPU events' "$TMP/c.err"
check_ge "over 4096 threads: the target sampled" "$(samples "$f" wl_many_threads many_leaf)" 20
kill "$many" 2>/dev/null

spawn few "$FIX/wl_many_threads" 300 20
sleep 0.5
f=$TMP/d.folded
prlimit --nofile=400:400 -- "$SS" record -F $HZ -d 1 -p "$few" -o "$f" 2>"$TMP/d.err"
check_eq "hard RLIMIT_NOFILE 400, 300 threads: exit status" $? 0
check "hard RLIMIT_NOFILE 400, 300 threads: per-CPU events, said in one line" \
	grep -q 'too few file descriptors.*per-CPU events' "$TMP/d.err"
check_ge "hard RLIMIT_NOFILE 400, 300 threads: the target sampled" \
	"$(samples "$f" wl_many_threads many_leaf)" 20
prlimit --nofile=400:4096 -- "$SS" record -F $HZ -d 1 -p "$few" -o "$f" 2>"$TMP/e.err"
check_eq "soft RLIMIT_NOFILE 400 under 4096: exit status" $? 0
check "soft RLIMIT_NOFILE 400 under 4096: raised, per task ($(sampling "$TMP/e.err"))" \
	grep -q '^sampling  *per-task events on 300 threads of 1 processes' "$TMP/e.err"
check_ge "soft RLIMIT_NOFILE 400 under 4096: the target sampled" \
	"$(samples "$f" wl_many_threads many_leaf)" 20

# (d) per CPU where there is no process to bind to, or when asked
record "$TMP/f.err" -F 99 -d 0.5 -o "$TMP/f.folded"
check "system-wide: per-CPU events ($(sampling "$TMP/f.err"))" \
	grep -q "^sampling  *per-CPU events on [0-9]* CPUs" "$TMP/f.err"
STACKSCOPE_PER_TASK=0 record "$TMP/g.err" -F $HZ -d 1 -p "$few" -o "$f"
check "STACKSCOPE_PER_TASK=0: per-CPU events ($(sampling "$TMP/g.err"))" \
	grep -q '^sampling  *per-CPU events' "$TMP/g.err"
check_ge "STACKSCOPE_PER_TASK=0: the target sampled" "$(samples "$f" wl_many_threads many_leaf)" 20
kill "$few" 2>/dev/null

finish
