#!/usr/bin/env python3
"""otlp_file.py: what an OpenTelemetry Collector's file exporter wrote (format: proto: each
ProfilesData message behind its length, 4 bytes big-endian), for tests/system/test_collector.sh.
ProfilesData has the layout of ExportProfilesServiceRequest (resource_profiles = 1,
dictionary = 2), so each message is also what tests/system/otlp_profiles.py reads.

  otlp_file.py split FILE DIR     one file per message, DIR/NAME-NNNNN.pb (NAME: FILE's, without
                                  its extension); prints their count
                                  (a truncated last message: exit 1)
  otlp_file.py facts MSG...       one line per fact:
      profile START_NS DURATION_NS SAMPLES    each profile (SAMPLES: its timestamps, or the
                                              sum of its values where it has none)
      interval START_NS SAMPLES               each message's profiles summed, in the order of
                                              the messages (one request of the agent holds one
                                              interval; START_NS: its earliest profile's)
      resource PID KEY=VALUE                  each resource attribute of each process
      bad WHAT DETAIL                         a broken invariant of the dictionary: index 0 not
                                              the zero value, an index out of its table, a
                                              sample without a stack, a duplicate key
  otlp_file.py stacks PID MSG...  the CPU samples of process PID as folded lines "root;...;leaf
                                  COUNT", summed over the messages; a location without lines
                                  named FILE+0xADDRESS (its mapping's file), as the agent's
                                  store and pprof output name it (src/profile/profile.c)
Needs only the standard library (pprof_stacks.py's protobuf reader)."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pprof_stacks import fields, ints  # noqa: E402

# ProfilesDictionary tables (field number: name) and what indexes them
TABLES = {1: "mapping", 2: "location", 3: "function", 4: "link", 5: "string",
          6: "attribute", 7: "stack"}


def split(path, out):
    data = open(path, "rb").read()
    prefix = os.path.splitext(os.path.basename(path))[0]
    os.makedirs(out, exist_ok=True)
    i = n = 0
    while i < len(data):
        if i + 4 > len(data):
            sys.exit("%s: %d stray bytes at the end" % (path, len(data) - i))
        (size,) = struct.unpack(">I", data[i:i + 4])
        if i + 4 + size > len(data):
            sys.exit("%s: message %d truncated" % (path, n))
        with open(os.path.join(out, "%s-%05d.pb" % (prefix, n)), "wb") as f:
            f.write(data[i + 4:i + 4 + size])
        i += 4 + size
        n += 1
    print(n)


def sub(buf, num):
    return [v for n, wt, v in fields(buf) if n == num]


def packed(buf, num):
    out = []
    for n, wt, v in fields(buf):
        if n == num:
            out += ints(wt, v)
    return out


def one_int(buf, num):
    return next((v for n, wt, v in fields(buf) if n == num and wt == 0), 0)


def fixed64(buf, num):
    return next((struct.unpack("<Q", v)[0] for n, wt, v in fields(buf) if n == num and wt == 1), 0)


def anyvalue(buf, strings):
    """An AnyValue's string, bool or int (string_value_strindex resolved)."""
    for n, wt, v in fields(buf):
        if n == 1:
            return v.decode("utf-8", "replace")
        if n in (2, 3):
            return v
        if n == 8:
            return strings[v] if 0 <= v < len(strings) else "?strindex"
    return None


def keyvalue(buf, strings):
    """A KeyValue as (key, value): the key inline or, as a Collector writes it since
    opentelemetry-proto v1.11, key_strindex into the dictionary's string table."""
    key = (sub(buf, 1) or [b""])[0].decode("utf-8", "replace")
    if not key:
        i = one_int(buf, 3)
        key = strings[i] if 0 <= i < len(strings) else "?strindex"
    return key, anyvalue((sub(buf, 2) or [b""])[0], strings)


def zero(buf):
    """Whether a message is its zero value: every field 0 or empty (nested ones too)."""
    try:
        items = list(fields(buf))
    except (ValueError, IndexError):
        return False
    for n, wt, v in items:
        if wt == 0 and v:
            return False
        if wt in (1, 5) and any(v):
            return False
        if wt == 2 and v and any(v) and not zero(v):
            return False
    return True


