#!/bin/bash
# The span of each sample through the agent's OTLP export, end to end: `stackscope agent`
# exports to otlp_receiver.py while three publishers run at once, and every request is decoded
# by protoc against proto/ (otlp_trace_facts.py: none undecodable, no unknown field;
# OTLP_PROTO=DIR decodes with the .proto files under DIR instead, e.g. opentelemetry-proto
# v1.11.0's own). A sample's span is its Link (Sample.link_index into the dictionary's
# link_table), its thread-context attributes are sample attributes process.context.label.KEY
# (L below: the name the reference profiler gives the custom labels it reads, as Go's labels).
#  - OBI's map (a stand-in OBI, tests/data/obi_map_pub.c, its map pinned in a private bpffs
#    before the agent starts, --obi-map): samples in work_span_N link to OBI's trace id and
#    span N's id (>= 99 %), none to another span; work_nospan and work_zero link to none;
#    work_both to the thread context's span (it wins), never to the map's, once the agent
#    knows the process's thread context (the checks of the thread context count the samples
#    from the process's first with one of its spans, by their timestamps: on a loaded box the
#    agent learns a new process's TLS variable seconds after it starts, and before, OBI's span
#    is the one there);
#  - the thread context with a key map (tests/data/otel_tctx_pub.c "keymap": its process
#    context names key 0 http.route): samples in work_span_N link to span N and carry the
#    attribute http.route=/span/N (>= 99 %), no thread.attr.N and no key 1 (<= 1 %: samples
#    before the context is read); its resource has the published service.name;
#  - the thread context without a map (otel_tctx_pub_exe, with its hostile threads): the
#    attributes thread.attr.0 and thread.attr.1 (>= 99 %), its trace ids in the links; a
#    variable pointing to unmapped memory: no link, the marker attribute
#    otel.thread_context=unreadable; a record rewritten from another thread: X or Y whole;
#  - the agent's own store (--store) holds what it exported: `store query --trace ID` gives as
#    many samples as the OTLP requests link to that trace (OBI's and the thread context's), and
#    `store query --service tctx-keymap` the keymap publisher's (its published service.name).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture obi_map_pub || finish
have_fixture otel_tctx_pub || finish
have_fixture otel_tctx_pub_exe || finish
if ! command -v protoc >/dev/null; then
	fail "protoc missing (apt-get install protobuf-compiler)"
	finish
fi

PY=/usr/bin/python3
HZ=499
T0B=$(printf '0b%.0s' {1..15})
T5A=$(printf '5a%.0s' {1..16})
T7E=$(printf '7e%.0s' {1..15})
T11=$(printf '11%.0s' {1..16})
T22=$(printf '22%.0s' {1..16})
L=process.context.label.
BPFFS=$TMP/bpffs
bpffs_mount "$BPFFS" || finish
P=$BPFFS/traces_ctx_v1
"$FIX/obi_map_pub" pin "$P"
check_eq "OBI map pinned" "$?" 0

otlp_receiver_start "$TMP/rcv" || finish
"$SS" agent -F $HZ --interval 1 --cache-dir "" --obi-map "$P" \
	--otlp-endpoint "http://127.0.0.1:$RPORT" --store "$TMP/agent.db" 2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
wait_agent "$TMP/agent.err" "$APID" || { fail "the agent did not start: $(tail -3 "$TMP/agent.err")"; finish; }
otlp_first_request "$TMP/rcv" # the publishers start once the agent exports
"$FIX/obi_map_pub" run "$P" 6 >/dev/null 2>&1 &
OBI=$!
"$FIX/otel_tctx_pub" 6 keymap >/dev/null 2>&1 &
KEYED=$!
"$FIX/otel_tctx_pub_exe" 6 hostile >/dev/null 2>&1 &
PLAIN=$!
wait $OBI $KEYED $PLAIN
sleep 2.5 # the last interval exported
kill -TERM "$APID"
wait "$APID"
check_eq "agent: exit status" $? 0

