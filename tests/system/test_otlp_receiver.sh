#!/bin/bash
# `stackscope serve --otlp-listen` and `--otlp-grpc-listen` (src/serve/otlp_receiver.c,
# grpc_listener.c) as the receivers of real agents:
#  - two `stackscope agent`s (99 Hz, 1 s intervals) write their own stores and export, one
#    OTLP/HTTP and one OTLP/gRPC (libcurl's HTTP/2), each to a serve of its own on loopback,
#    while wl_chain_nofp runs; after their SIGTERM (the last interval flushed) each receiver's
#    store holds the same intervals (count, and each interval's end and total) and, for the
#    workload's pid, the same total and the same samples of the chain hot_leaf <- chain_c <-
#    chain_b <- chain_a <- main as its agent's own store: tolerance 0, the agent sends what it
#    stores and its log must say no export was dropped; every sample carries the label
#    host.name (the store's label filter and serve's API give all of them, another host none).
#  - Hostile requests, each refused with its status and counted by reason in the receiver's
#    final log line: a malformed body and a lying length (400), a gzip bomb (64 MiB of zeros in
#    64 KB: 413 at the inflated cap), a body over the cap (413 from the server), 10 million
#    locations gzipped under the cap (400: the decoder's table cap), JSON (415), a corrupt gzip
#    stream (400), another path (404); a request with a memory Profile gets 200 with
#    partial_success (1 rejected profile); 100 requests at once pass the rate (429 and
#    Retry-After for some).
#  - Hostile gRPC calls (curl over HTTP/2): a malformed message (INVALID_ARGUMENT), a prefix
#    lying about its length (INTERNAL), a gzip bomb and a message over the cap
#    (RESOURCE_EXHAUSTED), a compressed message without grpc-encoding and another method
#    (UNIMPLEMENTED), JSON (HTTP 415), a memory Profile (OK with partial_success), HTTP/1.1 on
#    the gRPC port (a protocol error, the connection closed); counted in the final log line.
# Duration: ~45 s at load 18 on 2 cores (the agents' start, 8 s of profiling).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish

CHAIN='main;chain_a;chain_b;chain_c;hot_leaf'

# --- the receivers: OTLP/HTTP, and OTLP/gRPC on a serve of its own ----------------------------
# start_serve NAME ARGS...: serve with its store $TMP/NAME.db; its pid in SPID_NAME
start_serve()
{
	local name=$1 end
	shift
	"$SS" serve --listen 127.0.0.1:0 --store "$TMP/$name.db" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	printf -v "SPID_$name" '%s' $!
	_bg_pids+=($!)
	end=$((SECONDS + 20))
	until grep -q "OTLP profiles received" "$TMP/$name.out" 2>/dev/null; do
		kill -0 $! 2>/dev/null && ((SECONDS < end)) || break
		sleep 0.1
	done
}
start_serve r --otlp-listen 127.0.0.1:0 --otlp-max-mb 32
start_serve g --otlp-grpc-listen 127.0.0.1:0 --otlp-max-mb 32
SPID=$SPID_r
RPORT=$(sed -n 's/.*OTLP profiles received on port \([0-9]*\).*/\1/p' "$TMP/r.out")
GPORT=$(sed -n 's/.*OTLP profiles received over gRPC on port \([0-9]*\).*/\1/p' "$TMP/g.out")
if [[ -z $RPORT || -z $GPORT ]]; then
	fail "serve --otlp-listen / --otlp-grpc-listen did not start: $(tail -3 "$TMP/r.err" "$TMP/g.err")"
	finish
fi
URL=http://127.0.0.1:$RPORT/v1development/profiles

# --- two agents exporting to them, at once: OTLP/HTTP and OTLP/gRPC ---------------------------
spawn wpid "$FIX/wl_chain_nofp" 60
"$SS" agent -F 99 --interval 1 --cache-dir "" --store "$TMP/a.db" \
	--otlp-endpoint "http://127.0.0.1:$RPORT" 2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
"$SS" agent -F 99 --interval 1 --cache-dir "" --store "$TMP/ag.db" --otlp-protocol grpc \
	--otlp-endpoint "http://127.0.0.1:$GPORT" 2>"$TMP/agent_g.err" &
GAPID=$!
_bg_pids+=($GAPID)
if wait_agent "$TMP/agent.err" $APID && wait_agent "$TMP/agent_g.err" $GAPID; then
	sleep 8
	kill -TERM $APID $GAPID
	wait $APID
	check_eq "agent (OTLP/HTTP) exits 0 after SIGTERM" $? 0
	wait $GAPID
	check_eq "agent (OTLP/gRPC) exits 0 after SIGTERM" $? 0
