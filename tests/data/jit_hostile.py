#!/usr/bin/env python3
# Hostile look-alikes of the JIT runtimes (issue 39), written as sources the host's own
# toolchains build (tests/system/test_hostile_jit.sh): real programs that make a profiler's
# work per frame as large as the runtime allows, and their benign peers (the same chains with
# ordinary bodies), measured against each other in one run.
#
#   java N DEPTH hostile|plain  -> HostileJit.java and H<i>.java: N methods H<i>.h in DEPTH-deep
#       chains, run by two threads; hostile: each has ~2,600 dead statements nine lines apart (a ~7.9 KiB compressed line table of
#       escaped pairs, its bytecode over HotSpot's 8,000-byte JIT limit: interpreted for good),
#       the call to the next method after them (the walk to its bci crosses the whole table)
#   node N DEPTH hostile|plain  -> hostile_jit.js: N functions with 500-character names; hostile:
#       each has 15,000 dead statements (a source-position table under the 64 KiB read, 8 MB of source),
#       the call to the next one after them
#   go N DEPTH hostile|plain    -> main.go: N functions calling the next at 128 call sites (the
#       argument of each call an 8-deep chain of inlined helpers): DEPTH-deep stacks of more
#       distinct return addresses than a profile's frame cache holds; hostile: 4,000 dead
#       statements before the calls (long pc-value tables, walked from the function's start)
# Usage: jit_hostile.py RUNTIME N DEPTH MODE OUTDIR
import os
import sys

runtime, n, depth, mode, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
hostile = mode == "hostile"


def java():
    # one class per method: a class file's lines are u2, and each table restarts at its line 1
    for i in range(n):
        nxt = (i + 1) % n
        lines = ["class H%d {" % i, "  static long h(int k, int d) {"]
        if hostile:
            lines.append("    if (d < 0) {")
            for s in range(2600):
                lines.append("      HostileJit.sink += %d;" % (s % 5 + 1))
                lines.extend([""] * 8)
            lines.append("    }")
        lines.append("    if (d > 0) return H%d.h(k, d - 1);" % nxt)
        lines.append("    return HostileJit.burn(k);")
        lines.append("  }")
        lines.append("}")
        with open(os.path.join(out, "H%d.java" % i), "w") as f:
            f.write("\n".join(lines) + "\n")
    lines = [
        "public class HostileJit {",
        "  static volatile long sink;",
        "  static long burn(int k) {",
        "    long x = k;",
        "    for (int i = 0; i < 3000000; i++) x += i ^ (x >>> 3);",
        "    return x;",
        "  }",
        "  public static void main(String[] a) throws Exception {",
        "    long end = System.nanoTime() + (long) (Double.parseDouble(a[0]) * 1e9);",
        "    long[] k = new long[2];",
        "    Thread[] t = new Thread[2];",  # two threads: twice the frames a second
        "    for (int i = 0; i < 2; i++) {",
        "      final int me = i;",
        "      t[i] = new Thread(() -> { while (System.nanoTime() < end) sink += H0.h((int) k[me]++, %d); });" % depth,
        "      t[i].start();",
        "    }",
        "    for (Thread x : t) x.join();",
        '    System.out.println("chains " + (k[0] + k[1]));',
        "  }",
        "}",
    ]
    with open(os.path.join(out, "HostileJit.java"), "w") as f:
        f.write("\n".join(lines) + "\n")


def node():
    prefix = "hostile_" + "x" * 500
    lines = ["'use strict';", "let sink = 0;"]
    for i in range(n):
        nxt = (i + 1) % n
        lines.append("function %s%d(k, d) {" % (prefix, i))
        if hostile:
            lines.append("  if (d < 0) {")
            body = ["    sink += %d;" % (s % 5 + 1) for s in range(15000)]
            lines.extend(body)
            lines.append("  }")
        lines.append("  if (d > 0) return %s%d(k, d - 1);" % (prefix, nxt))
        lines.append("  return burn(k);")
        lines.append("}")
    lines += [
        "function burn(k) {",
        "  let x = k;",
        "  for (let i = 0; i < 3000000; i++) x += i ^ (x >>> 3);",
        "  return x;",
        "}",
        "const end = Date.now() + Number(process.argv[2]) * 1000;",
        "let k = 0;",
        "while (Date.now() < end) sink += %s0(k++, %d);" % (prefix, depth),
        "console.log('chains', k);",
    ]
    with open(os.path.join(out, "hostile_jit.js"), "w") as f:
        f.write("\n".join(lines) + "\n")


def go():
    lines = ["package main", "", 'import ("fmt"; "os"; "strconv"; "time")', "", "var sink int"]
    lines.append("//go:noinline\nfunc burn(k int) int { x := k; for i := 0; i < 3000000; i++ { x += i ^ (x >> 3) }; return x }")
    lines.append("func leaf(k int) int { return k*7 + 1 }")
    for j in range(8):  # an inline chain: in<j> calls in<j-1> ... calls leaf, all inlined
        callee = "leaf" if j == 0 else "in%d" % (j - 1)
        lines.append("func in%d(k int) int { return %s(k+%d) + 1 }" % (j, callee, j))
    for i in range(n):
        nxt = (i + 1) % n
        lines.append("//go:noinline\nfunc h%d(k, d int) int {" % i)
        if hostile:
            lines.append("\tif d < 0 {")
            for s in range(4000):
                lines.append("\t\tsink += k * %d" % s)
            lines.append("\t}")
        # SITES call sites each: 400-deep stacks of n * SITES distinct return addresses, more
        # than a profile's frame cache holds
        lines.append("\tif d > 0 {")
        lines.append("\t\tswitch (k + d) %% %d {" % SITES)
        for c in range(SITES):
            lines.append("\t\tcase %d:\n\t\t\treturn h%d(k+in7(k), d-1)" % (c, nxt))
        lines.append("\t\t}")
        lines.append("\t}")
        lines.append("\treturn burn(k)")
        lines.append("}")
    lines += [
        "func main() {",
        "\tsecs, _ := strconv.ParseFloat(os.Args[1], 64)",
        "\tend := time.Now().Add(time.Duration(secs * float64(time.Second)))",
        "\tk := 0",
        "\tfor time.Now().Before(end) { sink += h0(k, %d); k++ }" % depth,
        '\tfmt.Println("chains", k)',
        "}",
    ]
    with open(os.path.join(out, "main.go"), "w") as f:
        f.write("\n".join(lines) + "\n")


SITES = 128
{"java": java, "node": node, "go": go}[runtime]()
