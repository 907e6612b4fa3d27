#!/bin/bash
# `stackscope serve --otlp-listen` (src/serve/otlp_receiver.c) as the receiver of a real agent:
#  - `stackscope agent` (99 Hz, 1 s intervals) writes its own store and exports OTLP/HTTP to
#    the receiver on loopback while wl_chain_nofp runs; after its SIGTERM (the last interval
#    flushed) the receiver's store holds the same intervals (count, and each interval's end and
#    total) and, for the workload's pid, the same total and the same samples of the chain
#    hot_leaf <- chain_c <- chain_b <- chain_a <- main as the agent's own store: tolerance 0,
#    the agent sends what it stores and its log must say no export was dropped; every sample
#    carries the label host.name (the store's label filter and serve's API give all of them,
#    another host none).
#  - Hostile requests, each refused with its status and counted by reason in the receiver's
#    final log line: a malformed body and a lying length (400), a gzip bomb (64 MiB of zeros in
#    64 KB: 413 at the inflated cap), a body over the cap (413 from the server), 10 million
#    locations gzipped under the cap (400: the decoder's table cap), JSON (415), a corrupt gzip
#    stream (400), another path (404); a request with a memory Profile gets 200 with
#    partial_success (1 rejected profile); 100 requests at once pass the rate (429 and
#    Retry-After for some).
# Duration: ~40 s at load 18 on 2 cores (the agent's start, 8 s of profiling).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish

CHAIN='main;chain_a;chain_b;chain_c;hot_leaf'

# --- the receiver -----------------------------------------------------------------------------
"$SS" serve --listen 127.0.0.1:0 --store "$TMP/r.db" --otlp-listen 127.0.0.1:0 --otlp-max-mb 32 \
	>"$TMP/serve.out" 2>"$TMP/serve.err" &
SPID=$!
_bg_pids+=($SPID)
end=$((SECONDS + 20))
until grep -q "OTLP profiles received on port" "$TMP/serve.out" 2>/dev/null; do
	kill -0 $SPID 2>/dev/null && ((SECONDS < end)) || break
	sleep 0.1
done
RPORT=$(sed -n 's/.*OTLP profiles received on port \([0-9]*\).*/\1/p' "$TMP/serve.out")
if [[ -z $RPORT ]]; then
	fail "serve --otlp-listen did not start: $(tail -3 "$TMP/serve.err")"
	finish
fi
URL=http://127.0.0.1:$RPORT/v1development/profiles

# --- the agent exporting to it ----------------------------------------------------------------
spawn wpid "$FIX/wl_chain_nofp" 60
"$SS" agent -F 99 --interval 1 --cache-dir "" --store "$TMP/a.db" \
	--otlp-endpoint "http://127.0.0.1:$RPORT" 2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
if wait_agent "$TMP/agent.err" $APID; then
	sleep 8
	kill -TERM $APID
	wait $APID
	check_eq "agent exits 0 after SIGTERM" $? 0
else
	fail "the agent did not start: $(tail -3 "$TMP/agent.err")"
fi
grep -q "exports ok [1-9][0-9]* failed 0 retried [0-9]* dropped 0" "$TMP/agent.err" &&
	ok "the agent's exports all answered ok" ||
	fail "the agent's exports: $(grep -o 'exports ok[^,]*' "$TMP/agent.err" | tail -1)"

# intervals: "id start end total"; the exporter may widen a start to its events, so the ends
# and totals are compared
"$SS" store intervals --store "$TMP/a.db" | awk '{ print $3, $4 }' | sort >"$TMP/a.iv"
"$SS" store intervals --store "$TMP/r.db" | awk '{ print $3, $4 }' | sort >"$TMP/r.iv"
check_ge "the agent's store has intervals" "$(wc -l <"$TMP/a.iv")" 5
check_eq "the receiver's intervals (end, total) are the agent's" \
	"$(md5sum <"$TMP/r.iv")" "$(md5sum <"$TMP/a.iv")" ||
	diff "$TMP/a.iv" "$TMP/r.iv" | head -10 | sed 's/^/        /'

"$SS" store query --store "$TMP/a.db" --pid "$wpid" -o "$TMP/a.folded" 2>/dev/null
"$SS" store query --store "$TMP/r.db" --pid "$wpid" -o "$TMP/r.folded" 2>/dev/null
a_all=$(samples "$TMP/a.folded" wl_chain_nofp)
a_chain=$(samples "$TMP/a.folded" wl_chain_nofp "$CHAIN")
r_all=$(samples "$TMP/r.folded" wl_chain_nofp)
r_chain=$(samples "$TMP/r.folded" wl_chain_nofp "$CHAIN")
echo "    workload pid $wpid: agent's store $a_all samples ($a_chain in the chain)," \
	"receiver's $r_all ($r_chain)"
check_ge "the agent saw the workload's chain (not a vacuous comparison)" "$a_chain" 10
check_eq "the receiver's samples of the workload = the agent's" "$r_all" "$a_all"
check_eq "the receiver's samples of the chain = the agent's" "$r_chain" "$a_chain"

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
UPORT=$(sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$TMP/serve.out")
api_total()
{
	# the answer's own total comes first, the functions' after it
	curl -s "http://127.0.0.1:$UPORT/api/top?from=0&limit=1&label=host.name%3D$1" |
		grep -o '"total":[0-9]*' | head -1 | cut -d: -f2
}
check_eq "the API's total for host.name=$host = the store's" "$(api_total "$host")" "$all"
check_eq "the API's total for another host" "$(api_total "not-$host")" 0

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

kill -TERM $SPID
wait $SPID
check_eq "serve exits 0 after SIGTERM" $? 0
line=$(grep "otlp receiver: .* requests stored" "$TMP/serve.err" | tail -1)
echo "    $line"
for want in "malformed 2" "too_large 1" "limit 1" "gzip 1" "media 1" "route 1" "rate $n429" \
	"refused by the server: 1,"; do
	[[ $line == *"$want"* ]] && ok "refusals counted: $want" || fail "refusals counted: $want"
done
grep -q "warning: otlp receiver: refused a request (limit, 1 so far): 400" "$TMP/serve.err" &&
	ok "a refusal is logged" || fail "no log line of the limit refusal"

finish
