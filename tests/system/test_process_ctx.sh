#!/bin/bash
# OpenTelemetry's process context (OTEP 4719): the publisher tests/data/otel_pctx_pub.c (a
# memfd mapping named OTEL_CTX, header + ProcessContext protobuf written from the OTEP) in
# several modes, at once, under the agent (OTLP/HTTP to otlp_receiver.py, every request decoded
# by protoc against proto/: no unknown fields) and under record:
#  - good: its resource attributes (string, int, bool, double) in its OTLP Resource, the
#    published service.name winning over OTEL_RESOURCE_ATTRIBUTES' (whose other keys stay);
#    its extra attributes not in the Resource; after it republishes, the changed values
#    (deployment.environment.name staging -> production, service.version 1.0 -> 2.0), and
#    never the new ones before; in record, the sample label service.name on its samples;
#  - late (publishes 1.5 s after its start): found by the probes of a new process;
#  - anon (prctl-named anonymous mapping): read where the kernel names it, else nothing;
#  - none: the configured service.name, no published attribute, no label;
#  - hostile: a payload pointer to unmapped memory, a payload size of 2 GiB, a KeyValue whose
#    length runs past the payload: no attribute, no service label, each counted, and in record
#    their samples marked with the label otel.process_context=<why>; an attribute nested
#    5000 deep: skipped (counted), the rest read; a context rewritten in place without pause
#    under the update protocol: every resource has service.name and its peer attribute from
#    the same publication (torn-1/torn-1 or torn-2/torn-2), never a mix.
# The record's profile in the store: `store query --service checkout` gives the labelled
# samples, serve's /api/filters lists the service with them and ?service= filters on it; in a
# headless browser the service menu lists it and filters on it, the process menu names the
# process "checkout (pid N)".
# timeout: 300
source "$(dirname "$0")/lib.sh"
need_root
have_fixture otel_pctx_pub || finish

PY=/usr/bin/python3
PUB=$FIX/otel_pctx_pub
PROTO=$SS_ROOT/proto
HZ=199
if ! command -v protoc >/dev/null; then
	fail "protoc missing (apt-get install protobuf-compiler)"
	finish
fi

# --- the requests' resources, decoded by protoc: "res N PID KEY=VALUE" (N: request order) -----
cat >"$TMP/pctx_check.py" <<'PYEOF'
import codecs, glob, json, os, re, subprocess, sys

