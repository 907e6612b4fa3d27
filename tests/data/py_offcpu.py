# Known blocking chain for tests/system/test_offcpu.sh: <module> -> wait_a -> wait_b -> sleep,
# ROUNDS sleeps of 5 ms; prints the wall time spent in time.sleep, in ns, to argv[1].
import sys
import time

ROUNDS = 60


def wait_b():
    t0 = time.monotonic_ns()
    time.sleep(0.005)  # SLEEP
    return time.monotonic_ns() - t0


def wait_a():
    return wait_b()  # CALL_B


def main():
    end = time.monotonic() + 0.3  # warm up on CPU: the profiler reads the mappings meanwhile
    while time.monotonic() < end:
        pass
    total = 0
    for _ in range(ROUNDS):
        total += wait_a()  # CALL_A
    with open(sys.argv[1], "w") as f:
        f.write("sleep %d\n" % total)


main()  # CALL_MODULE
