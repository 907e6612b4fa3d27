# One thread burns CPU in Python while others sleep with the GIL released, and one spins in
# C code (zlib) with the GIL released, for tests/system/test_python.sh.
import sys
import threading
import time
import zlib

DATA = bytes(range(256)) * 4096


def sleeper(end):
    while time.monotonic() < end:
        time.sleep(0.05)  # SLEEP


def compressor(end):
    while time.monotonic() < end:
        zlib.compress(DATA, 9)  # ZLIB


def spinner(end):
    x = 0
    while time.monotonic() < end: x += 1  # SPIN
    return x


end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2)
threads = [threading.Thread(target=sleeper, args=(end,), name="sleeper%d" % i) for i in range(3)]
threads.append(threading.Thread(target=compressor, args=(end,), name="compressor"))
for t in threads:
    t.start()
spinner(end)
for t in threads:
    t.join()
