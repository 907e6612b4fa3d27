# A pre-fork server in Python (gunicorn, multiprocessing's fork start method): the parent
# settles for 0.3 s, then forks argv[1] children one after another (no exec), each running
# work -> a -> b -> c in its hot loop (one line, marked HOT) for argv[2] ms, then exiting.
import os
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


def work(ms):
    a(time.monotonic() + ms / 1000.0)  # CALL_WORK
    os._exit(0)


def serve(n, ms):
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            work(ms)  # CALL_SERVE
        os.waitpid(pid, 0)


time.sleep(0.3)
serve(int(sys.argv[1]), float(sys.argv[2]))  # CALL_MODULE
