#!/bin/bash
# `stackscope agent` end to end, against otlp_receiver.py on loopback, while wl_chain_nofp runs:
#  - OTLP/HTTP and OTLP/gRPC: SIGTERM exits 0 promptly after flushing the last interval; every
#    accepted request decodes with protoc against proto/ (no unknown fields), the dictionary
#    invariants hold (index 0 zero values, indices in range, no duplicate keys), timestamps lie
#    in their profile's window and in the agent's run; the workload's resource (process.pid,
#    process.executable.path/name), the host attributes (host.name, host.id = machine-id,
#    host.arch, os.type), the sample attributes (thread.name/id, cpu.logical_number), frame
#    types kernel and native, the chain hot_leaf <- chain_c <- chain_b <- chain_a <- main through
#    stack -> location -> line -> function, and the executable's mapping carrying its GNU build
#    id and htlhash; --metrics-addr serves Prometheus text with samples and export counters.
#  - Faults: 503 + Retry-After then 200 (the same payload retried, after the delay; a partial
#    success is not retried); 400 (and gRPC INVALID_ARGUMENT) is never retried and counted as
#    failed; one connection closed without an answer is retried.
#  - The collector down when the agent starts: a warning within 10 s (not when the retries
#    run out, 120 s); up once the queue overflowed and 4 retries failed (and answering one
#    503): data within 3 s and new intervals, the recovery said in the log, /metrics shows
#    fewer bytes delivered than sent and the losses by reason, every interval is counted,
#    the agent's RSS stays bounded. Meanwhile a client trickling its request to /metrics
#    does not delay a normal scrape (< 2 s) and is closed by the agent; other methods and
#    paths get 405 and 404.
#  - Bad endpoint URLs and headers fail at start with one clear line.
#  - Without an endpoint: rotating pprof files in --output-dir under --output-max-mb, oldest
#    deleted first, readable by `go tool pprof -raw`.
#  - Signals: SIGHUP ends the interval at once (written into the store) and the agent goes on;
#    SIGPIPE is ignored; SIGTERM writes the last, partial interval. (SIGHUP and SIGPIPE used
#    to kill it, its interval lost.)
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish

PY=/usr/bin/python3 # Debian's interpreter, where python3-h2 lives
RECEIVER=$SS_ROOT/tests/system/otlp_receiver.py
PROTO=$SS_ROOT/proto
# the agent's RSS while the receiver is down: measured 28..48 MiB at 99 Hz on a 2-core Debian 12
# VM (it grows with the executables on the machine: start-up peaks reached 80 MiB with ~200
# processes), +2.6 MiB over a 10 s outage on a quiet machine, but +19..49 MiB while other jobs
# started new programs, so growth is not asserted. The queue itself is checked through its
# gauge (below); this bound is a sanity net for a runaway retry path.
RSS_MAX_KB=${RSS_MAX_KB:-131072}
CHAIN=hot_leaf,chain_c,chain_b,chain_a,main

if ! $PY -c 'import h2' 2>/dev/null; then
	fail "python3-h2 missing (apt-get install python3-h2)"
	finish
fi
if ! command -v protoc >/dev/null; then
	fail "protoc missing (apt-get install protobuf-compiler)"
	finish
fi

# --- a decoder of the saved requests: protoc's text output parsed into dicts -----------------
cat >"$TMP/otlp_check.py" <<'EOF'
"""otlp_check.py PROTO_DIR REQ_DIR [--pid PID] [--exe PATH] [--chain f1,f2,...] [--all]:
decodes the requests the receiver accepted (answer ok or partial, one per distinct payload;
--all: every request) with `protoc --decode` and prints key=value facts about them."""
import codecs, glob, hashlib, json, os, re, subprocess, sys

args = sys.argv[1:]
proto_dir, req_dir = args[0], args[1]
opt = {"--pid": None, "--exe": None, "--chain": None}
every = "--all" in args
newest_only = "--last" in args
for i, a in enumerate(args):
    if a in opt:
        opt[a] = args[i + 1]
