# Python -> C (sorted, re.sub) -> Python callbacks, for tests/system/test_python.sh.
# The key function and the replacement function are the hot Python code; their frames must
# come out above the C frames that call them, themselves above the Python caller.
import re
import sys
import time

WORDS = ["w%d" % (i * 7919 % 1000) for i in range(2000)]
TEXT = " ".join(WORDS)
PATTERN = re.compile(r"w(\d+)")


def sort_key(word):
    n = 0
    for ch in word: n = n * 31 + ord(ch)  # KEY
    return n


def replace(m):
    n = 0
    for ch in m.group(1): n = n * 31 + ord(ch)  # REPL
    return str(n)


def sort_loop(end):
    while time.monotonic() < end:
        sorted(WORDS, key=sort_key)  # SORTED
        PATTERN.sub(replace, TEXT)  # SUB


sort_loop(time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2))
