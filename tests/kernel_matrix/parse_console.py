#!/usr/bin/env python3
"""One kernel's row of the kernel matrix, from the console of its QEMU boot.

guest_init.sh prints "KM status|log|folded CASE ..." lines between KM-BEGIN and KM-END.
Prints:  RELEASE ARCH programs=ok|failed chain=F python=F walker=tail-call|bpf_loop
then "  verifier PROGRAM insns=N time_us=N" per program, and "  error CASE: LINE" for each
error stackscope printed. chain: the share of wl_chain_nofp's samples in hot_leaf whose stack
is complete from _start (_start;__libc_start_main*;[one frame];main;chain_a;chain_b;chain_c);
python: the share of python3.11's samples running the script (_PyRun_SimpleFileObject) that carry <module>;a;b;c complete
from _start; python-eval: the same of those running its bytecode (_PyEval_EvalFrameDefault under
_PyRun_SimpleFileObject: not the reading and compiling of the script); go (when the root has wl_go: the arm64 row): share/samples of wl_go's samples in
main.gamma complete from runtime.goexit (goexit;runtime.main;main.main;alpha;beta;gamma); perl, ruby, php
(when the root has them: the arm64 row): the same for perl_chain.pl, rb_chain.rb, php_chain.php,
complete from _start through the interpreter loop; php_jit, php_jit_fn: php_chain.php with
opcache.jit=tracing and =function, and php-jit-placed=PLACED/LOST their pcs in JIT code placed on
execute_ex's frame and not; node (node_chain.js interpreted; node-jit with node's default tiers,
when the boot asked for it), complete from _start through the interpreter loop;
luajit (the arm64 row): lua_chain.lua under Debian's luajit, <main> -> alpha -> obj:beta -> M.gamma
each caller at its call line, complete from _start through lua_pcall and the VM (lj_vm), as
test_luajit.sh's chain; java (the arm64 row): the same for HotSpot's JvmChain, main -> alpha -> beta -> gamma under the
call stub; tail-call-chain: chain with the tail-call walker forced (STACKSCOPE_TAIL_CALLS=1),
or chain itself on a kernel where the tail-call walker is the only one (guest_init.sh then
runs no second case). ebpf-mappings: the mappings eBPF entered itself at exec and mmap in the
chain case ("new mappings N entered by eBPF": 0 where the kernel lacks bpf_find_vma).
sampling: the forked case's perf events (per-task or per-cpu, its summary's sampling line);
forked-chain: share/samples of chain in wl_chain_nofp forked by a shell (the case forked): its
samples come through the per-task event it inherited; pid-chain: the same of `record -p` of a
running wl_chain_nofp (the case pid), pid-sampling its perf events (these three: x86_64 rows);
python-deep: share/samples of py_many_code.py's samples in its leaf with all 150 Python frames
above it (x86_64 rows: on 5.10 the tail-call walker's runtime frames past its first steps).
Exit status 1 when the boot gave no result.
Usage: parse_console.py ARCH CONSOLE_FILE
"""
import base64
import os
import re
import subprocess
import sys
import tempfile

CHAIN = re.compile(r"^wl_chain_nofp;_start;__libc_start_main[^;]*;([^;]+;)?main;chain_a;chain_b;chain_c;hot_leaf(;|$)")
# Go's wl_go: goexit and runtime.main (the goroutine's roots) down to the frameless leaf
GO = re.compile(r"^wl_go;runtime\.goexit[^;]*;runtime\.main;main\.main;main\.alpha;main\.beta;main\.gamma(;|$)")
# Perl, Ruby and PHP (tests/data/perl_chain.pl, rb_chain.rb, php_chain.php): from _start through
# the interpreter loop to the known chain's leaf
PERL = re.compile(r"^perl;_start;__libc_start_main[^;]*;.*;Perl_runops_standard;main;main::alpha;main::beta;main::gamma(;|$)")
# (Ruby's methods with their class, as the x86 Ruby test wants them: a sample whose gamma
# came without its class is in the share's samples, not in its complete ones)
RUBY = re.compile(r"^ruby3\.1;_start;__libc_start_main[^;]*;.*;rb_vm_exec;(?:[^;]*;)*<main>;Worker#alpha;Worker#beta;Worker#gamma(;|$)")
PHP = re.compile(r"^php8\.2;_start;__libc_start_main[^;]*;.*;execute_ex;\{main\};Worker::run;alpha;beta;gamma(;|$)")
# Node.js (tests/data/node_chain.js, interpreted): from _start through V8's entry into JavaScript
# and the script's top level to gamma
NODE = re.compile(r"^node;_start;__libc_start_main[^;]*;.*;\[v8\] JSEntry;\[v8\] JSEntryTrampoline;.*;<anonymous>(:1:1)?;alpha;beta;gamma(;|$)")
# HotSpot's JvmChain (tests/data/JvmChain.java), as tests/system/test_jvm.sh measures it, from
# the java case's pprof file (its frames' lines and thread names): of the samples of the thread
# jmain in heavy, those whose stack is whole from the launcher's thread start (libc's
# thread_start and start_thread, unnamed in this host's stripped arm64 libc) through JavaMain
# and the call stub, each Java frame at its call line (gamma at its loop, mix inlined into it
# once compiled), heavy at one of its lines or none (compiled code has lines only at its pc
# descriptors). JvmTiny (java-tiny=, the case java_tiny) the same way: of the thread tiny17's samples in tiny,
# main -> loop -> tiny (loop and tiny at their lines or none), a third of them in tiny's
# prologue or epilogue.
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
PPROF_STACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "system", "pprof_stacks.py")
JAVA_ROOT = (r"(libc\.so\.6\+0x[0-9a-f]+|thread_start|__clone3);(libc\.so\.6\+0x[0-9a-f]+|start_thread);"
             r"ThreadJavaMain;JavaMain;jni_CallStaticVoidMethod;(?:[^;]*;)*JavaCalls::call_helper[^;]*;"
             r"\[jvm stub\] [^;]*;")


