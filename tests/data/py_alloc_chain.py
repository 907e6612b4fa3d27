# Allocations from known Python call chains (tests/system/test_alloc_allocators.sh):
#   main -> alloc_hot allocates three times what main -> alloc_cold does, in 4 MiB bytes
#   objects (PyObject_Calloc, then calloc inside it: one allocation, counted once), each
#   freed at once; main -> leak_big keeps 16 of them; main -> leak_small keeps COUNT small
#   ones (pymalloc's own pools). It ends with os._exit: what it keeps stays allocated (a
#   normal exit would free it during the interpreter's finalization).
# Writes the truth (bytes per chain, sys.getsizeof) to TRUTH_FILE.
# Usage: py_alloc_chain.py SCALE COUNT TRUTH_FILE
import itertools
import os
import sys
import time

BIG = 4 << 20
SMALL = 400
KEPT = []


def alloc_hot(n):
    total = 0
    for _ in range(n):
        b = bytes(BIG)
        total += sys.getsizeof(b)
        del b
    return total


def alloc_cold(n):
    total = 0
    for _ in range(n):
        b = bytes(BIG)
        total += sys.getsizeof(b)
        del b
    return total


def leak_big(n):
    total = 0
    for _ in range(n):
        b = bytes(BIG)
        total += sys.getsizeof(b)
        KEPT.append(b)
    return total


def leak_small(n):
    # one allocation a turn: no int made per turn (range's past 256, a running total), each
    # of which a probe traps too (~7 traps a turn took 5 s of 20,000 turns on a loaded box)
    size = sys.getsizeof(bytes(SMALL))
    for _ in itertools.repeat(None, n):
        KEPT.append(bytes(SMALL))
    return size * n


def main():
    scale, count = int(sys.argv[1]), int(sys.argv[2])
    KEPT.extend([None] * (count + 16))  # the list's own growth stays out of the leaks
    del KEPT[:]
    hot = alloc_hot(3 * scale)
    cold = alloc_cold(scale)
    big = leak_big(16)
    small = leak_small(count)
    with open(sys.argv[3], "w") as f:
        f.write("hot %d\ncold %d\nleak_big %d\nleak_small %d\n" % (hot, cold, big, small))
    sys.stdout.flush()
    # alive a moment more: the last frames (leak_small's, leak_big's) are named from this
    # process's code objects, read while it lives (after its exit they are unreadable)
    time.sleep(1)
    os._exit(0)


main()
