# Known call chain for tests/system/test_python.sh: <module> -> a -> b -> c -> the hot loop.
# The hot loop is one line (marked HOT) so every sample in c has that exact line.
import sys
import time


def c(end):
    x = 0
    while time.monotonic() < end: x += 1  # HOT
    return x


def b(end):
    return c(end)  # CALL_B


def a(end):
    return b(end)  # CALL_A


a(time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2))  # CALL_MODULE
