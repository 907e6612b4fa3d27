# A chain of 150 distinct functions (one code object each), then a hot loop, for
# tests/system/test_python.sh: every sample holds 150 code objects, so a symbol cache where
# two of them evict each other reads the process again on every sample, and once the process
# has exited, cannot: the check counts the reads and the markers.
import sys
import time

DEPTH = 150
src = []
for i in range(DEPTH):
    callee = "f%d(end)" % (i + 1) if i + 1 < DEPTH else "leaf(end)"
    src.append("def f%d(end):\n    return %s\n" % (i, callee))
exec("".join(src))


def leaf(end):
    x = 0
    while time.monotonic() < end: x += 1  # LEAF
    return x


f0(time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2))
