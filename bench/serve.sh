#!/bin/bash
# The web UI (stackscope serve, src/serve/) over a day of the agent's default data (19 Hz,
# 5 s intervals), against the peer a user has without it, in the same run:
#  - API latency: GET /api/flamegraph, /api/top and /api/pprof over the whole day (the merged
#    day-range query), cold (a range not merged yet: a distinct `to` past the day each time)
#    and warm (the same range again: the server's cache), against `stackscope store query` of
#    the same day into a pprof (the same merge from the command line); wall time, medians of 5;
#  - page load: headless Chromium (bench/serve_page.py) from navigation to the day's
#    flamegraph drawn, against the same browser opening the SVG flamegraph of the same day
#    made by `stackscope store query -o day.svg` (that command's time plus the SVG's load);
#    medians of 3, on one server (warm after the first) and on a fresh server each time (cold).
# The day: the agent records the real box for 32 s into pprof files (6 intervals, with
# wl_chain_nofp on one core), replayed round robin as 17280 intervals by bench/store_fill.c
# (as bench/store.sh).
# Usage: sudo BUILD=build bench/serve.sh
source "$(dirname "$0")/lib.sh"
set -e
bench_out bench-serve 'kill $(jobs -p) 2>/dev/null || true'
mkdir -p "$out/none"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

store_day_sources 32
fill=$("$out/store_fill" "$out/day.db" 17280 5 "$out/none" 0 "$out"/real/*.pb.gz)

serve_start() {
	: >"$out/serve.out"
	./stackscope serve --listen 127.0.0.1:0 --store "$out/day.db" >"$out/serve.out" 2>&1 &
	spid=$!
	for _ in $(seq 50); do grep -q http "$out/serve.out" && break; sleep 0.1; done
	base=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$out/serve.out")
}
serve_start

api() { # median wall time of 5 GETs of $1: cold (a new range each time: merged again), warm
	local i
	for i in 1 2 3 4 5; do # to: a distinct instant after the day, so the same samples
		curl -s -o "$out/a" -w '%{time_total}\n' "$base$1$(case $1 in *\?*) echo '&' ;; *) echo '?' ;; esac)to=$((4000000000000000000 + i))"
	done | median
	for i in 1 2 3 4 5; do
		curl -s -o "$out/a" -w '%{time_total}\n' "$base$1"
	done | median
}
cli() { timed_runs 5 "$@" | awk '{ print $1 }' | median; } # median wall time of 5 runs of "$@"

fg=$(api /api/flamegraph)
fg_sz=$(stat -c %s "$out/a")
top=$(api /api/top)
pp=$(api /api/pprof)
peer=$(cli ./stackscope store query --store "$out/day.db" -o "$out/d.pb.gz")
svg=$(cli ./stackscope store query --store "$out/day.db" -o "$out/day.svg")
page=$(/usr/bin/python3 bench/serve_page.py "$base/" "file://$out/day.svg" 3)
cold=$(for i in 1 2 3; do # a fresh server each time: nothing merged yet
	kill "$spid"
	wait "$spid" 2>/dev/null || true
	serve_start
	/usr/bin/python3 bench/serve_page.py "$base/" "file://$out/day.svg" 1 | awk 'NR == 1 { print $(NF - 3) }'
done | median)

store_day_heading "stackscope serve" "write per interval (ms): ${fill#* }"
printf '%-52s %10s %10s\n' what "cold_s" "warm_s"
printf '%-52s %10.3f %10.3f   (%d bytes of JSON)\n' "GET /api/flamegraph, the day" $fg "$fg_sz"
printf '%-52s %10.3f %10.3f\n' "GET /api/top, the day" $top
printf '%-52s %10.3f %10.3f\n' "GET /api/pprof, the day" $pp
printf '%-52s %10.3f\n' "peer: stackscope store query -o day.pb.gz" "$peer"
printf '%-52s %10.3f\n' "peer: stackscope store query -o day.svg" "$svg"
echo "$page"
printf '%-52s %10.3f\n' "page: the UI, a fresh server (median of 3)" "$cold"