def marked_lines(name, comment="//"):
    """a source file's lines by their marker comment ("// HOT", Lua's "-- HOT"): {mark: "(l1|l2)"}"""
    marks = {}
    for n, l in enumerate(open(os.path.join(DATA, name)), 1):
        m = re.search(comment + r" ([A-Z_]+)", l)
        if m:
            marks.setdefault(m.group(1), []).append(str(n))
    return {k: "(%s)" % "|".join(v) for k, v in marks.items()}


def java_patterns():
    """the whole chains of JvmChain's and JvmTiny's main threads, as test_jvm.sh checks them"""
    c, t = marked_lines("JvmChain.java"), marked_lines("JvmTiny.java")
    f, g = r"@JvmChain\.java:", r"@JvmTiny\.java"
    chain = re.compile(r"^jmain;" + JAVA_ROOT + r"JvmChain\.main" + f + c["CALL_ALPHA"] + r";JvmChain\.alpha" + f +
                       c["CALL_BETA"] + r";JvmChain\.beta" + f + c["CALL_GAMMA"] + r";JvmChain\.gamma" + f + c["HOT"] +
                       r";JvmChain\.mix" + f + c["CALL_HEAVY"] + r";JvmChain\.heavy@JvmChain\.java(:" + c["HEAVY"] +
                       r")?(;|$)")
    tiny = re.compile(r"^tiny17;" + JAVA_ROOT + r"JvmTiny\.main" + g + ":" + t["CALL_LOOP"] + r";JvmTiny\.loop" + g +
                      "(:" + t["CALL_TINY"] + r")?;JvmTiny\.tiny" + g + "(:" + t["TINY"] + r")?(;[^@]*)?$")
    return (("java", "java", chain, re.compile(r"^jmain;(.*;)?JvmChain\.heavy@")),
            ("java_tiny", "java-tiny", tiny, re.compile(r"^tiny17;(.*;)?JvmTiny\.tiny@")))


def pprof_stacks(b64_lines, first="--thread"):
    """a case's pprof (base64 on the console) as pprof_stacks.py --thread lines (java's; with
    --comm, beam's: its frames with their lines, as a folded file's otherwise)"""
    with tempfile.NamedTemporaryFile(suffix=".pb.gz") as f:
        f.write(base64.b64decode("".join(b64_lines)))
        f.flush()
        out = subprocess.run([sys.executable, PPROF_STACKS, first, f.name], capture_output=True, text=True)
    stacks = []
    for l in out.stdout.splitlines():
        st, _, n = l.rpartition(" ")
        if n.isdigit():
            stacks.append((st, int(n)))
    return stacks
def lua_chain():
    """LuaJIT's known chain (tests/data/lua_chain.lua) as test_luajit.sh checks it: from _start
    through lua_pcall and the VM, each caller at its call line, gamma at any of its lines"""
    at, f = marked_lines("lua_chain.lua", "--"), r"@lua_chain\.lua:"
    return re.compile(r"^luajit;_start;__libc_start_main[^;]*;.*;lua_pcall;lj_vm;<main>" + f + at["CALL_ALPHA"] +
                      ";alpha" + f + at["CALL_BETA"] + r";obj:beta" + f + at["CALL_GAMMA"] + r";M\.gamma" + f +
                      r"[0-9]+(;[^;@]*)*$")


