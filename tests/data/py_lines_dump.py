# Dumps, for tests/unit/test_python_lines.c, what the running interpreter itself says about
# the lines of every instruction of a few stdlib modules (compiled from source here):
#   V <major> <minor>
#   C <firstlineno> <line table as hex> <line of offset 0> <line of offset 2> ...
# Lines come from dis.findlinestarts() (3.8/3.9: the co_lnotab semantics) or co_lines()
# (3.10+); -1 = no line. Offsets are bytes, one per 2-byte code unit.
import dis
import importlib.util
import sys

MODULES = ["argparse", "json.decoder", "textwrap", "dis", "difflib"]


def lines_of(co):
    size = len(co.co_code)
    out = [-1] * (size // 2)
    if hasattr(co, "co_lines"):
        for start, end, line in co.co_lines():
            for off in range(start, min(end, size), 2):
                out[off // 2] = -1 if line is None else line
    else:
        starts = list(dis.findlinestarts(co))
        j, cur = 0, co.co_firstlineno
        for i in range(len(out)):
            while j < len(starts) and starts[j][0] <= i * 2:
                cur = starts[j][1]
                j += 1
            out[i] = cur
    return out


def walk(co):
    table = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
    print("C", co.co_firstlineno, table.hex() or "-", " ".join(map(str, lines_of(co))))
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            walk(c)


print("V", sys.version_info[0], sys.version_info[1])
for name in MODULES:
    path = importlib.util.find_spec(name).origin
    with open(path, "rb") as f:
        walk(compile(f.read(), path, "exec"))