else
	fail "the agents did not start: $(tail -3 "$TMP/agent.err" "$TMP/agent_g.err")"
fi

# round_trip WHAT AGENT_DB RECEIVER_DB AGENT_ERR: the receiver's store holds what the agent's does
round_trip()
{
	local what=$1 a=$2 r=$3 a_all a_chain r_all r_chain
	grep -q "exports ok [1-9][0-9]* failed 0 retried [0-9]* dropped 0" "$4" &&
		ok "$what: the agent's exports all answered ok" ||
		fail "$what: the agent's exports: $(grep -o 'exports ok[^,]*' "$4" | tail -1)"
	# intervals: "id start end total"; the exporter may widen a start to its events, so the
	# ends and totals are compared
	"$SS" store intervals --store "$a" | awk '{ print $3, $4 }' | sort >"$TMP/$what.a.iv"
	"$SS" store intervals --store "$r" | awk '{ print $3, $4 }' | sort >"$TMP/$what.r.iv"
	check_ge "$what: the agent's store has intervals" "$(wc -l <"$TMP/$what.a.iv")" 5
	check_eq "$what: the receiver's intervals (end, total) are the agent's" \
		"$(md5sum <"$TMP/$what.r.iv")" "$(md5sum <"$TMP/$what.a.iv")" ||
		diff "$TMP/$what.a.iv" "$TMP/$what.r.iv" | head -10 | sed 's/^/        /'
	"$SS" store query --store "$a" --pid "$wpid" -o "$TMP/$what.a.folded" 2>/dev/null
	"$SS" store query --store "$r" --pid "$wpid" -o "$TMP/$what.r.folded" 2>/dev/null
	a_all=$(samples "$TMP/$what.a.folded" wl_chain_nofp)
	a_chain=$(samples "$TMP/$what.a.folded" wl_chain_nofp "$CHAIN")
	r_all=$(samples "$TMP/$what.r.folded" wl_chain_nofp)
	r_chain=$(samples "$TMP/$what.r.folded" wl_chain_nofp "$CHAIN")
	echo "    $what: workload pid $wpid: agent's store $a_all samples ($a_chain in the chain)," \
		"receiver's $r_all ($r_chain)"
	check_ge "$what: the agent saw the workload's chain (not a vacuous comparison)" "$a_chain" 10
	check_eq "$what: the receiver's samples of the workload = the agent's" "$r_all" "$a_all"
	check_eq "$what: the receiver's samples of the chain = the agent's" "$r_chain" "$a_chain"
}
round_trip http "$TMP/a.db" "$TMP/r.db" "$TMP/agent.err"
round_trip grpc "$TMP/ag.db" "$TMP/g.db" "$TMP/agent_g.err"

