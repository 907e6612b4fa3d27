# Workload of tests/system/test_source_heat.sh: functions whose code objects name the files
# given (compile()'s filename: a script controls the paths its frames carry, so the source view
# must treat them as hostile), each burning CPU on its line 5, in turn:
#   py_source_heat.py SECONDS NAME=PATH...
import sys
import time

SRC = "import time\n\n\ndef {0}(end):\n    while time.monotonic() < end: pass  # HOT {0}\n"


def main():
    fns = []
    for spec in sys.argv[2:]:
        name, path = spec.split("=", 1)
        ns = {}
        exec(compile(SRC.format(name), path, "exec"), ns)
        fns.append(ns[name])
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        for fn in fns:
            fn(time.monotonic() + 0.02)


main()
