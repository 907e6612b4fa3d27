#!/usr/bin/env python3
"""otlp_trace_facts.py PROTO_DIR REQ_DIR: the span links and attributes of the samples in the
OTLP requests otlp_receiver.py saved in REQ_DIR (its requests.jsonl, answered "ok"), each
decoded by `protoc --decode` against the .proto files under PROTO_DIR: a request protoc cannot
decode counts as failed, a field it does not know (printed by number) as unknown.

Prints tab-separated lines:
  requests N / decode_failed N / unknown_fields N
  sample PID WORK TRACE_ID SPAN_ID COUNT ATTRS REQ TS   per sample: WORK the innermost
      frame named work_* ("-": none), the ids of the sample's Link in hex ("-": link 0, none),
      COUNT its values' sum (or its timestamps' count), ATTRS its attributes "k=v" joined by
      "|" (sorted), REQ the request's number (the receiver's n), TS 0; a sample with as many
      timestamps as its count is one line per timestamp instead (COUNT 1, TS the time in ns)
  resource PID KEY VALUE                         each resource's attributes, once per request
"""
import codecs
import glob
import json
import os
import re
import subprocess
import sys

MSG = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
OPEN = re.compile(r"^(\S+) \{$")


def tree(text, facts):
    """protoc's text format as nested dicts of lists; counts fields known by number only"""
    stack = [{}]
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        m = OPEN.match(s)
        if m:
            facts["unknown_fields"] += m.group(1)[0].isdigit()
            child = {}
            stack[-1].setdefault(m.group(1), []).append(child)
            stack.append(child)
        elif s == "}":
            stack.pop()
        else:
            k, _, v = s.partition(": ")
            facts["unknown_fields"] += k[0].isdigit()
            if v.startswith('"'):
                v = codecs.escape_decode(v[1:-1].encode())[0]
            elif re.fullmatch(r"-?\d+", v):
                v = int(v)
            stack[-1].setdefault(k, []).append(v)
    return stack[0]


def one(node, key, default=None):
    return (node.get(key) or [default])[0]


def text(b):
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)


def any_value(v):
    for k in ("string_value", "int_value", "bool_value", "double_value"):
        if k in v:
            return text(v[k][0])
    return "?"


def main():
    proto_dir, req_dir = sys.argv[1], sys.argv[2]
    protos = sorted(glob.glob(os.path.join(proto_dir, "**", "*.proto"), recursive=True))
    facts = {"requests": 0, "decode_failed": 0, "unknown_fields": 0}
    out = []
    entries = [json.loads(line) for line in open(os.path.join(req_dir, "requests.jsonl"))]
    for e in sorted((e for e in entries if e.get("answer") == "ok"), key=lambda e: e["n"]):
        facts["requests"] += 1
        raw = open(os.path.join(req_dir, e["file"]), "rb").read()
        p = subprocess.run(["protoc", "--decode=" + MSG, "-I", proto_dir] + protos, input=raw,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode:
            facts["decode_failed"] += 1
            sys.stderr.write("%s: %s\n" % (e["file"], p.stderr.decode()[:300]))
            continue
        req = tree(p.stdout.decode("utf-8", "replace"), facts)
        d = one(req, "dictionary", {})
        strs = [text(s) for s in d.get("string_table", [])]
        t = {k: d.get(k, []) for k in ("location_table", "function_table", "link_table",
                                       "attribute_table", "stack_table")}

        def at(table, i):
            return t[table][i] if isinstance(i, int) and 0 <= i < len(t[table]) else {}

        def s(i):
            return strs[i] if isinstance(i, int) and 0 <= i < len(strs) else "?"

        def work(stack_i):
            for li in at("stack_table", stack_i).get("location_indices", []):
                for ln in at("location_table", li).get("lines", []):
                    name = s(one(at("function_table", one(ln, "function_index", 0)),
                                 "name_strindex", 0))
                    if name.startswith("work_"):
                        return name
            return "-"

        for rp in req.get("resource_profiles", []):
            res = {text(one(kv, "key", b"")): any_value(one(kv, "value", {}))
                   for kv in one(rp, "resource", {}).get("attributes", [])}
            pid = res.get("process.pid", "0")
            for k, v in sorted(res.items()):
                out.append("resource\t%s\t%s\t%s" % (pid, k, v))
            for sp in rp.get("scope_profiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        link = at("link_table", one(smp, "link_index", 0))
                        trace = one(link, "trace_id", b"").hex() or "-"
                        span = one(link, "span_id", b"").hex() or "-"
                        attrs = sorted("%s=%s" % (s(one(a, "key_strindex", 0)),
                                                  any_value(one(a, "value", {})))
                                       for a in (at("attribute_table", i)
                                                 for i in smp.get("attribute_indices", [])))
                        vals = smp.get("values", [])
                        ts = smp.get("timestamps_unix_nano", [])
                        n = sum(vals) if vals else len(ts)
                        head = "sample\t%s\t%s\t%s\t%s" % (
                            pid, work(one(smp, "stack_index", 0)), trace, span)
                        tail = "%s\t%d" % ("|".join(attrs), e["n"])
                        for t_ns in (ts if len(ts) == n else [0]):
                            out.append("%s\t%d\t%s\t%d" % (head, 1 if t_ns else n, tail,
                                                           t_ns))
    for k, v in facts.items():
        print("%s\t%d" % (k, v))
    print("\n".join(out))


if __name__ == "__main__":
    main()
