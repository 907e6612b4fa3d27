#!/usr/bin/env python3
"""Print the stacks of a stackscope pprof file as folded lines, root first, with each
interpreter frame (a location without a mapping) written "function@file:line" (file basename;
":line" omitted when 0) and each native frame by function name only, then " count".
With --value=TYPE (before FILE), the count is the sample value of that sample type ("cpu",
"off_cpu"), else the first one.
With --comm (before FILE), each line starts with the sample's "comm" label, as in folded files;
with --thread, with its "thread_comm" label (the thread's name).
With --native-lines (before FILE), native frames that have a file are written the same way
(Go frames from .gopclntab, DWARF lines).
With --mark-inlined (before FILE), a frame that a compiler inlined into its caller (every line
of a location but its last) ends in "+inlined".
With --columns (before FILE), a frame whose Line has a column (V8's) is written
"function@file:line:column" (1-based, as pprof's Line.column).
With --labels (before FILE), the sample's other labels (goroutine pprof labels) follow, one
"[label: key=value]" each, sorted by key, as stackscope's folded files put them.
Used by the system tests to check the lines of interpreter frames; needs only the standard
library (a minimal protobuf reader for the fields of perftools.profiles.Profile we use).
"""
import gzip
import os
import sys


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wt == 1:
            v = buf[i:i + 8]
            i += 8
        elif wt == 5:
            v = buf[i:i + 4]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, wt, v


def varint(buf, i):
    shift = val = 0
    while True:
        b = buf[i]
        i += 1
        val |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return val, i


def ints(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def scalars(v):
    """The fields of message v by number, each with its last value (as a scalar field keeps)."""
    return dict((num, x) for num, wt, x in fields(v))


OWN_LABELS = ("pid", "tid", "comm", "thread_comm")


def main(path, with_comm=False, native_lines=False, label_key="comm", mark_inlined=False,
         with_labels=False, value_type=None, columns=False):
    data = open(path, "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, samples, locs, funcs, types = [], [], {}, {}, []
    for num, wt, v in fields(data):
        if num == 1:
            types.append(scalars(v).get(1, 0))
        elif num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 2:
            ids, vals, labels = [], [], []
            for n2, w2, v2 in fields(v):
                if n2 == 1:
                    ids += ints(w2, v2)
                elif n2 == 2:
                    vals += ints(w2, v2)
                elif n2 == 3:
                    label = scalars(v2)
                    labels.append((label.get(1, 0), label.get(2, 0)))
            samples.append((ids, vals, labels))
        elif num == 4:  # Location: id, mapping_id, Line { function_id, line, column }
            loc = scalars(v)
            lines = [scalars(v2) for n2, w2, v2 in fields(v) if n2 == 4]
            locs[loc.get(1, 0)] = ([(ln.get(1, 0), ln.get(2, 0), ln.get(3, 0)) for ln in lines],
                                   loc.get(2, 0))
        elif num == 5:  # Function: id, name, filename
            fn = scalars(v)
            funcs[fn.get(1, 0)] = (fn.get(2, 0), fn.get(4, 0))
    which = 0
    if value_type is not None:
        names = [strings[t] if t < len(strings) else "" for t in types]
        if value_type not in names:
            sys.exit("no sample type %r (has %s)" % (value_type, ", ".join(names)))
        which = names.index(value_type)
    agg = {}
    for ids, vals, labels in samples:
        count = vals[which] if which < len(vals) else 0
        names = []
        if with_comm:
            names.append(next((strings[v] for k, v in labels if strings[k] == label_key), "?"))
        if with_labels:
            names += sorted("[label: %s=%s]" % (strings[k], strings[v]) for k, v in labels
                            if strings[k] not in OWN_LABELS)
        for lid in reversed(ids):
            lines, mapping = locs.get(lid, ([], 0))
            for k, (fid, ln, col) in enumerate(reversed(lines)):
                name, fname = funcs.get(fid, (0, 0))
                text = strings[name] if name < len(strings) else "?"
                if (native_lines or not mapping) and fname and fname < len(strings) \
                        and strings[fname]:
                    text += "@" + os.path.basename(strings[fname])
                    if ln:
                        text += ":%d" % ln
                        if columns and col:
                            text += ":%d" % col
                if mark_inlined and k > 0:
                    text += "+inlined"
                names.append(text.replace(";", ":"))
        key = ";".join(names)
        agg[key] = agg.get(key, 0) + count
    for key, count in sorted(agg.items()):
        print("%s %d" % (key, count))


if __name__ == "__main__":
    opts = [a for a in sys.argv[1:-1] if a.startswith("--")]
    main(sys.argv[-1], with_comm="--comm" in opts or "--thread" in opts,
         native_lines="--native-lines" in opts,
         label_key="thread_comm" if "--thread" in opts else "comm",
         mark_inlined="--mark-inlined" in opts,
         value_type=next((a[len("--value="):] for a in opts if a.startswith("--value=")), None),
         with_labels="--labels" in opts, columns="--columns" in opts)
