# A hostile Python process (issue 39, items 1-2), made of real code objects: N functions that
# share one code body but each is its own code object, named f0..f<N-1>, each with the same
# 1 MiB line table: 512 KiB of zero-width (0, 0) pairs (a walk from the start of the table
# crosses them all for every frame), then 256 Ki one-byte ranges each on a new line (an index
# of them grows without bound). The main loop calls DEPTH-deep chains through them, rotating
# so that every code object is sampled, and burns CPU at the bottom. Python 3.8-3.9 (co_lnotab:
# the format whose zero-width pairs the profiler walked per frame).
# Usage: python3 py_hostile_lines.py N DEPTH SECONDS [plain]
# (plain: the same chains with the functions' own line tables, the benign peer of a benchmark)
import sys
import time
import types

N, DEPTH, SECONDS = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
TABLE = bytes(512 * 1024) + bytes([1, 1]) * (256 * 1024)
PLAIN = sys.argv[4:] == ["plain"]


def burn():
    x = 0
    for i in range(20000):
        x += i
    return x


def body(k, d):
    if d:
        return fns[(k + d) % N](k, d - 1)
    return burn()


fns = [
    types.FunctionType(
        body.__code__.replace(co_name="f%d" % i, **({} if PLAIN else {"co_lnotab": TABLE})),
        globals(),
    )
    for i in range(N)
]
sys.setrecursionlimit(DEPTH + 100)
end = time.monotonic() + SECONDS
k = 0
while time.monotonic() < end:
    fns[k % N](k, DEPTH)
    k += 1
print("chains", k)