host=$(hostname)
all=$("$SS" store query --store "$TMP/r.db" -o - 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
by_host=$("$SS" store query --store "$TMP/r.db" --label "host.name=$host" -o - 2>/dev/null |
	awk '{ s += $NF } END { print s + 0 }')
other=$("$SS" store query --store "$TMP/r.db" --label "host.name=not-$host" -o - 2>/dev/null |
	awk '{ s += $NF } END { print s + 0 }')
check_ge "the receiver's store has samples" "$all" 1
check_eq "every received sample has the label host.name=$host" "$by_host" "$all"
check_eq "another host.name has none" "$other" 0
# the web UI's API over the same store, filtered by host
UPORT=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TMP/r.out")
api_total()
{
	# the answer's own total comes first, the functions' after it
	curl -s "http://127.0.0.1:$UPORT/api/top?from=0&limit=1&label=host.name%3D$1" |
		grep -o '"total":[0-9]*' | head -1 | cut -d: -f2
}
check_eq "the API's total for host.name=$host = the store's" "$(api_total "$host")" "$all"
check_eq "the API's total for another host" "$(api_total "not-$host")" 0
# the UI's host menu: /api/filters lists the host with every sample
curl -s "http://127.0.0.1:$UPORT/api/filters" >"$TMP/filters.json"
check_eq "the API's host menu: $host with every sample" "$(/usr/bin/python3 -c '
import json, sys
print(" ".join("%s=%d" % (h["host"], h["samples"]) for h in json.load(open(sys.argv[1]))["hosts"]))
' "$TMP/filters.json")" "$host=$all"

# --- hostile requests -------------------------------------------------------------------------
/usr/bin/python3 - "$TMP" <<'EOF'
import gzip, sys
d = sys.argv[1]
def varint(v):
    out = b''
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
def field(num, body):  # a length-delimited field
    return varint(num << 3 | 2) + varint(len(body)) + body
def vfield(num, v):
    return varint(num << 3) + varint(v)
open(d + '/bad.pb', 'wb').write(b'\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01')
open(d + '/lying.pb', 'wb').write(b'\x12\x7f\x2a\x00')
open(d + '/bomb.gz', 'wb').write(gzip.compress(b'\0' * (64 << 20), 9))
open(d + '/big.pb', 'wb').write(b'\0' * (33 << 20))
n = 10 * 1000 * 1000
open(d + '/locs.gz', 'wb').write(gzip.compress(field(2, b'\x12\x00' * n), 6))
open(d + '/corrupt.gz', 'wb').write(gzip.compress(b'x' * 1000)[:-20] + b'\1' * 20)
# one memory Profile (alloc_objects/count): stored nothing, answered as partial success
strs = b''.join(field(5, s) for s in [b'', b'alloc_objects', b'count'])
dic = field(2, strs + field(2, b'') + field(7, b''))
prof = field(1, vfield(1, 1) + vfield(2, 2)) + field(2, vfield(1, 0) + field(4, b'\x05'))
open(d + '/mem.pb', 'wb').write(dic + field(1, field(2, field(2, prof))))
# the same as gRPC messages: a compressed flag and a 4-byte big-endian length before each
def grpc(name, body, compressed=0, length=None):
    n = len(body) if length is None else length
    open(d + '/' + name + '.grpc', 'wb').write(bytes([compressed]) + n.to_bytes(4, 'big') + body)
for name in ['bad.pb', 'mem.pb', 'big.pb']:
    grpc(name[:-3], open(d + '/' + name, 'rb').read())
grpc('bomb', open(d + '/bomb.gz', 'rb').read(), compressed=1)
grpc('lying', b'\x0a\x00', length=9)
EOF
post()
{ # post NAME FILE [curl args...]: the status of a POST of FILE, the body in $TMP/NAME.resp
	local name=$1 file=$2
	shift 2
	curl -s -o "$TMP/$name.resp" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/x-protobuf' "$@" --data-binary "@$file" "$URL"
}
check_eq "malformed protobuf: 400" "$(post bad "$TMP/bad.pb")" 400
check_eq "a lying length: 400" "$(post lying "$TMP/lying.pb")" 400
check_eq "gzip bomb (64 MiB of zeros): 413" \
	"$(post bomb "$TMP/bomb.gz" -H 'Content-Encoding: gzip')" 413
check_eq "a body over the cap: 413" "$(post big "$TMP/big.pb")" 413
check_eq "10 million locations: 400" "$(post locs "$TMP/locs.gz" -H 'Content-Encoding: gzip')" 400
grep -q "table past its cap" "$TMP/locs.resp" && ok "... the answer says the table cap" ||
	fail "the 10 million locations' answer: $(tr -cd '[:print:]' <"$TMP/locs.resp")"
check_eq "a corrupt gzip stream: 400" \
	"$(post corrupt "$TMP/corrupt.gz" -H 'Content-Encoding: gzip')" 400
check_eq "JSON: 415" "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	-H 'Content-Type: application/json' --data '{}' "$URL")" 415
check_eq "another path: 404" "$(curl -s -o /dev/null -w '%{http_code}' -X POST \
	-H 'Content-Type: application/x-protobuf' --data '' "http://127.0.0.1:$RPORT/v1/traces")" 404
check_eq "a memory profile: 200" "$(post mem "$TMP/mem.pb")" 200
# ExportProfilesServiceResponse{partial_success{1: rejected_profiles = 1, 2: message}}
check_eq "... with partial_success, 1 profile rejected" \
	"$(od -An -tx1 -N4 "$TMP/mem.resp" | tr -d ' ')" "$(printf '0a%02x0801' \
	$(($(stat -c %s "$TMP/mem.resp") - 2)))"
grep -q "alloc_objects/count" "$TMP/mem.resp" && ok "... naming the sample type" ||
	fail "the partial success message: $(tr -cd '[:print:]' <"$TMP/mem.resp")"

# 100 empty requests from one curl: the rate (20 a second) refuses some of them
args=()
for i in $(seq 100); do args+=(-o /dev/null -w '%{http_code}\n' "$URL"); done
curl -s -X POST -H 'Content-Type: application/x-protobuf' --data '' "${args[@]}" \
	>"$TMP/rate.codes"
n429=$(grep -c '^429$' "$TMP/rate.codes")
n200=$(grep -c '^200$' "$TMP/rate.codes")
echo "    100 requests at once: $n200 answered 200, $n429 answered 429"
check_ge "past the rate: 429" "$n429" 1
check_ge "within the rate: 200" "$n200" 15
check_eq "every one 200 or 429" $((n200 + n429)) 100

# --- hostile gRPC calls (curl: HTTP/2 with prior knowledge, trailers in the header dump) -------
GURL=http://127.0.0.1:$GPORT/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export
gcall()
{ # gcall NAME FILE [curl args...]: the call's grpc-status (its message in $TMP/NAME.gmsg)
	local name=$1 file=$2
	shift 2
	curl -s --http2-prior-knowledge -o "$TMP/$name.gresp" -D "$TMP/$name.ghdr" -X POST \
		-H 'content-type: application/grpc' -H 'te: trailers' "$@" --data-binary "@$file" \
		"${GURL_OVERRIDE:-$GURL}"
	tr -d '\r' <"$TMP/$name.ghdr" | sed -n 's/^grpc-message: //p' >"$TMP/$name.gmsg"
	tr -d '\r' <"$TMP/$name.ghdr" | sed -n 's/^grpc-status: //p' | tail -1
}
check_eq "gRPC: malformed protobuf: INVALID_ARGUMENT (3)" "$(gcall gbad "$TMP/bad.grpc")" 3
check_eq "gRPC: a prefix lying about its length: INTERNAL (13)" "$(gcall glying "$TMP/lying.grpc")" 13
check_eq "gRPC: gzip bomb (64 MiB of zeros): RESOURCE_EXHAUSTED (8)" \
	"$(gcall gbomb "$TMP/bomb.grpc" -H 'grpc-encoding: gzip')" 8
check_eq "gRPC: a compressed message without grpc-encoding: UNIMPLEMENTED (12)" \
	"$(gcall gnoenc "$TMP/bomb.grpc")" 12
check_eq "gRPC: a message over the cap (33 MiB): RESOURCE_EXHAUSTED (8)" \
	"$(gcall gbig "$TMP/big.grpc")" 8
check_eq "gRPC: another method: UNIMPLEMENTED (12)" \
	"$(GURL_OVERRIDE=http://127.0.0.1:$GPORT/opentelemetry.proto.collector.trace.v1.TraceService/Export \
		gcall groute "$TMP/mem.grpc")" 12
check_eq "gRPC: a content-type that is not gRPC: HTTP 415" "$(curl -s --http2-prior-knowledge \
	-o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/json' --data '{}' "$GURL")" 415
check_eq "gRPC: a memory profile: OK (0)" "$(gcall gmem "$TMP/mem.grpc")" 0
# the response message: prefix 00 + length, then partial_success{rejected_profiles = 1, ...}
check_eq "... with partial_success, 1 profile rejected" \
	"$(od -An -tx1 -j5 -N4 "$TMP/gmem.gresp" | tr -d ' ')" "$(printf '0a%02x0801' \
	$(($(stat -c %s "$TMP/gmem.gresp") - 7)))"
curl -s --max-time 5 -o /dev/null -X POST --data x "$GURL"
check_ge "gRPC: an HTTP/1.1 request on the gRPC port is not answered (curl's status)" $? 1

kill -TERM $SPID_g
wait $SPID_g
check_eq "serve (gRPC) exits 0 after SIGTERM" $? 0
line=$(grep "otlp receiver: .* requests stored" "$TMP/g.err" | tail -1)
echo "    $line"
# the receiver's own refusals (bad, bomb) and the listener's (lying, no encoding, big, route,
# media), the memory profile and the agent's requests as calls, the HTTP/1.1 request
for want in "malformed 1" "too_large 1" "5 refused by the listener" "1 protocol errors"; do
	[[ $line == *"$want"* ]] && ok "gRPC refusals counted: $want" || fail "gRPC refusals counted: $want"
done

kill -TERM $SPID
wait $SPID
check_eq "serve exits 0 after SIGTERM" $? 0
line=$(grep "otlp receiver: .* requests stored" "$TMP/r.err" | tail -1)
echo "    $line"
for want in "malformed 2" "too_large 1" "limit 1" "gzip 1" "media 1" "route 1" "rate $n429" \
	"refused by the HTTP server: 1,"; do
	[[ $line == *"$want"* ]] && ok "refusals counted: $want" || fail "refusals counted: $want"
done
grep -q "warning: otlp receiver: refused a request (limit, 1 so far): 400" "$TMP/r.err" &&
	ok "a refusal is logged" || fail "no log line of the limit refusal"

finish
