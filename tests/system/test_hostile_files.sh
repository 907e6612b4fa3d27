#!/bin/bash
# Files that other users and containers control, changed or planted to hurt the profiler. Each
# case failed before stackscope treated them as hostile:
#  - a library truncated or rewritten in place while mapped (SIGBUS killed the recording);
#  - a FIFO where .gnu_debuglink points (open() blocked the recording forever);
#  - two same-size binaries differing only inside .eh_frame (they shared one file id, so the
#    good one was unwound with the corrupt one's table);
#  - a chroot whose debug link is an absolute symlink to a host file (followed on the host);
#  - a binary whose section headers are garbage (the kernel runs it; we must too).
# Every case runs with stackscope here and with its ASan+UBSan build in test_hostile_asan.sh;
# the agent (ASan build) watches all of them at once: no sanitizer report, no crash.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/hostile_cases.sh"
need_root

check_fixtures
setup_fixtures
cases "$SS" plain

# The agent (ASan build) while the hostile workloads run.
mkdir -p "$TMP/agent-out"
"$ASAN_SS" agent -F 99 --interval 2 --output-dir "$TMP/agent-out" 2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
# its first scan of every process takes a few seconds under ASan
for ((i = 0; i < 300; i++)); do
	grep -q "agent running" "$TMP/agent.err" && break
	sleep 0.1
done
sleep 0.5
"$FIX/wl_truncate" 1 "$TMP/agent-libcopy.so" truncate
"$TMP/fifo/wl_debugframe" 1 &
"$TMP/twins/wl_bad" 1.5 & sleep 0.3
"$TMP/twins/wl_good" 1
"$TMP/wl_shdrs" 1
chroot "$TMP/jail" /bin/wl_debugframe 1
wait %2 %3 2>/dev/null
sleep 2.5
kill -TERM $APID
for ((i = 0; i < 100; i++)); do kill -0 $APID 2>/dev/null || break; sleep 0.1; done
wait $APID
check_eq "agent (ASan) under the hostile workloads: exit status after SIGTERM" "$?" 0
check "agent (ASan): no sanitizer report" bash -c "! grep -Eq '$SAN_RE' '$TMP/agent.err'"
check "agent (ASan): warned about the library that shrank" \
	grep -q "agent-libcopy.so: the file shrank while being read" "$TMP/agent.err" ||
	tail -5 "$TMP/agent.err" | cut -c1-200 | sed 's/^/        /'
check_ge "agent (ASan): profiles written" "$(ls "$TMP/agent-out" | grep -c '\.pb\.gz$')" 2
grep -E "$SAN_RE" -A12 "$TMP/agent.err" | head -30 | sed 's/^/        /'

finish
