# A process that lives 150 ms, for tests/system/test_python.sh: its code objects are gone with
# it, so its frames can be named only if the profiler reads its samples while it runs.
import time


def burn_short():
    end = time.monotonic() + 0.15
    x = 0
    while time.monotonic() < end: x += 1  # BURN


burn_short()
