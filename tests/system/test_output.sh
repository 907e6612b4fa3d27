#!/bin/bash
# Output formats of one recording of a known process (-p PID), written three ways at once:
# pprof (checked with `go tool pprof`: sample types, period, labels pid/tid/comm/thread_comm,
# the chain in -traces), folded (same sample total) and SVG (well-formed XML that names the
# workload's functions); then --format, and --no-symbolize (addresses, no names).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish

HZ=499
spawn pid "$FIX/wl_chain_nofp" 6
sleep 0.3
record "$TMP/r.err" -F $HZ -d 1.5 -q -p "$pid" -o "$TMP/r.pb.gz" -o "$TMP/r.folded" \
	-o "$TMP/r.svg"
check_eq "exit status with three outputs" $? 0
folded_total=$(samples "$TMP/r.folded" '*')
check_ge "folded: samples" "$folded_total" 100

# pprof, read by the reference implementation
GO=${GO:-$( [[ -x /usr/lib/go/bin/go ]] && echo /usr/lib/go/bin/go || command -v go)}
if [[ ! -x $GO ]]; then
	skip_setup "pprof checks: go not found"
else
	export HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
	pp() { "$GO" tool pprof "$@" 2>"$TMP/pprof.err"; }
	check "pprof: go tool pprof parses the file" pp -raw "$TMP/r.pb.gz" >"$TMP/raw.txt"
	check "pprof: sample types samples/count and cpu/nanoseconds" \
		grep -qx 'samples/count cpu/nanoseconds' "$TMP/raw.txt"
	check "pprof: period type cpu nanoseconds" grep -qx 'PeriodType: cpu nanoseconds' \
		"$TMP/raw.txt"
	period=$(sed -n 's/^Period: //p' "$TMP/raw.txt")
	want=$((1000000000 / HZ))
	check "pprof: period ~ 1e9/$HZ ns (got '$period')" \
		test "${period:-0}" -ge $((want - want / 100)) -a "${period:-0}" -le $((want + want / 100))
	# every sample: its count, ns = count * period, and its four labels
	read -r n_samp n_cnt n_badns n_pid n_tid n_comm n_tcomm < <(awk -v pid="$pid" \
		-v period="$period" '
		/^Samples:/ { in_s = 1; next }
		/^Locations/ { in_s = 0 }
		in_s && /^ *[0-9]+ +[0-9]+:/ {
			ns++; c = $1; v = $2; sub(/:$/, "", v); cnt += c
			if (v != c * period) bad++
			next
		}
		in_s && /pid:\[/ { if (index($0, "pid:[" pid "]")) p++; if (index($0, "tid:[" pid "]")) t++ }
		in_s && /comm:\[/ {
			if ($0 ~ /(^|[ \t])comm:\[wl_chain_nofp\]/) cm++
			if (index($0, "thread_comm:[wl_chain_nofp]")) tc++
		}
		END { print ns + 0, cnt + 0, bad + 0, p + 0, t + 0, cm + 0, tc + 0 }' "$TMP/raw.txt")
	check_ge "pprof: samples (distinct stacks)" "$n_samp" 1
	check_eq "pprof: total sample count equals the folded total" "$n_cnt" "$folded_total"
	check_eq "pprof: samples whose cpu/nanoseconds != count * period" "$n_badns" 0
	check_eq "pprof: samples labelled pid:[$pid]" "$n_pid" "$n_samp"
	check_eq "pprof: samples labelled tid:[$pid]" "$n_tid" "$n_samp"
	check_eq "pprof: samples labelled comm:[wl_chain_nofp]" "$n_comm" "$n_samp"
	check_eq "pprof: samples labelled thread_comm:[wl_chain_nofp]" "$n_tcomm" "$n_samp"
	# the chain, leaf first, in -traces
	pp -traces "$TMP/r.pb.gz" | awk '/^-+\+-+$/ { print s; s = ""; next }
		{ sub(/^ *[0-9.]+[a-z]*s? +/, ""); gsub(/^ +| +$/, ""); s = s ";" $0 }
		END { print s }' >"$TMP/traces.txt"
	check "pprof -traces: a trace hot_leaf <- chain_c <- chain_b <- chain_a <- main" \
		grep -q ';hot_leaf;chain_c;chain_b;chain_a;main;' "$TMP/traces.txt"
	check "pprof -traces: the trace carries pid $pid" grep -q "pid:  *$pid;" "$TMP/traces.txt"
fi

# SVG
svg=$TMP/r.svg
if command -v xmllint >/dev/null; then
	check "svg: well-formed XML" xmllint --noout "$svg"
else
	check "svg: well-formed XML" python3 -c \
		'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$svg"
fi
check "svg: root element is <svg>" grep -q '<svg[ >]' "$svg"
for fn in wl_chain_nofp main chain_a chain_b chain_c hot_leaf; do
	check "svg: names $fn" grep -q ">[^<]*\\b$fn\\b" "$svg"
done

# --format overrides the file name; --no-symbolize writes module+offset frames only
spawn pid2 "$FIX/wl_chain_nofp" 4
sleep 0.3
record "$TMP/n.err" -F $HZ -d 1 -q -p "$pid2" --no-symbolize --format folded -o "$TMP/n.out"
check_eq "--no-symbolize --format folded: exit status" $? 0
n=$(samples "$TMP/n.out" wl_chain_nofp)
check_ge "--format folded: a folded file despite the .out name" "$n" 50
named=$(samples "$TMP/n.out" wl_chain_nofp '(main|chain_[abc]|hot_leaf)(;|$)')
check_eq "--no-symbolize: samples with function names" "$named" 0
addr=$(samples "$TMP/n.out" wl_chain_nofp \
	';wl_chain_nofp\+0x[0-9a-f]+;wl_chain_nofp\+0x[0-9a-f]+;wl_chain_nofp\+0x[0-9a-f]+;wl_chain_nofp\+0x[0-9a-f]+;wl_chain_nofp\+0x[0-9a-f]+$')
check_pct "--no-symbolize: samples ending in 5 wl_chain_nofp+0x... frames" "$addr" "$n" 90

finish
