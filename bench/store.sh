#!/bin/bash
# The embedded store (src/store/): a day of the agent's default data (19 Hz, 5 s intervals)
# merged into one pprof, against the peer a user without the store has today: the agent's
# pprof folder merged by `go tool pprof -proto`, on the same intervals, in the same run.
# Method: the agent records the real box (wl_chain_nofp on one core, plus whatever else runs)
# for 60 s into pprof files (12 intervals); bench/store_fill.c replays them round robin as
# 17280 consecutive intervals (one day) into a store, and writes the first 720 (one hour) as
# pprof files too. Timed (wall and user+sys CPU, medians of 5; the peer 3): `stackscope store query` over the
# day, over the hour, over the day filtered by --comm; `go tool pprof -proto` over the hour's
# files. Also the bytes on disk of an hour and a day, and the write time per interval.
# Usage: sudo BUILD=build bench/store.sh
source "$(dirname "$0")/lib.sh"
set -e
bench_out bench-store 'kill $(jobs -p) 2>/dev/null || true'
mkdir -p "$out/hour"

store_day_sources 62
fill_day=$("$out/store_fill" "$out/day.db" 17280 5 "$out/hour" 0 "$out"/real/*.pb.gz)
fill_hour=$("$out/store_fill" "$out/hour.db" 720 5 "$out/hour" 720 "$out"/real/*.pb.gz)

timed() { # runs "$@" N times; prints the median wall time and the median CPU time in s
	timed_runs "$@" >"$out/times"
	echo "$(awk '{ print $1 }' "$out/times" | median) $(awk '{ print $2 + $3 }' "$out/times" | median)"
}

day=$(timed 5 ./stackscope store query --store "$out/day.db" -o "$out/d.pb.gz")
hour=$(timed 5 ./stackscope store query --store "$out/hour.db" -o "$out/h.pb.gz")
comm=$(timed 5 ./stackscope store query --store "$out/day.db" --comm stackscope -o "$out/c.pb.gz")
export HOME=$out GOCACHE=$out/gocache GOTOOLCHAIN=local
peer=$(timed 3 sh -c "go tool pprof -proto $out/hour/*.pb.gz >$out/p.pb.gz")

store_day_heading "store query"
printf '%-44s %10s %10s\n' what "wall_s" "cpu_s"
printf '%-44s %10.3f %10.3f\n' "stackscope store query, a day" $day
printf '%-44s %10.3f %10.3f\n' "stackscope store query, a day, --comm stackscope" $comm
printf '%-44s %10.3f %10.3f\n' "stackscope store query, an hour" $hour
printf '%-44s %10.3f %10.3f\n' "go tool pprof -proto, an hour of pprof files" $peer
printf 'an hour: store %.1f MiB, pprof folder %.1f MiB; a day: store %.1f MiB\n' \
	"$(echo "$(stat -c %s "$out/hour.db") / 1048576" | bc -l)" \
	"$(echo "$(du -sb "$out/hour" | cut -f1) / 1048576" | bc -l)" \
	"$(echo "$(stat -c %s "$out/day.db") / 1048576" | bc -l)"
echo "write per interval (ms): day ${fill_day#* }, hour ${fill_hour#* }"
echo "peer / store, an hour, cpu: $(echo "${peer#* } / ${hour#* }" | bc -l | cut -c1-5)x"
