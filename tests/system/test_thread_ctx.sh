#!/bin/bash
# OpenTelemetry's thread context (OTEP 4947), read in eBPF at each sample: the publisher
# tests/data/otel_tctx_pub.c (three threads switching spans 1-6 every 3 ms, burning in
# work_span_N while span N is attached; a thread with no span; hostile threads) with the TLS
# variable otel_thread_ctx_v1 in a shared library (TLSDESC) and in the executable (local-exec);
# spans start after 300 ms in work_startup (a process is read once stackscope knows it):
#  - every sample in work_span_N carries span N's id and its thread's trace id (>= 99 %), none
#    another span's;
#  - the thread without a span carries none;
#  - a variable pointing to unmapped memory: no span, counted ("record unreadable"), the samples
#    marked with the label otel.thread_context=unreadable;
#  - folded stacks (--trace-frames): a "[trace: ID span ID]" frame per span;
#  - `store query --trace ID`: the samples of that trace;
#  - a record another thread rewrites byte by byte between two spans X and Y: a sample carries
#    X or Y whole, never a mix;
#  - the attributes' key map (OTEP 4947's threadlocal.attribute_key_map, published in the
#    process context, OTEP 4719; the publisher's "keymap" mode names key 0 http.route): samples
#    in work_span_N labelled http.route=/span/N (>= 99 %), key 1 (outside the map) left out,
#    no thread.attr.N label (<= 1 %: samples before the context is read); without a map (the
#    runs above) the labels are thread.attr.0 and thread.attr.1.
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
ATTRS='(.label: thread[^;]*;)*' # the attribute labels between span_id and trace_id

