#!/usr/bin/env python3
"""Evaluate a Python expression over an answer of stackscope serve's JSON API (docs/API.md):

  serve_json.py FILE EXPR

EXPR sees `j` (the answer) and, for flamegraph and diff answers:
  chain(RE, key="v")  sum of `key` ("v", or "v2" for a diff's second side) over the nodes whose
                      path from the root ("a;b;c", root excluded) matches the regex RE
                      (re.search); nodes under a matching node are not counted again
  nodes(NAME)         the nodes named NAME
and prints the result (booleans as 1/0). Standard library only.
"""
import json
import re
import sys

j = json.load(open(sys.argv[1]))


def _walk(n, path, out):
    name = j["names"][n["n"]]
    p = path + [name] if path is not None else []
    out.append((n, p))
    for c in n.get("c", []):
        _walk(c, p, out)
    return out


def chain(regex, key="v"):
    rx = re.compile(regex)

    def go(n, path):
        name = j["names"][n["n"]]
        p = path + [name] if path is not None else []
        if path is not None and rx.search(";".join(p)):
            return n.get(key, 0)
        return sum(go(c, p) for c in n.get("c", []))

    return go(j["root"], None)


def nodes(name):
    return [n for n, p in _walk(j["root"], None, []) if p and p[-1] == name]


r = eval(sys.argv[2])
print(int(r) if isinstance(r, bool) else r)