pid = int(opt["--pid"]) if opt["--pid"] else None
chain = ";" + opt["--chain"].replace(",", ";") + ";" if opt["--chain"] else None
protos = sorted(glob.glob(os.path.join(proto_dir, "**", "*.proto"), recursive=True))
MSG = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
BLOCK = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|\[[^\]]+\]|\d+) \{$")


def value(s):
    if s.startswith('"'):
        return codecs.escape_decode(s[1:-1].encode("utf-8"))[0].decode("utf-8", "replace")
    try:
        return int(s)
    except ValueError:
        return s


def parse(text, facts):
    root = [{}]
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        m = BLOCK.match(s)
        if m:
            child = {}
            root[-1].setdefault(m.group(1), []).append(child)
            root.append(child)
            if m.group(1).isdigit():
                facts["unknown_fields"] += 1
        elif s == "}":
            root.pop()
        else:
            k, _, v = s.partition(": ")
            if k.isdigit():
                facts["unknown_fields"] += 1
            root[-1].setdefault(k, []).append(value(v))
    return root[0]


def one(d, k, default=None):
    v = d.get(k)
    return v[0] if v else default


def anyvalue(v):
    if not v:
        return None
    for k in ("string_value", "int_value", "bool_value", "double_value"):
        if k in v:
            return v[k][0]
    return None


facts = {"requests": 0, "decode_failed": 0, "unknown_fields": 0, "zero_bad": 0, "oob": 0,
         "dup_keys": 0, "ts_outside": 0, "profiles": 0, "samples": 0, "tables_missing": "",
         "pid_resources": 0, "pid_samples": 0, "pid_samples_attrs": 0, "chain_samples": 0,
         "pid_locs_untyped": 0, "locs_untyped": 0, "mappings": 0, "mappings_with_buildid": 0,
         "ts_min": 0, "ts_max": 0, "pid_ts_max": 0, "window_start_max": 0,
         "last_request_ts_max": 0}
sets = {k: set() for k in ("sample_types", "period_types", "periods", "frame_types",
                           "thread_names", "thread_ids", "cpus", "exe_paths", "exe_names",
                           "host.name", "host.id", "host.arch", "os.type", "exe_build_id_gnu",
                           "exe_htlhash", "scope_names", "mappings_without_buildid",
                           "pid_mappings", "pid_mappings_without_ids")}
entries = []
with open(os.path.join(req_dir, "requests.jsonl")) as f:
    for line in f:
        e = json.loads(line)
        if "n" in e and (every or e.get("answer") in ("ok", "partial")):
            entries.append(e)
if newest_only:
    entries = sorted(entries, key=lambda e: e["n"])[-1:]
seen = set()
exe_base = os.path.basename(opt["--exe"]) if opt["--exe"] else None
last_n = max([e["n"] for e in entries] or [0])
for e in sorted(entries, key=lambda e: e["n"]):
    if not every and e["sha1"] in seen:
        continue
    seen.add(e["sha1"])
    facts["requests"] += 1
    with open(os.path.join(req_dir, e["file"]), "rb") as f:
        raw = f.read()
    p = subprocess.run(["protoc", "--decode=" + MSG, "-I", proto_dir] + protos, input=raw,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        facts["decode_failed"] += 1
        sys.stderr.write("protoc failed on %s: %s\n" % (e["file"], p.stderr.decode()[:300]))
        continue
    req = parse(p.stdout.decode("utf-8", "replace"), facts)
    d = one(req, "dictionary", {})
    tables = {}
    for t in ("mapping_table", "location_table", "function_table", "link_table",
              "string_table", "attribute_table", "stack_table"):
        tables[t] = d.get(t, [])
        if not tables[t]:
            facts["tables_missing"] += t + " "
            continue
        z = tables[t][0]
        if t == "string_table":
            ok = z == ""
        elif t == "attribute_table":
            ok = z == {} or z == {"value": [{}]}
        else:
            ok = z == {}
        facts["zero_bad"] += 0 if ok else 1
    strs, attrs = tables["string_table"], tables["attribute_table"]

    def s(i):
        return strs[i] if isinstance(i, int) and 0 <= i < len(strs) else None

    # every *_strindex, *_index and attribute_indices in range, anywhere
    limits = {"stack_index": "stack_table", "link_index": "link_table",
              "mapping_index": "mapping_table", "function_index": "function_table",
              "location_indices": "location_table", "attribute_indices": "attribute_table"}

    def walk(node):
        if isinstance(node, dict):
            for k, vs in node.items():
                for v in vs:
                    if isinstance(v, int):
                        table = "string_table" if k.endswith("_strindex") else limits.get(k)
                        if table and not 0 <= v < len(tables[table]):
                            facts["oob"] += 1
                    walk(v)
                if k == "attribute_indices":
                    keys = [attrs[i].get("key_strindex", [0])[0] for i in vs
                            if 0 <= i < len(attrs)]
                    if len(keys) != len(set(keys)):
                        facts["dup_keys"] += 1

    walk(req)

    def attr_map(indices):
        out = {}
        for i in indices:
            if 0 <= i < len(attrs):
                out[s(one(attrs[i], "key_strindex", 0))] = anyvalue(one(attrs[i], "value", {}))
        return out

    def loc_type(li):
        loc = tables["location_table"][li] if 0 <= li < len(tables["location_table"]) else {}
        return attr_map(loc.get("attribute_indices", [])).get("profile.frame.type")

    for li, loc in enumerate(tables["location_table"][1:], 1):
        t = loc_type(li)
        if t:
            sets["frame_types"].add(t)
        else:
            facts["locs_untyped"] += 1
    for m in tables["mapping_table"][1:]:
        facts["mappings"] += 1
        am = attr_map(m.get("attribute_indices", []))
        if any(k and k.startswith("process.executable.build_id.") for k in am):
            facts["mappings_with_buildid"] += 1
        else:
            sets["mappings_without_buildid"].add(s(one(m, "filename_strindex", 0)))

    def frames(stack_i):
        names = []
        st = tables["stack_table"][stack_i] if 0 <= stack_i < len(tables["stack_table"]) else {}
        for li in st.get("location_indices", []):
            loc = tables["location_table"][li] if 0 <= li < len(tables["location_table"]) else {}
            lines = loc.get("lines", [])
            if not lines:
                names.append("?")
            for ln in lines:  # lines[0] is the innermost inlined function: leaf first
                fi = one(ln, "function_index", 0)
                fn = tables["function_table"][fi] if 0 <= fi < len(tables["function_table"]) else {}
                names.append(s(one(fn, "name_strindex", 0)) or "?")
        return names, st.get("location_indices", [])

    for rp in req.get("resource_profiles", []):
        ra = {one(kv, "key"): anyvalue(one(kv, "value", {}))
              for kv in one(rp, "resource", {}).get("attributes", [])}
        mine = pid is not None and ra.get("process.pid") == pid
        if mine or pid is None:
            for k in ("host.name", "host.id", "host.arch", "os.type"):
                if k in ra:
                    sets[k].add(ra[k])
        if mine:
            facts["pid_resources"] += 1
            sets["exe_paths"].add(ra.get("process.executable.path"))
            sets["exe_names"].add(ra.get("process.executable.name"))
        for sp in rp.get("scope_profiles", []):
            sets["scope_names"].add(one(one(sp, "scope", {}), "name"))
            for prof in sp.get("profiles", []):
                facts["profiles"] += 1
                t0, dur = one(prof, "time_unix_nano", 0), one(prof, "duration_nano", 0)
                facts["window_start_max"] = max(facts["window_start_max"], t0)
                stp, ptp = one(prof, "sample_type", {}), one(prof, "period_type", {})
                sets["sample_types"].add("%s/%s" % (s(one(stp, "type_strindex", 0)),
                                                    s(one(stp, "unit_strindex", 0))))
                sets["period_types"].add("%s/%s" % (s(one(ptp, "type_strindex", 0)),
                                                    s(one(ptp, "unit_strindex", 0))))
                sets["periods"].add(one(prof, "period", 0))
                for smp in prof.get("samples", []):
                    tss = smp.get("timestamps_unix_nano", [])
                    n = len(tss) if tss else sum(smp.get("values", []))
                    facts["samples"] += n
                    for ts in tss:
                        if not t0 <= ts < t0 + dur:
                            facts["ts_outside"] += 1
                        facts["ts_min"] = min(facts["ts_min"] or ts, ts)
                        facts["ts_max"] = max(facts["ts_max"], ts)
                        if e["n"] == last_n:
                            facts["last_request_ts_max"] = max(facts["last_request_ts_max"], ts)
                    if not mine:
                        continue
                    facts["pid_samples"] += n
                    if tss:
                        facts["pid_ts_max"] = max(facts["pid_ts_max"], max(tss))
                    sa = attr_map(smp.get("attribute_indices", []))
                    if all(k in sa for k in ("thread.name", "thread.id", "cpu.logical_number")):
                        facts["pid_samples_attrs"] += n
                        sets["thread_names"].add(sa["thread.name"])
                        sets["thread_ids"].add(sa["thread.id"])
                        sets["cpus"].add(sa["cpu.logical_number"])
                    names, locs = frames(one(smp, "stack_index", 0))
                    facts["pid_locs_untyped"] += sum(1 for li in locs if not loc_type(li))
                    for li in locs:
                        mi = one(tables["location_table"][li], "mapping_index", 0) \
                            if 0 <= li < len(tables["location_table"]) else 0
                        if mi and 0 < mi < len(tables["mapping_table"]):
                            m = tables["mapping_table"][mi]
                            am = attr_map(m.get("attribute_indices", []))
                            name = s(one(m, "filename_strindex", 0)) or "?"
                            sets["pid_mappings"].add(name)
                            # (only the workload's own frames: another build of the same
                            # program may run at the same time)
                            if name == exe_base:
                                for k, kk in (("gnu", "exe_build_id_gnu"),
                                              ("htlhash", "exe_htlhash")):
                                    v = am.get("process.executable.build_id." + k)
                                    if v:
                                        sets[kk].add(v)
                            if name.startswith("["):
                                continue  # [vdso]: no file to hash
                            if not (am.get("process.executable.build_id.gnu") and
                                    am.get("process.executable.build_id.htlhash")):
                                sets["pid_mappings_without_ids"].add(name)
                    if chain and chain in ";" + ";".join(names) + ";":
                        facts["chain_samples"] += n
if opt["--exe"]:
    with open(opt["--exe"], "rb") as f:
        data = f.read()
    h = hashlib.sha256(data[:4096] + data[-4096:] + len(data).to_bytes(8, "big"))
    facts["exe_htlhash_expected"] = h.hexdigest()[:32]
for k, v in facts.items():
    print("%s=%s" % (k, str(v).strip()))
for k, v in sets.items():
    print("%s=%s" % (k, ",".join(sorted(str(x) for x in v))))
EOF

# --- helpers -----------------------------------------------------------------------------------

# free_port: a port nobody listens on now
free_port()
{
	$PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# receiver NAME FAULTS [PORT]: starts a receiver saving into $TMP/NAME (control file
# $TMP/NAME.ctl), on PORT or a free one; sets RPORT and RPID.
receiver()
{
	local name=$1 faults=$2 port=${3:-0} i
	[[ -n ${RPID:-} ]] && kill "$RPID" 2>/dev/null # the previous section's
	mkdir -p "$TMP/$name"
	$PY "$RECEIVER" --dir "$TMP/$name" --faults "$faults" --control "$TMP/$name.ctl" \
		--port "$port" --lifetime 100 >"$TMP/$name.port" 2>"$TMP/$name.rcv.err" &
	RPID=$!
	_bg_pids+=($RPID)
	RPORT=
	for ((i = 0; i < 50; i++)); do
		RPORT=$(head -1 "$TMP/$name.port" 2>/dev/null)
		[[ -n $RPORT ]] && return 0
		sleep 0.1
	done
	fail "$name: the receiver did not start: $(head -c 300 "$TMP/$name.rcv.err")"
	return 1
}

# agent NAME ARGS...: starts the agent (stderr in $TMP/NAME.err), sets APID and ASTART_NS.
agent()
{
	local name=$1
	shift
	ASTART_NS=$(date +%s%N)
	"$SS" agent "$@" 2>"$TMP/$name.err" &
	APID=$!
	_bg_pids+=($APID)
}

# requests NAME: lines in the receiver's index (requests, not down/up events)
requests()
{
	cat "$TMP/$1/requests.jsonl" 2>/dev/null | awk '/"n": / { c++ } END { print c + 0 }'
}

# wait_requests NAME N SECONDS: until the receiver has answered N requests (1 = reached)
wait_requests()
{
	local end=$((SECONDS + $3))
	while [[ $(requests "$1") -lt $2 ]]; do
		[[ $SECONDS -ge $end ]] && return 1
		kill -0 "$APID" 2>/dev/null || return 1
		sleep 0.1
	done
}

# stop_agent NAME: SIGTERM, then waits at most 10 s; sets ARC (exit status, 124 when it had to
# be killed), STOP_NS (when SIGTERM was sent), END_NS (when it had exited) and STOP_MS.
stop_agent()
{
	local i
	STOP_NS=$(date +%s%N)
	kill -TERM "$APID" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$APID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$APID" 2>/dev/null; then
		kill -KILL "$APID"
		wait "$APID" 2>/dev/null
		ARC=124
	else
		wait "$APID"
		ARC=$?
	fi
	END_NS=$(date +%s%N)
	STOP_MS=$(((END_NS - STOP_NS) / 1000000))
}

# counter NAME KEY: from the agent's last counters line ("exports ok N failed N retried N
# dropped N"), KEY's number
counter()
{
	grep -o "exports ok [0-9]* failed [0-9]* retried [0-9]* dropped [0-9]*" "$TMP/$1.err" |
		tail -1 | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'
}

# bytes_logged NAME sent|delivered: from the agent's last counters line
bytes_logged()
{
	grep -o "bytes sent [0-9]* delivered [0-9]*" "$TMP/$1.err" | tail -1 |
		awk -v k="$2" '{ print k == "sent" ? $3 : $5 }'
}

# first_ns NAME KEY VALUE: the time of the receiver's first line with KEY = VALUE (event
# listening/down/up, or answer ok...), in ns; 0 if none
first_ns()
{
	$PY -c '
import json, sys
t = [e["time"] for e in map(json.loads, open(sys.argv[1])) if e.get(sys.argv[2]) == sys.argv[3]]
print(int(t[0] * 1e9) if t else 0)' "$TMP/$1/requests.jsonl" "$2" "$3" 2>/dev/null || echo 0
}

# check_agent NAME: decodes NAME's accepted requests; sets F[key] (see otlp_check.py)
declare -A F
decode()
{
	local k v
	F=()
	while IFS='=' read -r k v; do
		F[$k]=$v
	done < <($PY "$TMP/otlp_check.py" "$PROTO" "$TMP/$1" --pid "$WPID" --exe "$WEXE" \
		--chain "$CHAIN" "${@:2}" 2>"$TMP/$1.check.err")
}

# answers NAME: the answers the receiver gave, in order, one a line: "ANSWER SHA1 TIME"
answers()
{
	$PY -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "n" in e:
        print(e.get("answer"), e["sha1"], e["time"])' "$TMP/$1/requests.jsonl"
}

# content_checks NAME PROTOCOL: the assertions on a normal run's requests
content_checks()
{
	local n=$1 what=$2 machine_id arch build_id
	decode "$n"
	check_ge "$what: accepted requests decoded" "${F[requests]:-0}" 3
	check_eq "$what: requests protoc cannot decode" "${F[decode_failed]:-?}" 0
	check_eq "$what: fields unknown to the v1.11 schema" "${F[unknown_fields]:-?}" 0
	check_eq "$what: dictionary tables without entry 0" "${F[tables_missing]-?}" ""
	check_eq "$what: dictionary entries 0 that are not the zero value" "${F[zero_bad]:-?}" 0
	check_eq "$what: indices out of range" "${F[oob]:-?}" 0
	check_eq "$what: attribute lists with a duplicate key" "${F[dup_keys]:-?}" 0
	check_eq "$what: timestamps outside their profile's window" "${F[ts_outside]:-?}" 0
	check "$what: timestamps inside the agent's run (${F[ts_min]:-0}..${F[ts_max]:-0})" \
		test "${F[ts_min]:-0}" -ge "$ASTART_NS" -a "${F[ts_max]:-0}" -le "$END_NS"
	check_eq "$what: sample type" "${F[sample_types]:-}" "samples/count"
	check_eq "$what: period type" "${F[period_types]:-}" "cpu/nanoseconds"
	check_eq "$what: period = 1e9/99" "${F[periods]:-}" $((1000000000 / 99))
	check_eq "$what: scope name" "${F[scope_names]:-}" "stackscope"
	check_ge "$what: resources of the workload (process.pid=$WPID)" "${F[pid_resources]:-0}" 2
	check_eq "$what: process.executable.path" "${F[exe_paths]:-}" "$WEXE"
	check_eq "$what: process.executable.name" "${F[exe_names]:-}" "wl_chain_nofp"
	check_eq "$what: host.name" "${F[host.name]:-}" "$(uname -n)"
	machine_id=$(tr -d ' \n' </etc/machine-id)
	check_eq "$what: host.id = /etc/machine-id" "${F[host.id]:-}" "$machine_id"
	arch=$(uname -m)
	[[ $arch = x86_64 ]] && arch=amd64
	[[ $arch = aarch64 ]] && arch=arm64
	check_eq "$what: host.arch" "${F[host.arch]:-}" "$arch"
	check_eq "$what: os.type" "${F[os.type]:-}" "linux"
	# a 3+ s single-threaded burner at 99 Hz: ~300 when it has a core to itself, fewer on a
	# loaded machine
	check_ge "$what: samples of the workload" "${F[pid_samples]:-0}" 50
	check_eq "$what: workload samples with thread.name, thread.id and cpu.logical_number" \
		"${F[pid_samples_attrs]:-0}" "${F[pid_samples]:-x}"
	check_eq "$what: thread.name" "${F[thread_names]:-}" "wl_chain_nofp"
	check_eq "$what: thread.id" "${F[thread_ids]:-}" "$WPID"
	check "$what: cpu.logical_number in 0..$(($(nproc) - 1)) (${F[cpus]:-})" \
		awk -v l="${F[cpus]:-x}" -v n="$(nproc)" 'BEGIN { k = split(l, a, ",");
			for (i = 1; i <= k; i++) if (a[i] !~ /^[0-9]+$/ || a[i] >= n) exit 1; exit k == 0 }'
	check "$what: profile.frame.type kernel and native (${F[frame_types]:-})" \
		grep -Eq '(^|,)kernel(,|$)' <<<"${F[frame_types]:-}"
	check "$what: profile.frame.type native" grep -Eq '(^|,)native(,|$)' <<<"${F[frame_types]:-}"
	check_eq "$what: locations without profile.frame.type" "${F[locs_untyped]:-?}" 0
	check_pct "$what: workload samples with hot_leaf<-chain_c<-chain_b<-chain_a<-main" \
		"${F[chain_samples]:-0}" "${F[pid_samples]:-0}" 90
	build_id=$(readelf -n "$WEXE" 2>/dev/null | awk '/Build ID:/ { print $3 }')
	check_eq "$what: the executable's mapping: build_id.gnu" "${F[exe_build_id_gnu]:-}" "$build_id"
	check_eq "$what: the executable's mapping: build_id.htlhash" "${F[exe_htlhash]:-}" \
		"${F[exe_htlhash_expected]:-x}"
	check "$what: the workload's frames have mappings (${F[pid_mappings]:-})" \
		grep -q wl_chain_nofp <<<"${F[pid_mappings]:-}"
	check_eq "$what: the workload's mappings without build_id.gnu and .htlhash" \
		"${F[pid_mappings_without_ids]-?}" ""
	# other processes come and go: those that exit before the interval's end, and deleted or
	# memfd executables, get no htlhash today (it is read through /proc/PID/root at encode
	# time), so of all mappings only most are required to carry an id
	check_pct "$what: mappings with a build id (without: ${F[mappings_without_buildid]:-})" \
		"${F[mappings_with_buildid]:-0}" "${F[mappings]:-0}" 50
}

WEXE=$(readlink -f "$FIX/wl_chain_nofp")

# --- 1. OTLP/HTTP, with --metrics-addr ---------------------------------------------------------
echo "# OTLP/HTTP (at ${SECONDS} s)"
spawn WPID "$FIX/wl_chain_nofp" 30 # (the workload caps its run at 60 s)
receiver http "" || finish
MPORT=$(free_port)
agent http -F 99 --interval 1 --otlp-endpoint "http://127.0.0.1:$RPORT" \
	--metrics-addr "127.0.0.1:$MPORT"
wait_requests http 3 30
# metrics while it runs: the text is rebuilt once a second, so it may be a second behind the
# collector (CI saw 1 export ok there with 3 requests received): up to 5 s for it to say 2
for i in $(seq 25); do
	curl -sf -m 3 -D "$TMP/metrics.head" "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
	rc=$?
	[[ $(awk '$1 == "stackscope_exports_total{result=\"ok\"}" { print $2 }' \
		"$TMP/metrics.txt") -ge 2 ]] 2>/dev/null && break
	sleep 0.2
done
check_eq "metrics: GET /metrics" $rc 0
check "metrics: Content-Type text/plain" grep -qi '^content-type: text/plain' "$TMP/metrics.head"
bad=$(grep -Evc '^(# (TYPE|HELP) [a-z_]+ .*|[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [0-9.e+-]+)$' \
	"$TMP/metrics.txt")
check_eq "metrics: lines that are not Prometheus text" "$bad" 0
metric() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics.txt"; }
check_ge "metrics: stackscope_samples_total" "$(metric stackscope_samples_total)" 1
check_ge "metrics: stackscope_exports_total{result=\"ok\"}" \
	"$(metric 'stackscope_exports_total{result="ok"}')" 2
for r in failed retried dropped; do
	check_eq "metrics: stackscope_exports_total{result=\"$r\"}" \
		"$(metric "stackscope_exports_total{result=\"$r\"}")" 0
done
check_ge "metrics: stackscope_export_bytes_sent_total" "$(metric stackscope_export_bytes_sent_total)" 1
check_le "metrics: stackscope_export_bytes_delivered_total <= sent" \
	"$(metric stackscope_export_bytes_delivered_total)" "$(metric stackscope_export_bytes_sent_total)"
check_eq "metrics: stackscope_export_collector_up" "$(metric stackscope_export_collector_up)" 1
check_ge "metrics: stackscope_memory_bytes{kind=\"rss\"}" \
	"$(metric 'stackscope_memory_bytes{kind="rss"}')" 1000000
check_ge "metrics: stackscope_memory_bytes{kind=\"bpf_maps\"}" \
	"$(metric 'stackscope_memory_bytes{kind="bpf_maps"}')" 1
# SIGTERM in the middle of an interval: the last, partial one must still arrive
sleep 0.5
before=$(requests http)
stop_agent http
check_eq "http: exit status after SIGTERM" "$ARC" 0
check_le "http: ms from SIGTERM to exit" "$STOP_MS" 3000
check_ge "http: the last interval flushed at exit (requests after SIGTERM)" \
	"$(($(requests http) - before))" 1
content_checks http "http"
# the flushed interval ends at SIGTERM, not at the last full interval (0.5 s before it)
check "http: the last request has samples from the last 300 ms before SIGTERM" \
	test "${F[last_request_ts_max]:-0}" -ge $((STOP_NS - 300000000))
check "http: requests are POST /v1development/profiles, gzip, application/x-protobuf" \
	$PY -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "n" in e:
        h = e["headers"]
        assert e["path"] == "/v1development/profiles" and not e["malformed"], e
        assert h.get("content-encoding") == "gzip", h
        assert h.get("content-type") == "application/x-protobuf", h' "$TMP/http/requests.jsonl"
check_eq "http: counters at exit: ok = requests received" "$(counter http ok)" "$(requests http)"
check_eq "http: bytes at exit: delivered = sent (nothing failed)" "$(bytes_logged http delivered)" \
	"$(bytes_logged http sent)"

# --- 2. OTLP/gRPC, the first export answered UNAVAILABLE with RetryInfo 2 s ----------------------
echo "# OTLP/gRPC (at ${SECONDS} s)"
kill "$WPID" 2>/dev/null
spawn WPID "$FIX/wl_chain_nofp" 30
receiver grpc "status:503:2;ok" || finish
agent grpc -F 99 --interval 1 --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-protocol grpc
wait_requests grpc 5 20
sleep 0.5
stop_agent grpc
check_eq "grpc: exit status after SIGTERM" "$ARC" 0
check_le "grpc: ms from SIGTERM to exit" "$STOP_MS" 3000
content_checks grpc "grpc"
answers grpc >"$TMP/grpc.answers"
check "grpc: gRPC path, te trailers, grpc-encoding gzip, well framed" $PY -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if "n" in e:
        h = e["headers"]
        assert e["path"] == "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export", e
        assert not e["malformed"] and h.get("te") == "trailers", e
        assert h.get("grpc-encoding") == "gzip" and h.get("content-type", "").startswith("application/grpc"), h' \
	"$TMP/grpc/requests.jsonl"
read -r a1 s1 t1 < <(sed -n 1p "$TMP/grpc.answers")
read -r a2 s2 t2 < <(sed -n 2p "$TMP/grpc.answers")
check "grpc: UNAVAILABLE, then the same request again and accepted ($a1 $a2)" \
	test "$a1" = grpc:14 -a "$a2" = ok -a "$s1" = "$s2"
check "grpc: the retry waited for RetryInfo's 2 s ($t1 -> $t2)" \
	awk -v a="$t1" -v b="$t2" 'BEGIN { exit !(b - a >= 1.9 && b - a < 6) }'
check_eq "grpc: counters at exit: retried" "$(counter grpc retried)" 1
check_eq "grpc: counters at exit: ok = distinct accepted payloads" "$(counter grpc ok)" \
	"$(awk '$1 == "ok" { print $2 }' "$TMP/grpc.answers" | sort -u | wc -l)"

# --- 3. HTTP: connection closed unanswered; 503 + Retry-After: 2, twice; a partial success ----
echo "# connection closed, 503 + Retry-After, partial success (at ${SECONDS} s)"
receiver r503 "close;2*status:503:2;partial:3" || finish
agent r503 -F 99 --interval 1 --otlp-endpoint "http://127.0.0.1:$RPORT"
wait_requests r503 6 20
stop_agent r503
check_eq "503: exit status" "$ARC" 0
answers r503 >"$TMP/r503.answers"
mapfile -t A < <(awk '{ print $1 }' "$TMP/r503.answers")
mapfile -t S < <(awk '{ print $2 }' "$TMP/r503.answers")
mapfile -t T < <(awk '{ print $3 }' "$TMP/r503.answers")
check "503: answers close, 503, 503, partial, ok... (${A[*]:0:5})" \
	test "${A[0]-}" = close -a "${A[1]-}" = status:503 -a "${A[2]-}" = status:503 -a \
	"${A[3]-}" = partial -a "${A[4]-}" = ok
check "503: the same request four times until accepted" \
	test -n "${S[0]-}" -a "${S[0]-}" = "${S[1]-}" -a "${S[1]-}" = "${S[2]-}" -a \
	"${S[2]-}" = "${S[3]-}"
check "503: each retry after a 503 waited for Retry-After's 2 s (${T[1]-} ${T[2]-} ${T[3]-})" \
	awk -v a="${T[1]-0}" -v b="${T[2]-0}" -v c="${T[3]-0}" \
	'BEGIN { exit !(b - a >= 1.9 && c - b >= 1.9 && c - a < 10) }'
check "503: after the partial success a new request, not a retry" test "${S[4]-x}" != "${S[3]-x}"
check_eq "503: counters: retried" "$(counter r503 retried)" 3
check_eq "503: counters: failed" "$(counter r503 failed)" 0
check_eq "503: counters: ok = distinct accepted payloads" "$(counter r503 ok)" \
	"$(awk '$1 == "ok" || $1 == "partial" { print $2 }' "$TMP/r503.answers" | sort -u | wc -l)"
check_eq "503: distinct payloads = requests - retries" \
	"$(printf '%s\n' "${S[@]}" | sort -u | wc -l)" "$((${#S[@]} - 3))"

# --- 4. 400 (HTTP) and INVALID_ARGUMENT (gRPC): never retried, counted as failed ---------------
for proto in http/protobuf grpc; do
	n=r400${proto%%/*}
	echo "# always 400 ($proto) (at ${SECONDS} s)"
	receiver "$n" "*status:400" || finish
	agent "$n" -F 99 --interval 1 --otlp-endpoint "http://127.0.0.1:$RPORT" --otlp-protocol "$proto"
	wait_requests "$n" 3 15
	sleep 0.3
	stop_agent "$n"
	check_eq "400 $proto: exit status" "$ARC" 0
	answers "$n" >"$TMP/$n.answers"
	total=$(wc -l <"$TMP/$n.answers")
	distinct=$(awk '{ print $2 }' "$TMP/$n.answers" | sort -u | wc -l)
	want=status:400
	[[ $proto = grpc ]] && want=grpc:3
	check_eq "400 $proto: answers other than $want" \
		"$(awk -v w="$want" '$1 != w' "$TMP/$n.answers" | wc -l)" 0
	check_ge "400 $proto: requests" "$total" 3
	check_eq "400 $proto: one attempt per request (distinct payloads)" "$distinct" "$total"
	check_eq "400 $proto: counters: failed = requests" "$(counter "$n" failed)" "$total"
	check_eq "400 $proto: counters: retried" "$(counter "$n" retried)" 0
	check_eq "400 $proto: counters: ok" "$(counter "$n" ok)" 0
done

# --- 5. the collector down when the agent starts, then up; a slow client on /metrics -----------
echo "# collector down at start, then up; slow /metrics client (at ${SECONDS} s)"
# a workload of its own: every interval has samples (an empty one is not exported), however
# long the sections before took
spawn DPID "$FIX/wl_chain_nofp" 30
CPORT=$(free_port)
MPORT=$(free_port)
agent down -F 99 --interval 0.3 --otlp-endpoint "http://127.0.0.1:$CPORT" \
	--metrics-addr "127.0.0.1:$MPORT"
# every 0.2 s: RSS, and the export queue's bytes from the metrics
(
	while kill -0 "$APID" 2>/dev/null; do
		r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$APID/status" 2>/dev/null)
		[[ -n $r ]] && echo "$(date +%s%N) $r" >>"$TMP/down.rss"
		curl -sf -m 1 "http://127.0.0.1:$MPORT/metrics" 2>/dev/null |
			awk '$1 == "stackscope_export_queue_bytes" { print $2 }' >>"$TMP/down.queue"
		sleep 0.2
	done
) &
_bg_pids+=($!)
# the first failed export (one interval after start-up, which takes seconds on a loaded
# machine) is warned at once; the retries used to be silent for 120 s
run_ns=0 warn_ns=0
end=$((SECONDS + 40))
while [[ $SECONDS -lt $end ]] && kill -0 "$APID" 2>/dev/null; do
	[[ $run_ns -eq 0 ]] && grep -q 'agent running' "$TMP/down.err" && run_ns=$(date +%s%N)
	if grep -q 'otlp: cannot deliver' "$TMP/down.err"; then
		warn_ns=$(date +%s%N)
		break
	fi
	[[ $run_ns -gt 0 && $(date +%s%N) -gt $((run_ns + 10000000000)) ]] && break
	sleep 0.1
done
check "down: the first failed export warned ($(((warn_ns - run_ns) / 1000000)) ms after start-up)" \
	test "$run_ns" -gt 0 -a "$warn_ns" -gt 0 -a $((warn_ns - run_ns)) -le 10000000000
# a client sending its request one byte every 0.5 s; it reports whether and when the agent
# closed the connection (the request timeout is 3 s)
cat >"$TMP/loris.py" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.5)
t0 = time.monotonic()
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 60 + b"\r\n\r\n"
state = "open"
for b in req:
    if time.monotonic() - t0 > 8:
        break
    try:
        s.send(bytes([b]))
        state = "answered" if s.recv(1) else "closed"
        break
    except socket.timeout:
        continue
    except OSError:
        state = "closed"
        break
print(state, "%.1f" % (time.monotonic() - t0))
EOF
$PY "$TMP/loris.py" "$MPORT" >"$TMP/loris.out" 2>&1 &
LORIS=$!
_bg_pids+=($LORIS)
sleep 0.5
t0=$(date +%s%N)
curl -sf -m 5 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
rc=$?
scrape_ms=$((($(date +%s%N) - t0) / 1000000))
check "down: GET /metrics in < 2 s while a slow client trickles (exit $rc, $scrape_ms ms)" \
	test "$rc" -eq 0 -a "$scrape_ms" -lt 2000
check_eq "down: POST /metrics answered" \
	"$(curl -s -o /dev/null -m 2 -w '%{http_code}' -X POST -d x "http://127.0.0.1:$MPORT/metrics")" 405
check_eq "down: GET /other answered" \
	"$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://127.0.0.1:$MPORT/other")" 404
# down until the queue of 16 overflowed and 4 retries failed: from the 5th failed attempt the
# backoff was 8..24 s (doubling from 1 s); it is at most 5 s now, and a new interval's request
# ends it at once
retried=0 dropped=0
end=$((SECONDS + 30))
while [[ $SECONDS -lt $end ]]; do
	curl -sf -m 1 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
	retried=$(metric 'stackscope_exports_total{result="retried"}')
	dropped=$(metric 'stackscope_exports_total{result="dropped"}')
	[[ ${retried:-0} -ge 4 && ${dropped:-0} -ge 1 ]] && break
	sleep 0.2
done
check "down: retries (${retried:-0}) and queue drops (${dropped:-0}) while the collector is down" \
	test "${retried:-0}" -ge 4 -a "${dropped:-0}" -ge 1
# the collector comes up; its first answer is a 503 with Retry-After: 0, so that some bytes
# are sent and not delivered
receiver down "status:503:0" "$CPORT" || finish
up_ns=$(first_ns down event listening)
# wait for intervals that began after the collector came up
end=$((SECONDS + 15))
resumed=0
while [[ $SECONDS -lt $end && $up_ns -gt 0 ]]; do
	decode down --last
	if [[ ${F[window_start_max]:-0} -gt $up_ns ]]; then
		resumed=1
		break
	fi
	sleep 0.3
done
end=$((SECONDS + 5))
while [[ $SECONDS -lt $end ]] && ! grep -q 'collector reachable again' "$TMP/down.err"; do
	sleep 0.1
done
# the metrics text is rebuilt once a second (src/cli/agent.c METRICS_REFRESH_NS): a scrape
# right after the log line may predate the recovery
end=$((SECONDS + 4))
while :; do
	curl -sf -m 3 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
	grep -q '^stackscope_export_collector_up 1' "$TMP/metrics.txt" && break
	[[ $SECONDS -lt $end ]] || break
	sleep 0.2
done
stop_agent down
kill "$DPID" 2>/dev/null
check_eq "down: exit status" "$ARC" 0
check "down: the collector came up" test "$up_ns" -gt 0
check_eq "down: intervals that began after the collector came up arrived" "$resumed" 1
ok_ns=$(first_ns down answer ok)
check "down: data delivered within 3 s of the collector coming up ($(((ok_ns - up_ns) / 1000000)) ms)" \
	test "$up_ns" -gt 0 -a "$ok_ns" -gt 0 -a $((ok_ns - up_ns)) -le 3000000000
recovered=$(grep -o 'collector reachable again after [0-9.]* s, [0-9]* requests delivered late' \
	"$TMP/down.err" | head -1)
check "down: the recovery in the log ($recovered)" grep -q 'delivered late' <<<"$recovered"
check_ge "down: requests delivered late (log)" "$(awk '{ print $7 }' <<<"$recovered")" 1
wait "$LORIS" 2>/dev/null
read -r lstate lsecs <"$TMP/loris.out"
check "down: the slow client closed by the agent after 2..5 s (${lstate:-?} after ${lsecs:-?} s)" \
	awk -v st="${lstate:-}" -v t="${lsecs:-99}" 'BEGIN { exit !(st == "closed" && t >= 2 && t <= 5) }'
sent=$(metric stackscope_export_bytes_sent_total)
delivered=$(metric stackscope_export_bytes_delivered_total)
check "down: /metrics: 0 < bytes delivered (${delivered:-?}) < bytes sent (${sent:-?})" \
	test "${delivered:-0}" -gt 0 -a "${delivered:-0}" -lt "${sent:-0}"
check_eq "down: /metrics: collector up again" "$(metric stackscope_export_collector_up)" 1
check_eq "down: /metrics: outages" "$(metric stackscope_export_outages_total)" 1
check_ge "down: /metrics: requests delivered late" \
	"$(metric stackscope_exports_delivered_late_total)" 1
check_ge "down: /metrics: requests lost: queue full" \
	"$(metric 'stackscope_exports_lost_total{reason="queue_full"}')" 1
check_ge "down: /metrics: connections timed out (the slow client)" \
	"$(metric 'stackscope_metrics_connections_total{result="timed_out"}')" 1
check_ge "down: /metrics: connections rejected (POST, /other)" \
	"$(metric 'stackscope_metrics_connections_total{result="rejected"}')" 2
answers down >"$TMP/down.answers"
ok_n=$(counter down ok) dropped=$(counter down dropped) failed=$(counter down failed)
check_ge "down: counters: dropped from the full queue" "${dropped:-0}" 1
check_ge "down: counters: retried" "$(counter down retried)" 4
check_eq "down: counters: ok = distinct accepted payloads" "$ok_n" \
	"$(awk '$1 == "ok" { print $2 }' "$TMP/down.answers" | sort -u | wc -l)"
# every interval is accounted for: ok + failed + dropped = reports made (~ run time / 0.3 s
# from the end of start-up, which takes seconds on a loaded machine, where intervals also
# come late: at least half of them from the first failed one on)
run_ms=$(((STOP_NS - run_ns) / 1000000 + 500))
accounted=$((${ok_n:-0} + ${failed:-0} + ${dropped:-0}))
check "down: ok+failed+dropped ($accounted) ~ intervals in ${run_ms} ms at 0.3 s" \
	test "$accounted" -ge $(((STOP_NS - warn_ns) / 600000000)) -a \
	"$accounted" -le $((run_ms / 300 + 3))
read -r rss_down rss_peak < <(awk -v d="$warn_ns" '
	$1 <= d { at = $2 } $1 > d && $2 > peak { peak = $2 } END { print at + 0, peak + 0 }' \
	"$TMP/down.rss" 2>/dev/null)
check "down: RSS sampled at the first failed export and after (${rss_down:-0} KiB, peak ${rss_peak:-0} KiB)" \
	test "${rss_down:-0}" -gt 0 -a "${rss_peak:-0}" -gt 0
# the queue: at most 16 requests (the client's default count bound; its byte bound, 32 MiB,
# is not reached by requests of a few KiB)
queue_max=$(sort -n "$TMP/down.queue" 2>/dev/null | tail -1)
req_max=$($PY -c '
import json, sys
print(max([json.loads(l).get("wire_bytes", 0) for l in open(sys.argv[1])] or [0]))' \
	"$TMP/down/requests.jsonl")
check_ge "down: stackscope_export_queue_bytes while down" "${queue_max:-0}" $((req_max / 2))
check_le "down: stackscope_export_queue_bytes <= 16 x the largest request ($req_max)" \
	"${queue_max:-0}" $((16 * req_max))
check_le "down: peak RSS in KiB during and after the outage (+$(((${rss_peak:-0} - ${rss_down:-0}) / 1024)) MiB)" \
	"${rss_peak:-0}" "$RSS_MAX_KB"
decode down
check_eq "down: accepted requests: protoc failures" "${F[decode_failed]:-?}" 0
check_eq "down: accepted requests: timestamps outside the window" "${F[ts_outside]:-?}" 0

# --- 6. bad configuration: one clear line, at once ---------------------------------------------
echo "# bad configuration (at ${SECONDS} s)"
# bad_config DESCRIPTION PATTERN ENV-ASSIGNMENTS... -- ARGS...
bad_config()
{
	local what=$1 pat=$2 start ms rc lines
	local -a envs=()
	shift 2
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	start=$(date +%s%N)
	env "${envs[@]}" timeout -k 2 10 "$SS" agent --output-dir "$TMP/never" "$@" \
		2>"$TMP/bad.err" </dev/null
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	lines=$(grep -c . "$TMP/bad.err")
	if [[ $rc -ne 0 && $rc -ne 124 && $ms -lt 2000 && $lines -eq 1 ]] &&
		grep -Eiq "$pat" "$TMP/bad.err" && ! grep -qi 'running' "$TMP/bad.err"; then
		ok "$what: exit $rc in $ms ms: $(cat "$TMP/bad.err")"
	else
		fail "$what: exit $rc in $ms ms, $lines lines: $(head -c 400 "$TMP/bad.err")"
	fi
}
bad_config "--otlp-endpoint ftp://x" 'endpoint|url' -- --otlp-endpoint ftp://x
bad_config "--otlp-endpoint 'not a url'" 'endpoint|url' -- --otlp-endpoint 'not a url'
bad_config "--otlp-endpoint http://" 'endpoint|url|host' -- --otlp-endpoint http://
bad_config "OTEL_EXPORTER_OTLP_ENDPOINT=ftp://x" 'OTEL_EXPORTER_OTLP_ENDPOINT' \
	OTEL_EXPORTER_OTLP_ENDPOINT=ftp://x --
bad_config "OTEL_EXPORTER_OTLP_HEADERS=bad" 'OTEL_EXPORTER_OTLP_HEADERS|header' \
	OTEL_EXPORTER_OTLP_HEADERS=bad -- --otlp-endpoint http://127.0.0.1:9
bad_config "--otlp-headers bad" 'header' -- --otlp-endpoint http://127.0.0.1:9 --otlp-headers bad
bad_config "--otlp-protocol http/json" 'protocol' -- --otlp-endpoint http://127.0.0.1:9 \
	--otlp-protocol http/json
check "bad configuration: no output folder created" test ! -e "$TMP/never"

# --- 7. no endpoint: a rotating folder of pprof files ------------------------------------------
echo "# pprof folder (at ${SECONDS} s)"
dir=$TMP/pprof
mkdir -p "$dir"
# files of an earlier run, 1000 KiB in all: 24 KiB under the cap (1 MiB), so that the first
# new files push the folder over it; they are the oldest and must go first
i=0
for kib in 100 100 200 200 400; do
	i=$((i + 1))
	head -c $((kib * 1024)) /dev/zero >"$dir/stackscope-20000101T00000$i.000Z.pb.gz"
done
echo "not ours" >"$dir/other.txt"
ours() { find "$dir" -maxdepth 1 -name 'stackscope-*.pb.gz' -printf '%f %s\n' | sort; }
spawn qpid "$FIX/wl_qsort" 12
agent pprof -F 999 --interval 0.5 --output-dir "$dir" --output-max-mb 1
: >"$TMP/pprof.seen"
max_total=0 max_file=0
end=$((SECONDS + 15)) # (breaks out once enough files came; start-up is slow on a loaded machine)
while [[ $SECONDS -lt $end ]]; do
	ours >"$TMP/pprof.ls"
	awk '{ print $1 }' "$TMP/pprof.ls" >>"$TMP/pprof.seen"
	read -r total big < <(awk '{ t += $2; if ($2 > m) m = $2 } END { print t + 0, m + 0 }' \
		"$TMP/pprof.ls")
	[[ $total -gt $max_total ]] && max_total=$total
	[[ $big -gt $max_file ]] && max_file=$big
	# enough once two of the old files went and four new ones came
	[[ $(grep -c '^stackscope-2000' "$TMP/pprof.ls") -le 3 &&
		$(grep -vc '^stackscope-2000' "$TMP/pprof.ls") -ge 4 ]] && break
	sleep 0.2
done
stop_agent pprof
kill "$qpid" 2>/dev/null
check_eq "pprof: exit status" "$ARC" 0
sort -u "$TMP/pprof.seen" >"$TMP/pprof.seen.u"
ours | awk '{ print $1 }' >"$TMP/pprof.now"
comm -23 "$TMP/pprof.seen.u" "$TMP/pprof.now" >"$TMP/pprof.gone"
gone=$(grep -c . "$TMP/pprof.gone")
check_ge "pprof: files deleted" "$gone" 2
check_ge "pprof: new files written" "$(grep -vc '^stackscope-2000' "$TMP/pprof.seen.u")" 4
check_eq "pprof: the files deleted are the oldest ones (a prefix of all, by name)" \
	"$(tr '\n' ' ' <"$TMP/pprof.gone")" "$(head -n "$gone" "$TMP/pprof.seen.u" | tr '\n' ' ')"
check "pprof: other files untouched" test -f "$dir/other.txt"
now_total=$(ours | awk '{ t += $2 } END { print t + 0 }')
check_le "pprof: folder bytes at the end" "$now_total" 1048576
check_le "pprof: folder bytes at any time (cap + the largest file)" "$max_total" \
	$((1048576 + max_file))
check_eq "pprof: counters: dropped = files deleted" "$(counter pprof dropped)" "$gone"
GO=${GO:-$( [[ -x /usr/lib/go/bin/go ]] && echo /usr/lib/go/bin/go || command -v go)}
if [[ ! -x $GO ]]; then
	skip_setup "pprof: go tool pprof checks: go not found"
else
	export HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
	bad=0 n=0
	: >"$TMP/raw.all"
	for f in $(grep -v '^stackscope-2000' "$TMP/pprof.now" | tail -3); do
		n=$((n + 1))
		# (-symbolize=none: else pprof runs binutils over every unsymbolized mapping of the
		# whole system, which takes a minute on a loaded machine)
		if "$GO" tool pprof -symbolize=none -raw "$dir/$f" >"$TMP/raw.txt" 2>"$TMP/pprof.err" &&
			grep -qx 'samples/count cpu/nanoseconds' "$TMP/raw.txt"; then
			cat "$TMP/raw.txt" >>"$TMP/raw.all"
		else
			bad=$((bad + 1))
		fi
	done
	check_ge "pprof: new files checked" "$n" 3
	check_eq "pprof: of those, unreadable by go tool pprof -raw" "$bad" 0
	check "pprof: they hold wl_qsort's compare_items" grep -q compare_items "$TMP/raw.all"
fi

# --- signals ---------------------------------------------------------------------------------
# intervals of 60 s: what comes into the store before the minute is the signals' doing
hup_intervals() { "$SS" store intervals --store "$TMP/hup.db" 2>/dev/null | grep -c .; }
wait_hup_intervals()
{
	local end=$((SECONDS + 10))
	until [[ $(hup_intervals) -ge $1 ]]; do
		[[ $SECONDS -ge $end ]] && return 1
		sleep 0.2
	done
}
# a burner: an interval without samples is not written, and an idle CPU here may take none
spawn hpid "$FIX/wl_chain_nofp" 30
agent hup -F 99 --interval 60 --cache-dir "" --store "$TMP/hup.db"
if wait_agent "$TMP/hup.err" "$APID"; then
	sleep 1
	kill -HUP "$APID"
	check "signals: SIGHUP wrote the interval so far within 10 s" wait_hup_intervals 1
	kill -PIPE "$APID"
	sleep 1
	check "signals: the agent runs on after SIGHUP and SIGPIPE" kill -0 "$APID"
	check "signals: the log says SIGHUP ended the interval" grep -q "SIGHUP" "$TMP/hup.err"
	stop_agent hup
	check_eq "signals: exit status after SIGTERM" "$ARC" 0
	check_eq "signals: SIGTERM wrote the last interval (2 in all)" "$(hup_intervals)" 2
	kill "$hpid" 2>/dev/null
else
	fail "signals: the agent did not start: $(tail -3 "$TMP/hup.err")"
fi

finish