def facts(path):
    data = open(path, "rb").read()
    name = os.path.basename(path)
    dic = (sub(data, 2) or [b""])[0]
    tab = {t: sub(dic, num) for num, t in TABLES.items()}
    strings = [v.decode("utf-8", "replace") for v in tab["string"]]

    def bad(what, detail):
        print("bad %s %s:%s" % (what, name, detail))

    def check(table, idx, where):
        if not 0 <= idx < len(tab[table]):
            bad("index", "%s %s[%d] of %d" % (where, table, idx, len(tab[table])))

    for t, rows in tab.items():
        if not rows:
            bad("empty_table", t)
        elif rows[0] not in (b"", "") and (t == "string" or not zero(rows[0])):
            bad("zero_value", t)
    for i, m in enumerate(tab["mapping"]):
        check("string", one_int(m, 4), "mapping %d" % i)
        for a in packed(m, 5):
            check("attribute", a, "mapping %d" % i)
    for i, loc in enumerate(tab["location"]):
        check("mapping", one_int(loc, 1), "location %d" % i)
        for ln in sub(loc, 3):
            check("function", one_int(ln, 1), "location %d" % i)
        for a in packed(loc, 4):
            check("attribute", a, "location %d" % i)
    for i, fn in enumerate(tab["function"]):
        for f in (1, 2, 3):
            check("string", one_int(fn, f), "function %d" % i)
    for i, a in enumerate(tab["attribute"]):
        check("string", one_int(a, 1), "attribute %d" % i)
    for i, st in enumerate(tab["stack"]):
        for li in packed(st, 1):
            check("location", li, "stack %d" % i)
    for rp in sub(data, 1):
        pid, attrs = None, []
        for res in sub(rp, 1):
            for kv in sub(res, 1):
                key, val = keyvalue(kv, strings)
                attrs.append((key, val))
                if key == "process.pid":
                    pid = val
        keys = [k for k, _ in attrs]
        if len(keys) != len(set(keys)):
            bad("dup_keys", "resource of pid %s" % pid)
        for k, v in attrs:
            print("resource %s %s=%s" % (pid, k, v))
        for sp in sub(rp, 2):
            for prof in sub(sp, 2):
                start, dur, total = fixed64(prof, 3), one_int(prof, 4), 0
                for a in packed(prof, 11):
                    check("attribute", a, "profile")
                for s in sub(prof, 2):
                    si = one_int(s, 1)
                    check("stack", si, "sample")
                    if si == 0:
                        bad("no_stack", "sample")
                    akeys = []
                    for a in packed(s, 2):
                        check("attribute", a, "sample")
                        if 0 <= a < len(tab["attribute"]):
                            akeys.append(one_int(tab["attribute"][a], 1))
                    if len(akeys) != len(set(akeys)):
                        bad("dup_keys", "sample")
                    ts = sum(len(v) // 8 if wt == 2 else 1 for n, wt, v in fields(s) if n == 5)
                    total += ts if ts else sum(packed(s, 4))
                print("profile %d %d %d" % (start, dur, total))
                yield start, total


def stacks(path, want_pid, out):
    data = open(path, "rb").read()
    dic = (sub(data, 2) or [b""])[0]
    strings = [v.decode("utf-8", "replace") for v in sub(dic, 5)]
    funcs = [one_int(f, 1) for f in sub(dic, 3)]
    maps = [one_int(m, 4) for m in sub(dic, 1)]
    locs = []
    for loc in sub(dic, 2):
        names = [strings[funcs[one_int(ln, 1)]] for ln in sub(loc, 3)]
        if not names:
            f = strings[maps[one_int(loc, 1)]] if one_int(loc, 1) else ""
            names = ["%s+0x%x" % (os.path.basename(f) or "[unknown]", one_int(loc, 2))]
        locs.append(list(reversed(names)))  # lines[0] is the innermost: root first here
    st = [packed(x, 1) for x in sub(dic, 7)]
    for rp in sub(data, 1):
        pid = None
        for res in sub(rp, 1):
            for kv in sub(res, 1):
                k, v = keyvalue(kv, strings)
                if k == "process.pid":
                    pid = v
        if pid != want_pid:
            continue
        for sp in sub(rp, 2):
            for prof in sub(sp, 2):
                if strings[one_int((sub(prof, 1) or [b""])[0], 1)] != "samples":
                    continue
                for smp in sub(prof, 2):
                    frames = []
                    for li in reversed(st[one_int(smp, 1)]):
                        frames += locs[li]
                    ts = sum(len(v) // 8 if wt == 2 else 1 for n, wt, v in fields(smp) if n == 5)
                    key = ";".join(f.replace(";", ":") for f in frames)
                    out[key] = out.get(key, 0) + (ts or sum(packed(smp, 4)))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "split":
        split(sys.argv[2], sys.argv[3])
        return
    if len(sys.argv) >= 3 and sys.argv[1] == "stacks":
        out = {}
        for p in sys.argv[3:]:
            stacks(p, int(sys.argv[2]), out)
        for k in sorted(out):
            print(k, out[k])
        return
    if len(sys.argv) < 2 or sys.argv[1] != "facts":
        sys.exit(__doc__)
    intervals = []
    for p in sys.argv[2:]:
        profs = list(facts(p))
        if profs:
            intervals.append((min(s for s, _ in profs), sum(n for _, n in profs)))
    for start, total in intervals:
        print("interval %d %d" % (start, total))


main()
