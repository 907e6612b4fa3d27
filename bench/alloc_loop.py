# bench/alloc.sh's Python allocation loop: N small dicts and strings (pymalloc), 1024 live at
# a time. Writes its pid to GO.pid, waits for the file GO, writes the loop's CPU seconds (user
# + system) to GO.time.
# Usage: alloc_loop.py N GO
import os
import resource
import sys
import time

n, go = int(sys.argv[1]), sys.argv[2]
with open(go + ".pid", "w") as f:
    f.write("%d\n" % os.getpid())
while not os.path.exists(go):
    time.sleep(0.001)
def cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


t0 = cpu()
ring = [None] * 1024
for i in range(n):
    ring[i & 1023] = {"k": str(i), "v": i * 3}
t1 = cpu()
with open(go + ".time", "w") as f:
    f.write("%.6f\n" % (t1 - t0))
