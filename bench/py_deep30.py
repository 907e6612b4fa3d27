# Workload for bench/python.sh: <module> -> down() recursing 30 Python frames deep -> a hot
# loop in the innermost frame, for a fixed amount of work (argv[1] iterations, default 3e6)
# so that its run time can be compared with and without a profiler. The hot loop is one line
# (marked HOT) so every sample in the leaf has that exact line. At exit it appends
# "wall_s cpu_s" of its own (perf_counter, RUSAGE_SELF user+sys) to argv[2] when given.
import resource
import sys
import time

DEPTH = 30


def down(n, iters):
    if n > 1:
        return down(n - 1, iters)  # RECURSE
    x = 0
    for _ in range(iters): x += 1  # HOT
    return x


t0 = time.perf_counter()
down(DEPTH, int(float(sys.argv[1])) if len(sys.argv) > 1 else 3000000)  # CALL_MODULE
wall = time.perf_counter() - t0
if len(sys.argv) > 2:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    with open(sys.argv[2], "a") as f:
        f.write("%.4f %.4f\n" % (wall, ru.ru_utime + ru.ru_stime))
