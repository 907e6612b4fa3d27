#!/bin/bash
# The embedded store (src/store/) with real recordings of wl_chain_nofp
# (main -> chain_a -> chain_b -> chain_c -> hot_leaf):
#  1. round trip: a recorded pprof imported, queried back as pprof: the same stacks and counts
#     (per comm and thread), read by pprof_stacks.py;
#  2. the agent writing the store: the known chain dominates the workload's merged samples,
#     filtered by pid and by executable; queries by another process while the agent writes
#     all succeed and never see a partial interval (query total == sum of interval totals);
#  3. the agent killed with SIGKILL while writing: the file opens, the intervals it holds are
#     whole (same equality), at least all but the last are there;
#  4. a corrupt store file: the agent says so clearly, moves it aside, and keeps profiling
#     into a fresh file that then holds intervals.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish

CHAIN='main;chain_a;chain_b;chain_c;hot_leaf$'
spawn pid "$FIX/wl_chain_nofp" 60
sleep 0.3

# --- 1. round trip of a recording ---------------------------------------------------------
record "$TMP/r.err" -F 199 -d 1.5 -q -p "$pid" -o "$TMP/r.pb.gz"
check_eq "record: exit status" $? 0
"$SS" store import --store "$TMP/rt.db" "$TMP/r.pb.gz" >"$TMP/imp.out" 2>&1
check_eq "import: exit status" $? 0
"$SS" store query --store "$TMP/rt.db" -o "$TMP/q.pb.gz" 2>"$TMP/q.err"
check_eq "query: exit status" $? 0
python3 "$SS_ROOT/tests/system/pprof_stacks.py" --comm --thread "$TMP/r.pb.gz" | sort >"$TMP/in.txt"
python3 "$SS_ROOT/tests/system/pprof_stacks.py" --comm --thread "$TMP/q.pb.gz" | sort >"$TMP/out.txt"
check_ge "round trip: stacks recorded" "$(wc -l <"$TMP/in.txt")" 1
check_pct "round trip: the chain in the recording" \
	"$(samples "$TMP/in.txt" wl_chain_nofp "$CHAIN")" "$(samples "$TMP/in.txt" wl_chain_nofp)" 80
check "round trip: the same stacks, threads and counts out as in" cmp -s "$TMP/in.txt" "$TMP/out.txt" ||
	diff "$TMP/in.txt" "$TMP/out.txt" | head -5

# --- 2. the agent writes, others read -------------------------------------------------------
# consistent STORE: the samples merged over the intervals listed equal the sum of their totals
# (--to just past the start of the last one listed: intervals committed since start later)
consistent()
{
	local list n t last q
	list=$("$SS" store intervals --store "$1" 2>/dev/null)
	read -r n t last < <(awk '{ s += $4; l = $2 } END { printf "%d %d %s\n", NR, s, l == "" ? 0 : l }' <<<"$list")
	q=$("$SS" store query --store "$1" --to $((last + 1)) -o - 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
	[[ $n -gt 0 && $t -gt 0 && $t == "$q" ]] && return 0
	echo "        $n intervals, $t samples in their totals, $q merged"
	return 1
}

agent_start()
{
	"$SS" agent -F 99 --interval 0.5 --cache-dir "" --store "$1" 2>"$2" &
	APID=$!
	_bg_pids+=($APID)
}

# wait_intervals STORE N: until STORE holds N intervals (30 s at most)
wait_intervals()
{
	local end=$((SECONDS + 30)) n
	while [[ $SECONDS -lt $end ]]; do
		n=$("$SS" store intervals --store "$1" 2>/dev/null | wc -l)
		[[ $n -ge $2 ]] && return 0
		sleep 0.2
	done
	return 1
}

agent_start "$TMP/a.db" "$TMP/a.err"
check "agent: 4 intervals in the store within 30 s" wait_intervals "$TMP/a.db" 4 ||
	tail -5 "$TMP/a.err"
reads=0 good=0
for _ in 1 2 3 4 5 6; do
	reads=$((reads + 1))
	consistent "$TMP/a.db" && good=$((good + 1))
done
check_eq "reads while the agent writes: whole intervals every time" "$good/$reads" "$reads/$reads"
"$SS" store query --store "$TMP/a.db" --pid "$pid" -o "$TMP/a.folded" 2>/dev/null
check_pct "agent store, --pid: the chain dominates" \
	"$(samples "$TMP/a.folded" wl_chain_nofp "$CHAIN")" "$(samples "$TMP/a.folded" wl_chain_nofp)" 80
check_eq "agent store, --pid: no other process" "$(comms "$TMP/a.folded" | tr '\n' ' ')" \
	"wl_chain_nofp "
"$SS" store query --store "$TMP/a.db" --exe "$(readlink -f "$FIX/wl_chain_nofp")" \
	-o "$TMP/e.folded" 2>/dev/null
check_ge "agent store, --exe: the chain" "$(samples "$TMP/e.folded" wl_chain_nofp "$CHAIN")" 1

# --- 3. kill -9 while writing ----------------------------------------------------------------
n_before=$("$SS" store intervals --store "$TMP/a.db" | wc -l)
sleep 0.7
kill -9 "$APID"
wait "$APID" 2>/dev/null
n_after=$("$SS" store intervals --store "$TMP/a.db" 2>"$TMP/k.err" | wc -l)
check_eq "after kill -9: the store opens" "$(cat "$TMP/k.err")" ""
check_ge "after kill -9: the intervals written before are there" "$n_after" "$n_before"
check "after kill -9: every interval is whole" consistent "$TMP/a.db"

# --- 4. a corrupt file ----------------------------------------------------------------------
cp "$TMP/a.db" "$TMP/c.db"
# the header's magic and the first pages overwritten
dd if=/dev/urandom of="$TMP/c.db" bs=4096 count=3 conv=notrunc status=none
rm -f "$TMP/c.db-wal" "$TMP/c.db-shm"
agent_start "$TMP/c.db" "$TMP/c.err"
check "corrupt: the agent writes intervals into a fresh file" wait_intervals "$TMP/c.db" 2 ||
	tail -5 "$TMP/c.err"
check "corrupt: the agent says the file is corrupt and where it went" \
	grep -q "store $TMP/c.db is corrupt (.*): moved to $TMP/c.db.corrupt-" "$TMP/c.err"
moved_aside() { compgen -G "$TMP/c.db.corrupt-*" >/dev/null; }
check "corrupt: the old file is kept aside" moved_aside
check "corrupt: the agent is still running" kill -0 "$APID"
kill "$APID"
wait "$APID" 2>/dev/null
check "corrupt: the fresh store is whole" consistent "$TMP/c.db"

finish
