#!/usr/bin/env python3
"""otlp_windows.py REQ_FILE...: how well a profile's own window (time_unix_nano, duration_nano:
what `stackscope serve --otlp-listen` keeps as the store interval's start and end) bounds the
timestamps of the samples it carries, over saved OTLP requests (otlp_receiver.py's files).
Prints one line: profiles, their median duration in s, timestamps, the timestamps outside
their profile's window, and the furthest one outside, in s (bench/reference.sh's question:
can the window of a run be cut at the store's intervals?)."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "system"))
from pprof_stacks import fields  # noqa: E402 (the minimal protobuf reader)
from otlp_profiles import sub  # noqa: E402

durations, stamps, outside, furthest = [], 0, 0, 0
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    for rp in sub(data, 1):
        for sp in sub(rp, 2):
            for prof in sub(sp, 2):
                start = dur = 0
                for n, wt, v in fields(prof):
                    if n == 3:
                        start = struct.unpack("<Q", v)[0] if wt == 1 else v
                    elif n == 4:
                        dur = v
                durations.append(dur)
                for smp in sub(prof, 2):
                    for n, wt, v in fields(smp):
                        if n != 5:
                            continue
                        ts = (struct.unpack("<%dQ" % (len(v) // 8), v) if wt == 2 else
                              [struct.unpack("<Q", v)[0] if wt == 1 else v])
                        for t in ts:
                            stamps += 1
                            off = start - t if t < start else t - (start + dur)
                            if off > 0:
                                outside += 1
                                furthest = max(furthest, off)
durations.sort()
print(len(durations), "%.2f" % (durations[len(durations) // 2] / 1e9 if durations else 0),
      stamps, outside, "%.2f" % (furthest / 1e9))
