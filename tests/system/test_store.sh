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
#     into a fresh file that then holds intervals;
#  5. co-writers: `store import`s and a transaction of the sqlite3 command held for 3 s beside
#     the agent: no interval lost (its intervals follow each other without a gap), the lock
#     said once and the intervals kept meanwhile written late (one import used to silence the
#     agent: every later interval dropped, "database is locked");
#  6. another program's SQLite database given as the store: refused with one clear line, left
#     as it was (bytes, mtime, no -wal/-shm/-journal: it used to be switched to WAL first);
#  7. a read-only file system: readers read the store, writers say "Read-only file system"
#     (it used to be "not a stackscope store"); a full disk under the agent: intervals kept
#     and written once there is room, none lost.
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

# agent_intervals STORE SINCE_NS: "start end" of the intervals starting at or after SINCE_NS
agent_intervals()
{
	"$SS" store intervals --store "$1" 2>/dev/null | awk -v t="$2" '$2 >= t { print $2, $3 }'
}

# gaps FILE: how many of its intervals (sorted "start end" lines) begin more than 100 ms
# after the one before ended (an interval lost in between)
gaps()
{
	sort -n "$1" | awk 'NR > 1 && $1 - end > 100000000 { g++ } { end = $2 } END { print g + 0 }'
}

# stop_bg PID: SIGTERM, then waits (20 s at most)
stop_bg()
{
	local i
	kill -TERM "$1" 2>/dev/null
	for ((i = 0; i < 200; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	wait "$1" 2>/dev/null
}

# hold_lock STORE SECONDS: another writer holding the store's write lock that long (the
# sqlite3 command when installed, else Python's sqlite3 module)
hold_lock()
{
	if command -v sqlite3 >/dev/null; then
		sqlite3 "$1" ".timeout 10000" "BEGIN IMMEDIATE" ".shell sleep $2" "COMMIT"
	else
		python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
c.execute("BEGIN IMMEDIATE"); time.sleep(float(sys.argv[2])); c.execute("COMMIT")' "$1" "$2"
	fi
}

# --- 5. co-writers beside the agent --------------------------------------------------------
since=$(date +%s%N)
agent_start "$TMP/co.db" "$TMP/co.err"
if check "co-writers: the agent writes intervals" wait_intervals "$TMP/co.db" 2; then
	imports_ok=0
	for i in 1 2 3 4; do
		"$SS" store import --store "$TMP/co.db" "$TMP/r.pb.gz" >/dev/null 2>>"$TMP/imp.err" &&
			imports_ok=$((imports_ok + 1))
		sleep 0.3
	done &
	IPID=$!
	sleep 0.5
	hold_lock "$TMP/co.db" 3 &
	HPID=$!
	"$SS" store import --store "$TMP/co.db" "$TMP/r.pb.gz" >/dev/null 2>>"$TMP/imp.err"
	check_eq "co-writers: an import while the lock is held waits and succeeds" $? 0
	wait $IPID
	wait $HPID
	check_eq "co-writers: the sqlite3 transaction held 3 s committed" $? 0
	sleep 2 # intervals after the co-writers
	stop_bg "$APID"
	agent_intervals "$TMP/co.db" "$since" >"$TMP/co.iv"
	check_ge "co-writers: the agent's intervals" "$(grep -c . "$TMP/co.iv")" 10
	check_eq "co-writers: intervals lost (gaps between the agent's intervals)" \
		"$(gaps "$TMP/co.iv")" 0 || sort -n "$TMP/co.iv" | head -20 | sed 's/^/        /'
	check_eq "co-writers: imports that failed" "$(grep -c . "$TMP/imp.err")" 0 ||
		head -3 "$TMP/imp.err"
	check "co-writers: the lock said in the log" grep -q "another writer holds its lock" \
		"$TMP/co.err"
	check "co-writers: the intervals kept were written late" grep -q "kept intervals written late" \
		"$TMP/co.err"
	check "co-writers: no interval dropped" \
		bash -c "! grep -Eq 'intervals? (dropped|lost)|: lost' '$TMP/co.err'" ||
		grep -E 'dropped|lost' "$TMP/co.err" | head -3
	check "co-writers: the store is whole" consistent "$TMP/co.db"
else
	tail -5 "$TMP/co.err"
	stop_bg "$APID"
fi

# --- 6. another program's database ---------------------------------------------------------
python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT);"
		"INSERT INTO users(name) VALUES (\"ada\"), (\"grace\");")
