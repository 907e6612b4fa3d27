#!/bin/bash
# Short-lived processes: wl_short runs 8 children one after another, each burning ~120 ms in
# main -> short_work -> short_leaf. Every child is new to the profiler (new pid, mappings
# and unwind tables to load), so samples taken before its tables are ready show up here.
# Checked under `-- COMMAND` (children of the command) and system-wide.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_short || finish

CHAIN='main;short_work;short_leaf(;|$)'

# check_short FILE WHAT
check_short()
{
	local f=$1 what=$2 total named full
	total=$(samples "$f" wl_short ';short_(work|leaf)(;|$)')
	named=$(samples "$f" wl_short ";$CHAIN")
	full=$(samples "$f" wl_short "^wl_short;${START_RE}$CHAIN")
	# 8 x 120 ms at 499 Hz is ~480 samples on an idle box; the box may be shared
	check_ge "$what: samples in short_work/short_leaf" "$total" 80
	check_pct "$what: of those, main;short_work;short_leaf" "$named" "$total" 85
	check_pct "$what: of those, complete back to _start" "$full" "$total" 85 ||
		show "$f" wl_short
}

record "$TMP/cmd.err" -F 499 -q -o "$TMP/cmd.folded" -- "$FIX/wl_short" 8
check_eq "-- wl_short 8: exit status" $? 0
check_short "$TMP/cmd.folded" "-- wl_short 8"

# system-wide: start the recording first, then the launcher once it samples
record "$TMP/all.err" -F 499 -d 6 -o "$TMP/all.folded" &
rec=$!
wait_recording "$TMP/all.err" $rec || fail "system-wide: the recording did not start"
"$FIX/wl_short" 8
wait $rec
check_eq "system-wide: exit status" $? 0
check_short "$TMP/all.folded" "system-wide"

finish