check_publisher()
{
	local name=$1 f total n ok_n wrong none t attrs
	have_fixture "$name" || return
	RECORD_OPTS="-o $TMP/$name.folded --trace-frames" record_stacks "$name" "$FIX/$name" 3 hostile
	f=$TMP/$name.stacks
	check_summary "$TMP/$name.err" otel 1 "samples with a span" "record unreadable"
	for n in 1 2 3 4 5 6; do
		total=$(samples "$f" '*' ";work_span_$n;")
		ok_n=0
		for t in 1 2 3; do
			ok_n=$((ok_n + $(samples "$f" '*' \
				"label: span_id=5a00000000000${t}0${n}.;$ATTRS.label: trace_id=${T7E}0${t}.;.*;work_span_$n;")))
		done
		# its attributes (attrs-data: key 0 "/span/N", key 1 "GET"), as labels thread.attr.K
		attrs=$(samples "$f" '*' \
			"span_id=5a[0-9]*0${n}.;.label: thread.attr.0=/span/$n.;.label: thread.attr.1=GET.;.label: trace_id=.*;work_span_$n;")
		check_pct "$name: samples in work_span_$n with its attributes" "$attrs" "$total" 99 ||
			show_stacks "$f" "work_span_$n;"
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
	# its marker (once the process is known: no start-up burn on this thread)
	check_pct "$name: samples in work_unmapped marked otel.thread_context=unreadable" \
		"$(samples "$f" '*' 'label: otel.thread_context=unreadable.;.*;work_unmapped;')" "$total" 50
	check_eq "$name: samples with the marker and a span" \
		"$(samples "$f" '*' 'otel.thread_context=unreadable.*span_id=')" 0
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

# check_key_map NAME: the publisher in its "keymap" mode; its attributes named by the map
check_key_map()
{
	local name=$1 f total named n all=0 unnamed
	have_fixture "$name" || return
	record_stacks "$name-keymap" "$FIX/$name" 2 keymap
	f=$TMP/$name-keymap.stacks
	for n in 1 2 3 4 5 6; do
		total=$(samples "$f" '*' ";work_span_$n;")
		all=$((all + total))
		named=$(samples "$f" '*' \
			"label: http.route=/span/$n.;.label: service.name=tctx-keymap.;.label: span_id=5a00000000000[1-3]0${n}.;.label: trace_id=${T7E}0[1-3].;.*;work_span_$n;")
		check_ge "$name keymap: samples in work_span_$n" "$total" 10
		check_pct "$name keymap: samples in work_span_$n with http.route=/span/$n" \
			"$named" "$total" 99 || show_stacks "$f" "work_span_$n;"
	done
	unnamed=$(samples "$f" '*' 'label: thread.attr.|=GET.')
	check "$name keymap: samples with a thread.attr.N label or key 1's value ($unnamed of $all, <= 1 %)" \
		test $((unnamed * 100)) -le "$all"
	# an attribute goes with the span it was published with: every sample labelled
	# http.route=/span/N carries span N's id (wherever the thread was: in work_span_N, or
	# between the attach and the call)
	paired=0
	for n in 1 2 3 4 5 6; do
		paired=$((paired + $(samples "$f" '*' \
			"label: http.route=/span/$n.;.label: service.name=tctx-keymap.;.label: span_id=5a00000000000[1-3]0${n}.;")))
	done
	check_eq "$name keymap: samples with http.route=/span/N that carry span N's id" \
		"$paired" "$(samples "$f" '*' 'http.route=')" ||
		grep 'http.route=' "$f" | head -3 | cut -c1-500 | sed 's/^/        /'
}

# serve over a store with trace ids: the API's trace filter and trace table, --trace-url checked
# and substituted, then the page in a headless browser (serve_browser.py --traces)
check_serve_traces()
{
	local db=$1 id=$2 want=$3 base total py=python3 url bad
	[[ -x /usr/bin/python3 ]] && py=/usr/bin/python3
	local J="$py $SS_ROOT/tests/system/serve_json.py"
	for bad in 'javascript:alert(1)//{trace_id}' 'https://x.example/{trace_id}/{foo}' \
		'https://x.example/t/{trace_id}"onmouseover=x' 'https://x.example/nothing' \
		'ftp://x.example/{trace_id}' 'https:///{trace_id}'; do
		"$SS" serve --listen 127.0.0.1:0 --store "$db" --trace-url "$bad" >/dev/null 2>&1
		check_eq "serve --trace-url '$bad': refused" "$?" 2
	done
	url='https://traces.example/trace/{trace_id}?span={span_id}&a=1'
	"$SS" serve --listen 127.0.0.1:0 --store "$db" --trace-url "$url" >"$TMP/serve.out" \
		2>"$TMP/serve.err" &
	_bg_pids+=($!)
	local spid=$! end=$((SECONDS + 10))
	until grep -q '^stackscope serve: http' "$TMP/serve.out" 2>/dev/null; do
		[[ $SECONDS -ge $end ]] && break
		sleep 0.1
	done
	base=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve.out")
	check "serve --trace-url: listening (${base:-none})" test -n "$base" || return
	c() { curl -s --noproxy '*' -m 20 -o "$TMP/api.json" -w '%{http_code}' "$base$1"; }
	check_eq "api: flamegraph?trace=ID (upper case): 200" "$(c "/api/flamegraph?trace=${id^^}")" 200
	check_eq "api: flamegraph?trace=ID: that trace's samples" "$($J "$TMP/api.json" 'j["total"]')" \
		"$want"
	check_eq "api: a bad trace id: 400" "$(c '/api/flamegraph?trace=12zz')" 400
	check_eq "api: trace and label together: 400" \
		"$(c "/api/flamegraph?trace=$id&label=trace_id%3D$id")" 400
	check_eq "api: traces: 200" "$(c '/api/traces')" 200
	check_eq "api: traces: the template given" "$($J "$TMP/api.json" 'j["trace_url"]')" "$url"
	check_eq "api: traces: the three span threads' traces and the torn record's two" \
		"$($J "$TMP/api.json" 'sorted(t["trace_id"][-4:] for t in j["traces"])')" \
		"['1111', '2222', '7e01', '7e02', '7e03']"
	check_eq "api: traces: the trace's samples and six spans" \
		"$($J "$TMP/api.json" '[(t["samples"], t["spans"]) for t in j["traces"] if t["trace_id"] == "'"$id"'"]')" \
		"[($want, 6)]"
	check_eq "api: traces: the link, both ids substituted" \
		"$($J "$TMP/api.json" 'all(t["url"] == "https://traces.example/trace/%s?span=%s&a=1" % (t["trace_id"], t["span_id"]) for t in j["traces"])')" 1
	check_eq "api: traces?trace=ID: that trace alone" "$(c "/api/traces?trace=$id")" 200
	check_eq "  ... one row" "$($J "$TMP/api.json" '[t["trace_id"] for t in j["traces"]]')" "['$id']"
	total=$(c '/api/flamegraph' >/dev/null; $J "$TMP/api.json" 'j["total"]')
	if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] &&
		/usr/bin/python3 -c 'import selenium' 2>/dev/null; then
		c "/api/traces?trace=$id" >/dev/null
		local link
		link=$($J "$TMP/api.json" 'j["traces"][0]["url"]')
		mkdir -p "$BUILD/artefacts/test_thread_ctx"
		/usr/bin/python3 "$SS_ROOT/tests/system/serve_browser.py" --traces "$base/" \
			"$BUILD/artefacts/test_thread_ctx" "$id" "$want" "$total" "$link" \
			>"$TMP/browser.out" 2>&1
		local rc=$?
		sed 's/^/        /' "$TMP/browser.out"
		check_eq "browser: trace table and filter ($(grep -c '^ok' "$TMP/browser.out") checks)" \
			"$rc" 0
	else
		skip_setup "chromium, chromium-driver or python3-selenium missing: no browser test"
	fi
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	# no template: the trace ids link nowhere
	"$SS" serve --listen 127.0.0.1:0 --store "$db" >"$TMP/serve2.out" 2>/dev/null &
	_bg_pids+=($!)
	spid=$!
	end=$((SECONDS + 10))
	until grep -q '^stackscope serve: http' "$TMP/serve2.out" 2>/dev/null; do
		[[ $SECONDS -ge $end ]] && break
		sleep 0.1
	done
	base=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve2.out")
	check_eq "no --trace-url: traces answer" "$(c '/api/traces')" 200
	check_eq "no --trace-url: no template, no links" \
		"$($J "$TMP/api.json" 'j["trace_url"] is None and not any("url" in t for t in j["traces"])')" 1
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}

check_publisher otel_tctx_pub
check_publisher otel_tctx_pub_exe
check_key_map otel_tctx_pub

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
	check_serve_traces "$TMP/t.db" "${T7E}02" "$want"
fi
finish