c.close()' "$TMP/app.db"
cp -p "$TMP/app.db" "$TMP/app.db.orig"
mtime0=$(stat -c %Y.%y "$TMP/app.db")
sleep 0.1
timeout 30 "$SS" agent -F 99 --interval 0.5 --cache-dir "" --store "$TMP/app.db" 2>"$TMP/app.err"
check_eq "foreign database: the agent refuses it (exit status)" $? 1
check "foreign database: one clear line" grep -q "not a stackscope store: an SQLite database of another program" \
	"$TMP/app.err" || tail -3 "$TMP/app.err"
"$SS" store import --store "$TMP/app.db" "$TMP/r.pb.gz" >/dev/null 2>"$TMP/app-imp.err"
check_eq "foreign database: store import refuses it (exit status)" $? 1
"$SS" store intervals --store "$TMP/app.db" >/dev/null 2>>"$TMP/app-imp.err"
check "foreign database: the same bytes" cmp -s "$TMP/app.db" "$TMP/app.db.orig"
check_eq "foreign database: the same mtime" "$(stat -c %Y.%y "$TMP/app.db")" "$mtime0"
check_eq "foreign database: no -wal, -shm or -journal file" \
	"$(ls "$TMP" | grep -c '^app\.db-')" 0
check "foreign database: not moved aside" bash -c "! compgen -G '$TMP/app.db.corrupt-*'"

# --- 7. a read-only file system, a full disk -------------------------------------------------
mkdir -p "$TMP/rw" "$TMP/ro"
cp "$TMP/rt.db" "$TMP/rw/rt.db"
if mount --bind "$TMP/rw" "$TMP/ro" && mount -o remount,bind,ro "$TMP/ro"; then
	n=$("$SS" store intervals --store "$TMP/ro/rt.db" 2>"$TMP/ro.err" | grep -c .)
	check_ge "read-only file system: store intervals reads the store" "$n" 1 ||
		cat "$TMP/ro.err"
	"$SS" store import --store "$TMP/ro/rt.db" "$TMP/r.pb.gz" 2>"$TMP/ro-imp.err"
	check "read-only file system: store import says so" grep -q "Read-only file system" \
		"$TMP/ro-imp.err" || cat "$TMP/ro-imp.err"
	timeout 30 "$SS" agent -F 99 --interval 0.5 --cache-dir "" --store "$TMP/ro/new.db" \
		2>"$TMP/ro-agent.err"
	check_eq "read-only file system: the agent refuses to start" $? 1
	check "read-only file system: the agent says so" grep -q "Read-only file system" \
		"$TMP/ro-agent.err" || tail -2 "$TMP/ro-agent.err"
	umount "$TMP/ro"
else
	fail "read-only file system: cannot make a read-only bind mount"
fi
mkdir -p "$TMP/small"
if mount -t tmpfs -o size=16m tmpfs "$TMP/small"; then
	since=$(date +%s%N)
	agent_start "$TMP/small/s.db" "$TMP/small.err"
	if check "full disk: the agent writes intervals" wait_intervals "$TMP/small/s.db" 2; then
		dd if=/dev/zero of="$TMP/small/filler" bs=64k 2>/dev/null
		sleep 3 # six intervals meet the full disk
		check "full disk: said in the log" grep -q "No space left on device" "$TMP/small.err" ||
			tail -3 "$TMP/small.err"
		rm -f "$TMP/small/filler"
		sleep 2
		stop_bg "$APID"
		agent_intervals "$TMP/small/s.db" "$since" >"$TMP/small.iv"
		check_ge "full disk: the agent's intervals" "$(grep -c . "$TMP/small.iv")" 10
		check_eq "full disk: intervals lost (gaps)" "$(gaps "$TMP/small.iv")" 0 ||
			sort -n "$TMP/small.iv" | head -20 | sed 's/^/        /'
		check "full disk: the intervals kept were written late" \
			grep -q "kept intervals written late" "$TMP/small.err"
		check "full disk: the store is whole" consistent "$TMP/small/s.db"
	else
		tail -5 "$TMP/small.err"
		stop_bg "$APID"
	fi
	umount "$TMP/small"
else
	fail "full disk: cannot mount a small tmpfs"
fi

finish