$PY "$SS_ROOT/tests/system/otlp_trace_facts.py" "${OTLP_PROTO:-$SS_ROOT/proto}" "$TMP/rcv" >"$TMP/facts.txt" \
	2>"$TMP/facts.err"
mkdir -p "$BUILD/artefacts/test_trace_agent"
cp "$TMP/facts.txt" "$BUILD/artefacts/test_trace_agent/"
fact() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$TMP/facts.txt"; }
check_ge "OTLP: requests" "$(fact requests)" 3
check_eq "OTLP: requests protoc cannot decode" "$(fact decode_failed)" 0 || head -c 600 "$TMP/facts.err"
check_eq "OTLP: unknown fields" "$(fact unknown_fields)" 0

# count PID WORK_ERE [TRACE_ERE SPAN_ERE [ATTRS_ERE]]: the samples of PID in a work_* function
# matching WORK_ERE whose link and attributes match, taken at or after FROM (ns; 0: all, with
# the samples that have no timestamp)
FROM=0
count()
{
	awk -F'\t' -v pid="$1" -v w="^($2)\$" -v t="^(${3:-.*})\$" -v s="^(${4:-.*})\$" \
		-v a="${5:-}" -v from="$FROM" '$1 == "sample" && $2 == pid && $3 ~ w && $4 ~ t &&
			$5 ~ s && $7 ~ a && $9 >= from { n += $6 } END { print n + 0 }' "$TMP/facts.txt"
}

# known_from PID TRACE_ERE: the time of the first sample of PID linked to such a trace. The
# thread context is read once the agent knows the process's TLS variable: on a loaded box that
# can take longer than the publishers' start-up burn (0.3-0.8 s); the checks count the samples
# from then on (none: a time no sample has).
known_from()
{
	awk -F'\t' -v pid="$1" -v t="^($2)\$" '$1 == "sample" && $2 == pid && $4 ~ t && $9 > 0 &&
		(!m || $9 < m) { m = $9 } END { printf "%.0f\n", m ? m : 9e18 }' "$TMP/facts.txt"
}
# after_start PID TRACE_ERE: ms from PID's first sample to known_from
after_start()
{
	awk -F'\t' -v pid="$1" -v k="$(known_from "$1" "$2")" '$1 == "sample" && $2 == pid &&
		$9 > 0 && (!m || $9 < m) { m = $9 } END { printf "%.0f\n", (k - m) / 1e6 }' "$TMP/facts.txt"
}

# OBI's map
for n in 1 2 3 4 5 6; do
	total=$(count $OBI "work_span_$n")
	check_ge "OBI: samples in work_span_$n" "$total" 10
	right=$(count $OBI "work_span_$n" "${T0B}0[1-3]" "0b00000000000[1-3]0$n")
	check_pct "OBI: samples in work_span_$n linked to OBI's span $n" "$right" "$total" 99
	check_eq "OBI: samples in work_span_$n linked to another span" \
		"$(($(count $OBI "work_span_$n" '.*' '[^-].*') - right))" 0
done
for w in nospan zero; do
	check_ge "OBI: samples in work_$w" "$(count $OBI "work_$w")" 10
	check_eq "OBI: samples in work_$w with a link" "$(count $OBI "work_$w" '.*' '[^-].*')" 0
done
FROM=$(known_from $OBI "$T5A")
echo "# the first span of a thread context, ms after the process's first sample: OBI's publisher $(after_start $OBI "$T5A"), keymap $(after_start $KEYED "${T7E}0[1-3]"), no map $(after_start $PLAIN "${T7E}0[1-3]")"
total=$(count $OBI work_both)
check_ge "OBI: samples in work_both" "$total" 10
check_pct "OBI: samples in work_both linked to the thread context's span (it wins)" \
	"$(count $OBI work_both "$T5A" 5a0000000000ff01)" "$total" 99
check_eq "OBI: samples in work_both linked to the map's span" \
	"$(count $OBI work_both '.*' 0b0000000000ff02)" 0

