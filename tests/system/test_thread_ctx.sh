#!/bin/bash
# OpenTelemetry's thread context (OTEP 4947), read in eBPF at each sample: the publisher
# tests/data/otel_tctx_pub.c (three threads switching spans 1-6 every 3 ms, burning in
# work_span_N while span N is attached; a thread with no span; hostile threads) with the TLS
# variable otel_thread_ctx_v1 in a shared library (TLSDESC) and in the executable (local-exec);
# spans start after 300 ms in work_startup (a process is read once stackscope knows it):
#  - every sample in work_span_N carries span N's id and its thread's trace id (>= 99 %), none
#    another span's;
#  - the thread without a span carries none;
#  - a variable pointing to unmapped memory: no span, counted ("record unreadable");
#  - folded stacks (--trace-frames): a "[trace: ID span ID]" frame per span;
#  - `store query --trace ID`: the samples of that trace;
#  - a record another thread rewrites byte by byte between two spans X and Y: a sample carries
#    X or Y whole, never a mix.
# The ids come out as pprof labels trace_id/span_id (read back with pprof_stacks.py --labels;
# the patterns below match its "[label: k=v]" frames with "." for the brackets: awk -v would
# turn "\[" into a bracket expression).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
# the publisher's trace ids (no {n} in the patterns: mawk has no intervals)
T7E=$(printf '7e%.0s' {1..15})
T11=$(printf '11%.0s' {1..16})
T22=$(printf '22%.0s' {1..16})
STACKS+=" --labels"

check_publisher()
{
	local name=$1 f total n ok_n wrong none t
	have_fixture "$name" || return
	RECORD_OPTS="-o $TMP/$name.folded --trace-frames" record_stacks "$name" "$FIX/$name" 3 hostile
	f=$TMP/$name.stacks
	check_summary "$TMP/$name.err" otel 1 "samples with a span" "record unreadable"
	for n in 1 2 3 4 5 6; do
		total=$(samples "$f" '*' ";work_span_$n;")
		ok_n=0
		for t in 1 2 3; do
			ok_n=$((ok_n + $(samples "$f" '*' \
				"label: span_id=5a00000000000${t}0${n}.;.label: trace_id=${T7E}0${t}.;.*;work_span_$n;")))
		done
		wrong=$(samples "$f" '*' "label: span_id=.*;work_span_$n;")
		wrong=$((wrong - ok_n))
		check_ge "$name: samples in work_span_$n" "$total" 10
		check_pct "$name: samples in work_span_$n with span $n's id" "$ok_n" "$total" 99 ||
			show_stacks "$f" "work_span_$n;"
		check_eq "$name: samples in work_span_$n with another id" "$wrong" 0 ||
			show_stacks "$f" "work_span_$n;"
	done
	total=$(samples "$f" '*' ';work_nospan;')
	check_ge "$name: samples in work_nospan" "$total" 10
	check_eq "$name: samples in work_nospan with a span" \
		"$(samples "$f" '*' 'span_id=.*;work_nospan;')" 0
	total=$(samples "$f" '*' ';work_unmapped;')
	check_ge "$name: samples in work_unmapped" "$total" 10
	check_eq "$name: samples in work_unmapped with a span" \
		"$(samples "$f" '*' 'span_id=.*;work_unmapped;')" 0
	total=$(samples "$f" '*' 'span_id=.*;work_torn;')
	check_ge "$name: samples in work_torn with a span" "$total" 1
	none=$(samples "$f" '*' \
		'span_id=5a0000000000ff01.;.label: trace_id='"$T11"'.;.*;work_torn;')
	none=$((none + $(samples "$f" '*' \
		'span_id=5a0000000000ff02.;.label: trace_id='"$T22"'.;.*;work_torn;')))
	check_eq "$name: samples in work_torn with a mix of two spans" "$((total - none))" 0 ||
		show_stacks "$f" 'work_torn;'
	# folded with --trace-frames: the same spans as "[trace: ID span ID]" under the comm
	check_eq "$name: folded samples in work_span_N under their [trace: ...] frame" \
		"$(samples "$TMP/$name.folded" '*' \
			"^[^;]*;.trace: ${T7E}0[1-3] span 5a00000000000[1-3]0[1-6].;.*;work_span_[1-6];")" \
		"$(samples "$f" '*' 'span_id=.*;work_span_[1-6];')"
}

check_publisher otel_tctx_pub
check_publisher otel_tctx_pub_exe

# the store: the spans as labels of the stored samples; `store query --trace ID` keeps one trace's
if [[ -f $TMP/otel_tctx_pub.pb.gz ]]; then
	"$SS" store import --store "$TMP/t.db" "$TMP/otel_tctx_pub.pb.gz" >/dev/null 2>&1
	want=$(samples "$TMP/otel_tctx_pub.stacks" '*' "trace_id=${T7E}02")
	got=$("$SS" store query --store "$TMP/t.db" --trace "${T7E^^}02" -o - 2>/dev/null |
		awk '{ s += $NF } END { print s + 0 }')
	check_ge "store: samples of trace ${T7E}02" "$want" 10
	check_eq "store query --trace (upper case given): its samples" "$got" "$want"
	check_eq "store query --trace: a bad id refused" \
		"$("$SS" store query --store "$TMP/t.db" --trace 12zz -o - >/dev/null 2>&1; echo $?)" 2
fi
finish