proto_dir, req_dir = sys.argv[1], sys.argv[2]
protos = sorted(glob.glob(os.path.join(proto_dir, "**", "*.proto"), recursive=True))
MSG = "opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest"
BLOCK = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*|\[[^\]]+\]|\d+) \{$")
unknown = failed = 0


def parse(text):
    global unknown
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
            unknown += m.group(1).isdigit()
        elif s == "}":
            root.pop()
        else:
            k, _, v = s.partition(": ")
            unknown += k.isdigit()
            if v.startswith('"'):
                v = codecs.escape_decode(v[1:-1].encode())[0].decode("utf-8", "replace")
            root[-1].setdefault(k, []).append(v)
    return root[0]


entries = [json.loads(l) for l in open(os.path.join(req_dir, "requests.jsonl"))]
entries = sorted((e for e in entries if e.get("answer") == "ok"), key=lambda e: e["n"])
for e in entries:
    raw = open(os.path.join(req_dir, e["file"]), "rb").read()
    p = subprocess.run(["protoc", "--decode=" + MSG, "-I", proto_dir] + protos, input=raw,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        failed += 1
        continue
    req = parse(p.stdout.decode("utf-8", "replace"))
    for rp in req.get("resource_profiles", []):
        attrs = []
        for res in rp.get("resource", []):
            for kv in res.get("attributes", []):
                v = (kv.get("value") or [{}])[0]
                val = next((k + ":" + v[k][0] for k in ("string_value", "int_value",
                            "bool_value", "double_value") if k in v), "none")
                attrs.append((kv["key"][0], val))
        pid = dict(attrs).get("process.pid", "int_value:0").split(":", 1)[1]
        for k, v in attrs:
            print("res %d %s %s=%s" % (e["n"], pid, k, v))
print("unknown_fields %d" % unknown)
print("decode_failed %d" % failed)
print("requests %d" % len(entries))
PYEOF

# res_of FILE PID: that pid's "KEY=TYPE:VALUE" lines, one per request and key
res_of() { awk -v pid="$2" '$1 == "res" && $3 == pid { print $2, $4 }' "$1"; }

# --- the agent ------------------------------------------------------------------------------
otlp_receiver_start "$TMP/rcv" || finish
MPORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OTEL_RESOURCE_ATTRIBUTES=service.name=guessed,team=infra \
	"$SS" agent -F $HZ --interval 1 --cache-dir "" --otlp-endpoint "http://127.0.0.1:$RPORT" \
	--metrics-addr "127.0.0.1:$MPORT" 2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
wait_agent "$TMP/agent.err" "$APID" || { fail "the agent did not start: $(tail -3 "$TMP/agent.err")"; finish; }

# the publishers start once the agent exports (its first interval can take seconds on a loaded
# box, and an interval's resources are what the processes published when it is encoded)
otlp_first_request "$TMP/rcv"
declare -A P
for mode in late anon none wild huge lie nest torn; do
	"$PUB" "$mode" 4 2>"$TMP/pub-$mode.err" &
	P[$mode]=$!
done
# good: republishes once a request carried its first context (SIGUSR1), then 3 s more
"$PUB" signal 40 2>"$TMP/pub-good.err" &
P[good]=$!
# (its own request: "late" publishes the same values, and may be read first on a loaded box)
for ((i = 0; i < 60; i++)); do
	$PY "$TMP/pctx_check.py" "$PROTO" "$TMP/rcv" 2>/dev/null | awk -v p="${P[good]}" \
		'$1 == "res" && $3 == p && /staging/ { f = 1 } END { exit !f }' && break
	sleep 0.5
done
kill -USR1 "${P[good]}"
for mode in "${!P[@]}"; do wait "${P[$mode]}"; done
sleep 2.5 # the last interval exported
curl -sf -m 5 "http://127.0.0.1:$MPORT/metrics" >"$TMP/metrics.txt"
kill -TERM "$APID"
wait "$APID"
check_eq "agent: exit status" $? 0
$PY "$TMP/pctx_check.py" "$PROTO" "$TMP/rcv" >"$TMP/res.txt"
check_eq "OTLP: requests protoc cannot decode" "$(awk '$1 == "decode_failed" { print $2 }' "$TMP/res.txt")" 0
check_eq "OTLP: unknown fields" "$(awk '$1 == "unknown_fields" { print $2 }' "$TMP/res.txt")" 0
check_ge "OTLP: requests" "$(awk '$1 == "requests" { print $2 }' "$TMP/res.txt")" 3

# good: A, then B after republishing, never B before A
res_of "$TMP/res.txt" "${P[good]}" >"$TMP/good.res"
check_ge "good: requests with its resource" "$(awk '{ print $1 }' "$TMP/good.res" | sort -u | wc -l)" 2
for kv in service.name=string_value:checkout service.instance.id=string_value:pctx-0001 \
	deployment.environment.name=string_value:staging service.version=string_value:1.0 \
	pctx.test.int=int_value:42 pctx.test.bool=bool_value:true pctx.test.double=double_value:0.5 \
	deployment.environment.name=string_value:production service.version=string_value:2.0 \
	team=string_value:infra; do
	check_ge "good: resource has $kv" "$(grep -c -F " $kv" "$TMP/good.res")" 1
done
# (a request encoded before its context was read, in its first 250 ms when the agent's scan of
# the new process came before the publication, has the configured one: not a wrong value)
check_eq "good: the configured service.name (guessed) once its own was read" \
	"$(awk '/service.name=string_value:checkout/ && !first { first = $1 }
		/service.name=string_value:guessed/ && first && $1 > first { n++ }
		END { print n + 0 }' "$TMP/good.res")" 0
check_eq "good: extra attributes in the resource" "$(grep -c threadlocal "$TMP/good.res")" 0
check_eq "good: a key twice in a resource" \
	"$(awk '{ print $1, $2 }' "$TMP/good.res" | sed 's/=.*//' | sort | uniq -d | wc -l)" 0
first_b=$(awk '/deployment.environment.name=string_value:production/ { print $1; exit }' "$TMP/good.res")
last_a=$(awk '/deployment.environment.name=string_value:staging/ { n = $1 } END { print n + 0 }' "$TMP/good.res")
check "good: no request with the old values after one with the new ($last_a < ${first_b:-none})" \
	test -n "$first_b" -a "$last_a" -lt "${first_b:-0}"

# late: found by a probe
res_of "$TMP/res.txt" "${P[late]}" >"$TMP/late.res"
check_ge "late: resource has its published service.name" \
	"$(grep -c 'service.name=string_value:checkout' "$TMP/late.res")" 1
# anon
res_of "$TMP/res.txt" "${P[anon]}" >"$TMP/anon.res"
if grep -q "anon named" "$TMP/pub-anon.err"; then
	check_ge "anon: resource has its published service.name" \
		"$(grep -c 'service.name=string_value:checkout' "$TMP/anon.res")" 1
else
	skip "anon: the kernel does not name anonymous mappings (CONFIG_ANON_VMA_NAME)"
	check_eq "anon (unnamed: not a context): published attributes" \
		"$(grep -c 'pctx.test' "$TMP/anon.res")" 0
fi
# none and the hostile ones: the configured service.name, nothing published
for mode in none wild huge lie; do
	res_of "$TMP/res.txt" "${P[$mode]}" >"$TMP/$mode.res"
	check_ge "$mode: resources" "$(wc -l <"$TMP/$mode.res")" 1
	check_eq "$mode: service.name other than the configured one" \
		"$(grep 'service.name=' "$TMP/$mode.res" | grep -vc 'service.name=string_value:guessed')" 0
	check_eq "$mode: published attributes" "$(grep -c 'pctx.test' "$TMP/$mode.res")" 0
done
res_of "$TMP/res.txt" "${P[nest]}" >"$TMP/nest.res"
check_ge "nest: resource has service.name after the deep attribute" \
	"$(grep -c 'service.name=string_value:nest-ok' "$TMP/nest.res")" 1
check_eq "nest: the deep attribute" "$(grep -c 'pctx.test.deep' "$TMP/nest.res")" 0
# torn: service.name and its peer of one publication
res_of "$TMP/res.txt" "${P[torn]}" >"$TMP/torn.res"
check_ge "torn: resources with a published service.name" \
	"$(grep -c 'service.name=string_value:torn-' "$TMP/torn.res")" 1
check_eq "torn: resources whose service.name and peer disagree" \
	"$(awk '{ split($2, kv, "="); v[$1, kv[1]] = kv[2]; r[$1] = 1 }
		END { for (n in r) if (v[n, "service.name"] ~ /torn/ &&
			v[n, "service.name"] != v[n, "pctx.test.peer"]) bad++; print bad + 0 }' "$TMP/torn.res")" 0
# the counters
for ev in published read republished "payload unreadable" "payload too big" "payload malformed" \
	"attributes skipped" "maps probes"; do
	check_ge "/metrics: process context event '$ev'" \
		"$(sed -n "s/^stackscope_process_context_events_total{event=\"$ev\"} //p" "$TMP/metrics.txt")" 1
done

# --- record: the label service.name, the summary ----------------------------------------------
STACKS+=" --labels"
cat >"$TMP/pubs.sh" <<SHEOF
"$PUB" good 4 2>/dev/null & "$PUB" none 3 2>/dev/null & "$PUB" huge 3 2>/dev/null &
"$PUB" lie 3 2>/dev/null & wait
SHEOF
record "$TMP/rec.err" -F $HZ -o "$TMP/rec.pb.gz" -- bash "$TMP/pubs.sh"
check_eq "record: exit status" $? 0
$STACKS "$TMP/rec.pb.gz" >"$TMP/rec.stacks"
total=$(samples "$TMP/rec.stacks" '*' ';work_[ab](;|$)')
labeled=$(samples "$TMP/rec.stacks" '*' 'service.name=checkout')
check_ge "record: samples of the publishers" "$total" 50
# the good one's samples, once it is read (at once, or by the 250 ms probe)
good_total=$(samples "$TMP/rec.stacks" '*' 'main;work_b(;|$)')
check_ge "record: good's samples after republishing" "$good_total" 20
check_pct "record: good's samples in work_b labelled service.name=checkout" \
	"$(samples "$TMP/rec.stacks" '*' 'service.name=checkout.*main;work_b(;|$)')" "$good_total" 95
check_ge "record: samples labelled service.name=checkout" "$labeled" 20
check_eq "record: samples labelled otherwise" \
	"$(samples "$TMP/rec.stacks" '*' 'service.name=' )" "$labeled"
check_summary "$TMP/rec.err" "otel context" 1 published "payload too big" "payload malformed"
# the hostile ones' samples marked with the reason (once read: at once, or by the first probe)
for why in "payload too big" "payload malformed"; do
	check_ge "record: samples marked otel.process_context=$why" \
		"$(samples "$TMP/rec.stacks" '*' "label: otel.process_context=$why.;.*;work_a(;|\$)")" 20
done
check_eq "record: samples marked and labelled with a service" \
	"$(samples "$TMP/rec.stacks" '*' 'otel.process_context=.*service.name=|service.name=.*otel.process_context=')" 0

# --- the store and serve: `store query --service`, the UI's service and process filters --------
"$SS" store import --store "$TMP/s.db" "$TMP/rec.pb.gz" >/dev/null 2>&1
check_eq "store import" $? 0
got=$("$SS" store query --store "$TMP/s.db" --service checkout -o - 2>/dev/null |
	awk '{ s += $NF } END { print s + 0 }')
check_eq "store query --service checkout: its samples" "$got" "$labeled"
check_eq "store query --service nosuch: none" "$("$SS" store query --store "$TMP/s.db" \
	--service nosuch -o - 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')" 0
"$SS" serve --listen 127.0.0.1:0 --store "$TMP/s.db" >"$TMP/serve.out" 2>"$TMP/serve.err" &
_bg_pids+=($!)
for ((i = 0; i < 100; i++)); do
	grep -q '^stackscope serve: http' "$TMP/serve.out" 2>/dev/null && break
	sleep 0.1
done
BASE=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve.out")
curl -s --noproxy '*' -m 20 -o "$TMP/filters.json" "$BASE/api/filters"
check_eq "serve: /api/filters services" "$($PY -c 'import json, sys
j = json.load(open(sys.argv[1]))
print(";".join("%s:%d" % (s["service"], s["samples"]) for s in j["services"]))' "$TMP/filters.json")" \
	"checkout:$labeled"
curl -s --noproxy '*' -m 20 -o "$TMP/svc.json" "$BASE/api/flamegraph?service=checkout"
check_eq "serve: flamegraph?service=checkout total" \
	"$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["total"])' "$TMP/svc.json")" "$labeled"
# the page in a headless browser: the service menu and filter, the process named after it
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] && $PY -c 'import selenium' 2>/dev/null; then
	curl -s --noproxy '*' -m 20 -o "$TMP/all.json" "$BASE/api/flamegraph"
	all=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["total"])' "$TMP/all.json")
	spid=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["services"][0]["pids"][0])' \
		"$TMP/filters.json")
	mkdir -p "$BUILD/artefacts/test_process_ctx"
	$PY "$SS_ROOT/tests/system/serve_browser.py" --services "$BASE/" \
		"$BUILD/artefacts/test_process_ctx" checkout "$labeled" "$all" "$spid" >"$TMP/browser.out" 2>&1
	rc=$?
	sed 's/^/        /' "$TMP/browser.out"
	check_eq "browser: service menu and filter ($(grep -c '^ok' "$TMP/browser.out") checks)" "$rc" 0
else
	skip_setup "chromium, chromium-driver or python3-selenium missing: no browser test"
fi
finish