LUAJIT = lua_chain()


def beam_pattern():
    """erl_chain's whole chain (tests/data/erl_chain.erl), as test_beam.sh's chain check: the
    scheduler thread's root (clone3 -> start_thread -> the emulator's thread wrapper ->
    sched_thread_func, unnamed in the stripped arm64 libc), init's frames, then main -> alpha ->
    beta -> gamma, each at its call line ("% MARK" comments)"""
    marks = {}
    for n, l in enumerate(open(os.path.join(DATA, "erl_chain.erl")), 1):
        m = re.search(r"% ([A-Z_]+)$", l.rstrip())
        if m:
            marks.setdefault(m.group(1), []).append(str(n))
    c = {k: "(%s)" % "|".join(v) for k, v in marks.items()}
    f = r"@erl_chain\.erl:"
    return re.compile(r"^[^;]*;((__clone3|clone3|libc\.so\.6\+0x[0-9a-f]+);)?(start_thread|libc\.so\.6\+0x[0-9a-f]+);"
                      r"[^;@]*;[^;@]*;(process_main;)?init:do_boot/3;init:start_em/1;(init:start_it/1;)?"
                      r"erl_chain:main/1" + f + c["CALL_ALPHA"] + r";erl_chain:alpha/1" + f + c["CALL_BETA"] +
                      r";erl_chain:beta/1" + f + c["CALL_GAMMA"] + r";erl_chain:gamma/3" + f + r"[0-9]+(;[^;@]*)*$")


# each runtime column: case (guest_init.sh's), pattern, the samples it is a share of
RUNTIMES = (("go", GO, ";main.gamma"), ("perl", PERL, ";main::gamma"), ("ruby", RUBY, re.compile(r";(Worker#)?gamma(;|$)")),
            ("php", PHP, ";gamma"), ("php_jit", PHP, ";gamma"), ("php_jit_fn", PHP, ";gamma"),
            ("node", NODE, re.compile(r";gamma(;|$)")),
            ("node-jit", NODE, re.compile(r";gamma(;|$)")),
            ("luajit", LUAJIT, re.compile(r";M\.gamma@lua_chain\.lua:")),
            # BEAM (Debian 12's OTP 25, its JIT): of the samples in erl_chain:gamma/3
            ("beam", beam_pattern(), re.compile(r";erl_chain:gamma/3(@|;|$)")))
# PHP's JIT cases (opcache.jit=tracing, =function): the pcs in JIT code placed on execute_ex's
# frame and not placed, from the record summary's php line
JIT_PLACED = re.compile(r"JIT frames (\d+), JIT frames not placed (\d+)")
PY = re.compile(r"^python3\.11;_start;.*;_PyEval_EvalFrameDefault;<module>;a;b;c(;|$)")
PY_EVAL = re.compile(r";_PyRun_SimpleFileObject;(.*;)?_PyEval_EvalFrameDefault(;|$)")
# tests/data/py_many_code.py (the case python_deep, x86_64 rows): 150 Python frames above its
# leaf, all of them, in order, under the eval loop: on the tail-call walker runtime frames at
# any of its steps
PY_DEEP = re.compile(r";_PyEval_EvalFrameDefault;<module>;" + "".join("f%d;" % i for i in range(150)) + r"leaf(;|$)")
PY_DEEP_BASE = re.compile(r";leaf(;|$)")
VERIFIER = re.compile(r"verifier: (\w+): (?:processed (\d+) insns|verification time (\d+) usec)")


def contains(base):
    """a test of a folded stack: holds base (a string, or a pattern searched)"""
    return base.search if hasattr(base, "search") else (lambda s: base in s)


def share(stacks, pattern, base):
    within = contains(base)
    total = sum(n for s, n in stacks if within(s))
    good = sum(n for s, n in stacks if pattern.search(s))
    return ("%.3f" % (good / total) if total else "none"), total


# a kernel's report of trouble (loglevel=5 puts warnings and their backtraces on the console)
KERNEL_TROUBLE = re.compile(r"\] (BUG: .*|WARNING: .*|rcu: INFO: .*|Kernel panic .*|watchdog: .*)$")
TRACE_LINE = re.compile(r"\]  (\S+\+0x[0-9a-f]+/0x[0-9a-f]+)")


