# For tests/unit/test_python.c: a Python that describes some of its own code objects (their
# address is id(), CPython's object address) with what src/interp/python.c must read from
# them, then waits inside a Python function for a line on stdin, so the test reads its memory
# while a Python frame is live. Lines:
#   V <major> <minor>
#   C <code address> <cookie> <byte offset> <line> <filename> <name>
#       one per reporting function: its own frame's f_lasti and f_lineno at the report call;
#       cookie = co_firstlineno + (co_argcount << 24), what eBPF sends; name = co_qualname
#       (3.11+) or co_name
#   R   ready: the main thread is in wait() (on its readline) from now on
import sys


def report():
    f = sys._getframe(1)
    co = f.f_code
    cookie = (co.co_firstlineno + (co.co_argcount << 24)) & 0xFFFFFFFF
    name = getattr(co, "co_qualname", co.co_name)
    print("C", id(co), cookie, f.f_lasti, f.f_lineno, co.co_filename, name)


class Klass:
    def method(self, a, b):
        report()
        return a + b


def grüße(x):  # a Latin-1 name: compact, non-ASCII, 1 byte per character
    report()
    return x


def 数据(x, y, z):  # 2 bytes per character
    report()
    return x


def 𠀀():  # U+20000: 4 bytes per character
    report()


def deep(n):
    if n:
        return deep(n - 1)
    report()


def wait():
    report()
    sys.stdout.write("R\n")
    sys.stdout.flush()
    sys.stdin.readline()


print("V", sys.version_info[0], sys.version_info[1])
Klass().method(1, 2)
grüße(1)
数据(1, 2, 3)
𠀀()
deep(20)
report()
wait()