# the thread context, with and without the process's key map
all=0
for n in 1 2 3 4 5 6; do
	FROM=$(known_from $KEYED "${T7E}0[1-3]")
	total=$(count $KEYED "work_span_$n")
	all=$((all + total))
	check_ge "keymap: samples in work_span_$n" "$total" 10
	check_pct "keymap: samples in work_span_$n linked to span $n, attribute http.route=/span/$n" \
		"$(count $KEYED "work_span_$n" "${T7E}0[1-3]" "5a00000000000[1-3]0$n" \
			"(^|[|])${L}http.route=/span/$n([|]|$)")" "$total" 99
	FROM=$(known_from $PLAIN "${T7E}0[1-3]")
	total=$(count $PLAIN "work_span_$n")
	check_ge "no map: samples in work_span_$n" "$total" 10
	check_pct "no map: samples in work_span_$n linked to span $n, thread.attr.0=/span/$n, thread.attr.1=GET" \
		"$(count $PLAIN "work_span_$n" "${T7E}0[1-3]" "5a00000000000[1-3]0$n" \
			"${L}thread.attr.0=/span/$n[|]${L}thread.attr.1=GET")" "$total" 99
done
FROM=$(known_from $PLAIN "${T7E}0[1-3]")
total=$(count $PLAIN work_unmapped)
check_ge "hostile: samples in work_unmapped" "$total" 10
check_pct "hostile: samples in work_unmapped with the marker ${L}otel.thread_context=unreadable" \
	"$(count $PLAIN work_unmapped - - "(^|[|])${L}otel.thread_context=unreadable([|]|\$)")" "$total" 99
check_eq "hostile: samples in work_unmapped with a link" "$(count $PLAIN work_unmapped '.*' '[^-].*')" 0
linked=$(count $PLAIN work_torn '.*' '[^-].*')
check_ge "hostile: samples in work_torn with a link" "$linked" 1
check_eq "hostile: samples in work_torn linked to a mix of two spans" \
	"$((linked - $(count $PLAIN work_torn "$T11" 5a0000000000ff01) - $(count $PLAIN work_torn "$T22" 5a0000000000ff02)))" 0
FROM=$(known_from $KEYED "${T7E}0[1-3]")
unnamed=$(count $KEYED 'work_span_[1-6]' '.*' '.*' 'thread.attr.|=GET')
check "keymap: samples with thread.attr.N or key 1's value ($unnamed of $all, <= 1 %)" \
	test $((unnamed * 100)) -le "$all"
check_eq "keymap: resource with the published service.name" \
	"$(awk -F'\t' -v p=$KEYED '$1 == "resource" && $2 == p && $3 == "service.name" { print $4 }' \
		"$TMP/facts.txt" | sort -u)" tctx-keymap
check_eq "keymap: the key map or schema in the resource" \
	"$(awk -F'\t' -v p=$KEYED '$1 == "resource" && $2 == p && $3 ~ /^threadlocal/' "$TMP/facts.txt" | wc -l)" 0

# the agent's store: the same spans and service (all requests)
FROM=0
stored() { "$SS" store query --store "$TMP/agent.db" "$@" -o - 2>/dev/null | awk '{ s += $NF } END { print s + 0 }'; }
for id in "${T0B}02" "${T7E}01" "$T5A"; do
	want=$(awk -F'\t' -v t="$id" '$1 == "sample" && $4 == t { n += $6 } END { print n + 0 }' \
		"$TMP/facts.txt")
	check_ge "store: OTLP samples of trace $id" "$want" 10
	check_eq "store query --trace $id: the OTLP requests' samples of that trace" \
		"$(stored --trace "$id")" "$want"
done
# (in OTLP service.name is the resource's, not a sample attribute: the samples of its pid, all
# of them at most, and at least those in spans, taken after the context was read)
got=$(stored --service tctx-keymap)
check_ge "store query --service tctx-keymap: at least its samples in spans" "$got" \
	"$(count $KEYED 'work_span_[1-6]')"
check "store query --service tctx-keymap: at most its samples ($got <= $(count $KEYED '.*'))" \
	test "$got" -le "$(count $KEYED '.*')"
finish
