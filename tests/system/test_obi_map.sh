#!/bin/bash
# OBI's shared map traces_ctx_v1 (OpenTelemetry eBPF Instrumentation; specification pull
# request 4855), looked up in eBPF at each sample. A private bpffs holds the pins; the stand-in
# tests/data/obi_map_pub.c creates the map (LRU hash, pid_tgid -> trace id, span id) and writes
# its threads' entries as OBI would: three threads switching spans 1-6 every 3 ms and burning in
# work_span_N while their entry says span N; a thread without an entry (work_nospan); one whose
# entry has a zero trace id (work_zero); one with an entry and a thread context (work_both).
#  - map pinned before the start: every sample in work_span_N carries span N's id and its
#    thread's trace id (>= 99 %), none another span's; work_nospan and work_zero none;
#    work_both the thread context's span (it wins), never the map's;
#  - map pinned after the start (OBI started later): found by the re-check, spans right;
#  - a map of that name with another value size or type: refused with one line, counted, no
#    span read; a path with nothing pinned: nothing said.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
T0B=$(printf '0b%.0s' {1..15})
T5A=$(printf '5a%.0s' {1..16})
STACKS+=" --labels"
BPFFS=$TMP/bpffs
bpffs_mount "$BPFFS" || finish
mkdir -p "$BPFFS/otel"

# check_spans NAME MIN_PCT: the span threads' samples in NAME's stacks
check_spans()
{
	local name=$1 pct=$2 f=$TMP/$1.stacks n t total ok_n wrong
	for n in 1 2 3 4 5 6; do
		total=$(samples "$f" '*' ";work_span_$n;")
		ok_n=0
		for t in 1 2 3; do
			ok_n=$((ok_n + $(samples "$f" '*' \
				"label: span_id=0b00000000000${t}0${n}.;.label: trace_id=${T0B}0${t}.;.*;work_span_$n;")))
		done
		wrong=$(samples "$f" '*' "label: span_id=.*;work_span_$n;")
		wrong=$((wrong - ok_n))
		check_ge "$name: samples in work_span_$n" "$total" 10
		if [[ $pct -gt 0 ]]; then
			check_pct "$name: samples in work_span_$n with span $n's id" "$ok_n" "$total" \
				"$pct" || show_stacks "$f" "work_span_$n;"
		else
			check_ge "$name: samples in work_span_$n with span $n's id" "$ok_n" 1
		fi
		check_eq "$name: samples in work_span_$n with another id" "$wrong" 0 ||
			show_stacks "$f" "work_span_$n;"
	done
}

if have_fixture obi_map_pub; then
	# pinned before stackscope starts
	P=$BPFFS/otel/traces_ctx_v1
	"$FIX/obi_map_pub" pin "$P"
	check_eq "map pinned" "$?" 0
	RECORD_OPTS="--obi-map $P" record_stacks obi_pre "$FIX/obi_map_pub" run "$P" 3
	f=$TMP/obi_pre.stacks
	check_spans obi_pre 99
	for w in nospan zero; do
		check_ge "samples in work_$w" "$(samples "$f" '*' ";work_$w;")" 10
		check_eq "samples in work_$w with a span" \
			"$(samples "$f" '*' "span_id=.*;work_$w;")" 0 || show_stacks "$f" "work_$w;"
	done
	total=$(samples "$f" '*' ';work_both;')
	check_ge "samples in work_both" "$total" 10
	check_pct "samples in work_both with the thread context's span (it wins)" \
		"$(samples "$f" '*' 'span_id=5a0000000000ff01.;.label: trace_id='"$T5A"'.;.*;work_both;')" "$total" 99 || show_stacks "$f" 'work_both;'
	check_eq "samples in work_both with the map's span" \
		"$(samples "$f" '*' 'span_id=0b0000000000ff02.;.*;work_both;')" 0
	check_summary "$TMP/obi_pre.err" otel 10 "samples with an OBI span" \
		"OBI entry without trace id"
	check_eq "the map read, named once" "$(grep -c 'OBI map .*: spans read from map' "$TMP/obi_pre.err")" 1
	check_eq "summary: 1 map read, 0 refused" "$(grep -c '^OBI map  *1 maps read, 0 refused' "$TMP/obi_pre.err")" 1

	# pinned by the publisher after stackscope started (OBI started later): the re-check
	# (every 2 s) finds it; samples before that carry no span, none a wrong one
	P2=$BPFFS/otel/late
	RECORD_OPTS="--obi-map $P2" record_stacks obi_late "$FIX/obi_map_pub" run "$P2" 4
	check_spans obi_late 0
	check_eq "late map: read" "$(grep -c 'OBI map .*: spans read from map' "$TMP/obi_late.err")" 1

	# a map of that name and another layout: refused, one line, counted
	"$FIX/obi_map_pub" pin "$BPFFS/v16" 16
	"$FIX/obi_map_pub" pin "$BPFFS/hash" 24 1
	for bad in v16:"value of 16 bytes, not 24" hash:"map type 1, not an LRU hash"; do
		record "$TMP/bad.err" -F $HZ --obi-map "$BPFFS/${bad%%:*}" -o "$TMP/bad.pb.gz" \
			-- "$FIX/obi_map_pub" run "$BPFFS/${bad%%:*}" 0.5 >/dev/null
		check_eq "${bad%%:*}: record's exit status" "$?" 0
		check_eq "${bad%%:*}: refused with one line (${bad#*:})" "$(grep -c "OBI map .*: ${bad#*:}.*: not used" "$TMP/bad.err")" 1 ||
			cat "$TMP/bad.err"
		check_eq "${bad%%:*}: counted" "$(grep -c '^OBI map  *0 maps read, 1 refused' "$TMP/bad.err")" 1
		check_eq "${bad%%:*}: samples with a span of the map" \
			"$($STACKS "$TMP/bad.pb.gz" | grep -c 'span_id=0b')" 0
	done

	# nothing pinned there: nothing said, nothing counted
	record "$TMP/none.err" -F $HZ --obi-map "$BPFFS/none" -o "$TMP/none.pb.gz" -- true
	check_eq "nothing pinned: exit status" "$?" 0
	check_eq "nothing pinned: no OBI line" "$(grep -c 'OBI map' "$TMP/none.err")" 0
fi
finish