def no_result(path, arch, text):
    """the row of a boot that gave no result: the case it was running, the kernel's reports of
    trouble (a soft lockup...) and the functions of its first backtraces"""
    lines = [l for l in text.splitlines() if l.strip()]
    started = [l.split()[2:] for l in lines if l.startswith("KM time ") and " start " in l]
    ended = {l.split()[2] for l in lines if l.startswith("KM time ") and " end " in l}
    running = ["%s (from %s s)" % (f[0], f[2]) for f in started if f[0] not in ended]
    trouble = []
    for l in lines:
        m = KERNEL_TROUBLE.search(l)
        if m and m.group(1) not in trouble:
            trouble.append(m.group(1))
    print("%s %s boot=failed (no result on the console; running: %s; kernel: %s; its end: %s)" %
          (path, arch, ", ".join(running) or "no case", " | ".join(trouble[:6]) or "nothing",
           " | ".join(l[:160] for l in lines[-3:])))
    # the first backtraces' functions, a line each (the CPUs' stacks of a soft lockup)
    trace = [m.group(1) for l in lines for m in [TRACE_LINE.search(l)] if m]
    for i in range(0, min(len(trace), 96), 12):
        print("  trace " + " <- ".join(trace[i:i + 12]))
    return 1


def main():
    arch, path = sys.argv[1], sys.argv[2]
    text = open(path, errors="replace").read().replace("\r", "")
    if "KM-END" not in text:
        return no_result(path, arch, text)
    release, status, logs, folded, times, pprof = "?", {}, {}, {}, {}, {}
    for line in text.splitlines():
        f = line.split(" ", 3)
        if f[0] != "KM" or len(f) < 3:
            continue
        if f[1] == "kernel":
            release = f[2]
        elif f[1] == "status":
            status[f[2]] = f[3] if len(f) > 3 else "?"
        elif f[1] == "time" and len(f) == 4 and f[3].startswith(("start ", "end ")):
            which, _, secs = f[3].partition(" ")
            times.setdefault(f[2], {})[which] = float(secs)
        elif f[1] == "pprof" and len(f) == 4:
            pprof.setdefault(f[2], []).append(f[3])
        elif f[1] in ("log", "folded") and len(f) == 4:
            (logs if f[1] == "log" else folded).setdefault(f[2], []).append(f[3])
    stacks = {}
    for case, lines in folded.items():
        stacks[case] = []
        for l in lines:
            s, _, n = l.rpartition(" ")
            if n.isdigit():
                stacks[case].append((s, int(n)))
    # a runtime's case that also wrote a pprof file (beam, luajit: their frames' lines, which folded
    # files leave out) is measured on that
    for case, _, _ in RUNTIMES:
        if pprof.get(case):
            stacks[case] = pprof_stacks(pprof[case], "--comm")
    all_logs = logs.get("chain", []) + logs.get("python", [])
    ok = status.get("chain") == "0" and not any("refused the BPF programs" in l for l in all_logs)
    walker = "none" if not ok else "tail-call" if any("unwinding with tail calls" in l for l in all_logs) else "bpf_loop"
    chain, n_chain = share(stacks.get("chain", []), CHAIN, ";hot_leaf")
    py, n_py = share(stacks.get("python", []), PY, ";_PyRun_SimpleFileObject;")
    # the same of the samples running its bytecode (under _PyEval_EvalFrameDefault): python's
    # share also counts those that read and compile the script, with no Python frame to show
    # (what remains are samples in <module>'s own lines, complete but not in a;b;c)
    py_eval, _ = share(stacks.get("python", []), PY, PY_EVAL)
    # per-runtime columns (the arm64 row's roots carry them): NAME=share/samples, none when
    # the root has no such workload
    runtimes = []
    for case, pattern, base in RUNTIMES:
        if case in status:
            g, n_g = share(stacks.get(case, []), pattern, base)
            runtimes.append("%s=%s/%d" % (case, g if status[case] == "0" else "failed", n_g))
    java_worst = []
    for case, name, pattern, base in java_patterns():
        if case not in status:
            continue
        java = pprof_stacks(pprof[case]) if pprof.get(case) else []
        g, n_g = share(java, pattern, base)
        runtimes.append("%s=%s/%d" % (name, g if status[case] == "0" else "failed", n_g))
        java_worst += sorted(((n, st) for st, n in java if base.search(st) and not pattern.search(st)),
                             reverse=True)[:1]
    tc = [l for l in logs.get("chain_tc", []) if "unwinding with tail calls" in l]
    chain_tc, _ = share(stacks.get("chain_tc", []), CHAIN, ";hot_leaf")
    if walker == "tail-call" and "chain_tc" not in status:  # the chain case was the tail-call one
        tc, chain_tc, status["chain_tc"] = ["tail calls"], chain, status.get("chain")
    # off-CPU: ok when the recording ran and has stays off CPU of the sleeping shell; refused
    # when stackscope declined the kernel in a line of its own (no bpf_loop); else failed
    off_logs = logs.get("offcpu", [])
    if "offcpu" not in status:
        off_cpu = "none"
    elif status["offcpu"] == "0" and any("[off-cpu:" in st for st, _ in stacks.get("offcpu", [])):
        off_cpu = "ok"
    elif any("error:" in l and "refused the BPF programs" not in l for l in off_logs):
        off_cpu = "refused"
    else:
        off_cpu = "failed"
    jit = [0, 0, False]
    for case in ("php_jit", "php_jit_fn"):
        for l in logs.get(case, []):
            m = JIT_PLACED.search(l)
            if m:
                jit = [jit[0] + int(m.group(1)), jit[1] + int(m.group(2)), True]
    if jit[2]:
        runtimes.append("php-jit-placed=%d/%d" % (jit[0], jit[1]))
    entered = [m.group(1) for l in logs.get("chain", [])
               for m in [re.match(r"new mappings +(\d+) entered by eBPF", l)] if m]
    sampling = next(("per-task" if "per-task" in l else "per-cpu" for l in logs.get("forked", [])
                     if l.startswith("sampling ")), "none")
    forked, n_forked = share(stacks.get("forked", []), CHAIN, ";hot_leaf")
    runtimes += ["sampling=" + sampling]
    if "forked" in status:  # the x86_64 rows
        runtimes += ["forked-chain=%s/%d" % (forked if status["forked"] == "0" else "failed", n_forked)]
    if "python_deep" in status:
        deep, n_deep = share(stacks.get("python_deep", []), PY_DEEP, PY_DEEP_BASE)
        runtimes += ["python-deep=%s/%d" % (deep if status["python_deep"] == "0" else "failed", n_deep)]
    if "pid" in status:
        by_pid, n_pid = share(stacks.get("pid", []), CHAIN, ";hot_leaf")
        runtimes += ["pid-sampling=" + next(("per-task" if "per-task" in l else "per-cpu" for l in logs.get("pid", [])
                                             if l.startswith("sampling ")), "none"),
                     "pid-chain=%s/%d" % (by_pid if status["pid"] == "0" else "failed", n_pid)]
    print("%s %s programs=%s chain=%s python=%s walker=%s samples=%d/%d tail-call-chain=%s off-cpu=%s "
          "ebpf-mappings=%s python-eval=%s%s" %
          (release, arch, "ok" if ok else "failed", chain, py, walker, n_chain, n_py,
           chain_tc if tc and status.get("chain_tc") == "0" else "none", off_cpu,
           entered[0] if entered else "none", py_eval, "".join(" " + r for r in runtimes)))
    for case, label in (("chain", "verifier"), ("chain_tc", "verifier tail-call")):
        progs = {}
        for l in logs.get(case, []):
            m = VERIFIER.search(l)
            if m:
                p = progs.setdefault(m.group(1), ["?", "?"])
                if m.group(2):
                    p[0] = m.group(2)
                else:
                    p[1] = m.group(3)
        for name, (insns, us) in progs.items():
            print("  %s %s insns=%s time_us=%s" % (label, name, insns, us))
    # each case's guest time (guest_init.sh's KM time lines): what a case costs under TCG
    spans = ["%s=%.0fs" % (c, t["end"] - t["start"]) for c, t in times.items() if "start" in t and "end" in t]
    if spans:
        print("  cases " + " ".join(spans))
    for case, pattern, base in (("chain", CHAIN, ";hot_leaf"), ("chain_tc", CHAIN, ";hot_leaf"),
                                ("python", PY, ";_PyRun_SimpleFileObject;"),
                                ("python_deep", PY_DEEP, PY_DEEP_BASE)) + RUNTIMES:
        within = contains(base)
        worst = sorted(((n, st) for st, n in stacks.get(case, []) if within(st) and not pattern.search(st)),
                       reverse=True)
        if worst:
            print("  incomplete %s: %d %s" % (case, worst[0][0], worst[0][1][:300]))
    for n, st in java_worst:
        print("  incomplete java: %d %s" % (n, st[:600]))
    for case in ("chain", "python", "python_deep", "chain_tc", "offcpu", "java", "java_tiny", "forked", "pid") + tuple(r[0] for r in RUNTIMES):
        for l in logs.get(case, []):
            if "error:" in l:
                print("  error %s: %s" % (case, l))
    return 0


if __name__ == "__main__":
    sys.exit(main())
