# Python recursion 600 deep, then a hot loop, for tests/system/test_python.sh: the stack is
# either complete or ends in an explicit truncation marker.
import sys
import time

sys.setrecursionlimit(5000)


def down(n, end):
    if n:
        return down(n - 1, end)  # RECURSE
    x = 0
    while time.monotonic() < end: x += 1  # DEEP
    return x


down(600, time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2))
