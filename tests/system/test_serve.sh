#!/bin/bash
# `stackscope serve` and `agent --ui` (src/serve/, src/base/http_server.c): the web UI's JSON
# API over a store holding two recorded intervals, A: wl_chain_nofp alone
# (main -> chain_a -> chain_b -> chain_c -> hot_leaf), then B: wl_chain_nofp and wl_kernel
# (main -> syscall_loop -> kernel), the "regression" between them:
#  1. intervals, the flamegraph (the known chain), ranges, filters (pid, comm, frame type),
#     top functions, the diff of A and B, the same diff of the two pprof files uploaded, and
#     the pprof download (the same stacks as `stackscope store query`, the peer);
#  2. hostile requests (unknown parameters, path traversal, oversized line, headers and body,
#     garbage, more connections than slots, a client that sends nothing) get errors and the
#     server keeps answering; and issue 39's (serve_hostile.py): a gzip bomb and a file of one
#     200,000-frame sample refused at once, other requests answered during a heavy upload, a
#     Host that is not ours (DNS rebinding) and a foreign Origin refused (--allow-host admits
#     a name), 16 slow clients that do not keep 30 requests from being served (spare slots
#     with a 1 s request timeout), a time past
#     int64, `Content-Length: 3 x` and a NUL in a header refused; the fuzz target of the
#     request parser and the API (tests/fuzz/run_fuzz_http.sh) for a bounded run;
#  3. the page in a real headless browser (serve_browser.py): a range dragged on the
#     timeline, a search, a click that zooms, a function's sandwich, its source with heat
#     (hot_leaf's DWARF lines: the hot loop marked), the runtime fold toggle, the diff view;
#     screenshots kept in
#     $BUILD/artefacts/test_serve/;
#  4. `agent --ui` serves the store it writes while it profiles, a silent client held open
#     meanwhile (sampling and writing go on).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish
have_fixture wl_kernel || finish

# Debian's python3 (setup.sh installs it): a pyenv shim first in PATH costs 0.3 s a call
PY=python3
[[ -x /usr/bin/python3 ]] && PY=/usr/bin/python3
J="$PY $SS_ROOT/tests/system/serve_json.py"
H="$PY $SS_ROOT/tests/system/serve_hostile.py"
ART=$BUILD/artefacts/test_serve
mkdir -p "$ART"
CHAIN='main;chain_a;chain_b;chain_c;hot_leaf$'

# get PATH [CURL ARGS...]: the body into $TMP/out, the status code printed
get()
{
	local path=$1
	shift
	curl -s --noproxy '*' -m 20 -o "$TMP/out" -w '%{http_code}' "$@" "$BASE$path"
}

# serve_start STORE: starts serve on a free port, sets BASE
serve_start()
{
	"$SS" serve --listen 127.0.0.1:0 --store "$1" >"$TMP/serve.out" 2>"$TMP/serve.err" &
	SPID=$!
	_bg_pids+=($SPID)
	local end=$((SECONDS + 10))
	until grep -q '^stackscope serve: http' "$TMP/serve.out" 2>/dev/null; do
		[[ $SECONDS -ge $end ]] && break
		sleep 0.1
	done
	BASE=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve.out")
}

spawn cpid "$FIX/wl_chain_nofp" 60
spawn kpid "$FIX/wl_kernel" 60
sleep 0.3

# --- the store: A, then B --------------------------------------------------------------------
record "$TMP/a.err" -F 199 -d 1.5 -q -p "$cpid" -o "$TMP/a.pb.gz"
check_eq "record A: exit status" $? 0
record "$TMP/b.err" -F 199 -d 1.5 -q -p "$cpid,$kpid" -o "$TMP/b.pb.gz"
check_eq "record B: exit status" $? 0
"$SS" store import --store "$TMP/s.db" "$TMP/a.pb.gz" "$TMP/b.pb.gz" >/dev/null 2>&1
check_eq "import A and B" $? 0
read -r _ A_START A_END A_N < <("$SS" store intervals --store "$TMP/s.db" | sed -n 1p)
read -r _ B_START B_END B_N < <("$SS" store intervals --store "$TMP/s.db" | sed -n 2p)

serve_start "$TMP/s.db"
check "serve: listening (${BASE:-none})" test -n "$BASE" || { cat "$TMP/serve.err"; finish; }

# --- 1. the API ------------------------------------------------------------------------------
echo "  (setup done at ${SECONDS} s)"
check_eq "GET /: the page" "$(get /)" 200
check "the page is ours, with its script" grep -q 'src="app.js"' "$TMP/out"
check_eq "GET /app.js" "$(get /app.js)" 200

check_eq "intervals: status" "$(get /api/intervals)" 200
check_eq "intervals: A and B with their samples" \
	"$($J "$TMP/out" '[(i["start"], i["samples"]) for i in j["intervals"]] == [('"$A_START, $A_N), ($B_START, $B_N"')]')" 1

check_eq "flamegraph: status" "$(get /api/flamegraph)" 200
check_eq "flamegraph: total = A + B" "$($J "$TMP/out" 'j["total"]')" $((A_N + B_N))
check_eq "flamegraph --pid chain: status" "$(get "/api/flamegraph?pid=$cpid")" 200
check_pct "flamegraph --pid chain: the known chain" "$($J "$TMP/out" "chain('$CHAIN')")" \
	"$($J "$TMP/out" 'j["total"]')" 80
check_eq "flamegraph --comm wl_chain_nofp: the same total" \
	"$(get "/api/flamegraph?comm=wl_chain_nofp" >/dev/null; $J "$TMP/out" 'j["total"]')" \
	"$(get "/api/flamegraph?pid=$cpid" >/dev/null; $J "$TMP/out" 'j["total"]')"

get "/api/flamegraph?from=$A_START&to=$((A_END - 1))" >/dev/null
check_eq "range A: its samples only" "$($J "$TMP/out" 'j["total"]')" "$A_N"
check_eq "range A: no syscall_loop" "$($J "$TMP/out" 'len(nodes("syscall_loop"))')" 0
get "/api/flamegraph?from=$B_START" >/dev/null
check_eq "range B: its samples only" "$($J "$TMP/out" 'j["total"]')" "$B_N"
check_pct "range B --pid wl_kernel: main;syscall_loop" \
	"$(get "/api/flamegraph?from=$B_START&pid=$kpid" >/dev/null; $J "$TMP/out" "chain('main;syscall_loop$')")" \
	"$($J "$TMP/out" 'j["total"]')" 80

check_eq "filters: status" "$(get /api/filters)" 200
check_eq "filters: both processes, named" \
	"$($J "$TMP/out" "sorted((p['pid'], p['comm']) for p in j['processes']) == sorted([($cpid, 'wl_chain_nofp'), ($kpid, 'wl_kernel')])")" 1
check_eq "filters: frame types kernel and native" \
	"$($J "$TMP/out" "sorted(t['type'] for t in j['types'])")" "['kernel', 'native']"
KSAMPLES=$($J "$TMP/out" "[t['samples'] for t in j['types'] if t['type'] == 'kernel'][0]")
get "/api/flamegraph?type=kernel" >/dev/null
check_eq "type=kernel: the samples with kernel frames" "$($J "$TMP/out" 'j["total"]')" "$KSAMPLES"
check_eq "type=kernel: no sample of the chain's leaf alone" \
	"$($J "$TMP/out" "chain('$CHAIN') < j['total']")" 1

check_eq "top: status" "$(get "/api/top?pid=$cpid&limit=3")" 200
check_eq "top: hot_leaf first, native" \
	"$($J "$TMP/out" "(j['functions'][0]['name'], j['functions'][0]['type'])")" "('hot_leaf', 'native')"
check_pct "top: hot_leaf's self share" "$($J "$TMP/out" "j['functions'][0]['self']")" \
	"$($J "$TMP/out" 'j["total"]')" 80
check_eq "top: limit 3" "$($J "$TMP/out" "len(j['functions'])")" 3

DIFFQ="a_from=$A_START&a_to=$((A_END - 1))&b_from=$B_START"
check_eq "diff A/B: status" "$(get "/api/diff?$DIFFQ")" 200
check_eq "diff A/B: the totals" "$($J "$TMP/out" "(j['total'], j['total2'])")" "($A_N, $B_N)"
check_eq "diff A/B: syscall_loop absent from A, there in B" \
	"$($J "$TMP/out" "sum(n['v'] for n in nodes('syscall_loop')) == 0 and sum(n['v2'] for n in nodes('syscall_loop')) > 0")" 1
cp "$TMP/out" "$TMP/diff_ranges.json"
check_eq "diff of the uploaded files: status" \
	"$(cat "$TMP/a.pb.gz" "$TMP/b.pb.gz" >"$TMP/ab.bin"
	   get "/api/diff?a_len=$(stat -c %s "$TMP/a.pb.gz")" -X POST --data-binary @"$TMP/ab.bin")" 200
check_eq "diff of the uploaded files: the same totals as the ranges" \
	"$($J "$TMP/out" "(j['total'], j['total2'])")" "($A_N, $B_N)"
check_eq "diff of the uploaded files: syscall_loop as in the ranges' diff" \
	"$($J "$TMP/out" "sum(n['v2'] for n in nodes('syscall_loop'))")" \
	"$($J "$TMP/diff_ranges.json" "sum(n['v2'] for n in nodes('syscall_loop'))")"

check_eq "pprof download of B: status" "$(get "/api/pprof?from=$B_START&pid=$kpid")" 200
cp "$TMP/out" "$TMP/dl.pb.gz"
"$SS" store query --store "$TMP/s.db" --from "$B_START" --pid "$kpid" -o "$TMP/peer.pb.gz" 2>/dev/null
"$PY" "$SS_ROOT/tests/system/pprof_stacks.py" --comm --thread "$TMP/dl.pb.gz" | sort >"$TMP/dl.txt"
"$PY" "$SS_ROOT/tests/system/pprof_stacks.py" --comm --thread "$TMP/peer.pb.gz" | sort >"$TMP/peer.txt"
check_ge "pprof download: stacks" "$(wc -l <"$TMP/dl.txt")" 1
check "pprof download: the same stacks as 'store query'" cmp -s "$TMP/dl.txt" "$TMP/peer.txt"
check_eq "pprof download: wl_kernel only" "$(cut -d';' -f1 "$TMP/dl.txt" | sort -u)" wl_kernel

# --- 2. hostile and bad requests -------------------------------------------------------------
check_eq "unknown parameter: 400" "$(get "/api/flamegraph?bogus=1")" 400
check "  ... with a JSON error" grep -q '"error":"bad parameter: bogus"' "$TMP/out"
check_eq "bad pid: 400" "$(get "/api/flamegraph?pid=12x")" 400
check_eq "repeated parameter: 400" "$(get "/api/top?pid=1&pid=2")" 400
check_eq "broken percent escape: 400" "$(get "/api/top?comm=%zz")" 400
check_eq "path traversal: 404" "$(get /../../../etc/passwd --path-as-is)" 404
check_eq "path traversal under /api: 404" "$(get /api/../../etc/passwd --path-as-is)" 404
check_eq "encoded traversal: 404" "$(get /%2e%2e/%2e%2e/etc/passwd --path-as-is)" 404
check "  ... never a file's content" bash -c "! grep -q root: '$TMP/out'"
check_eq "POST to a GET route: 405" "$(get /api/top -X POST -d x)" 405
check_eq "DELETE: 405" "$(get / -X DELETE)" 405
check_eq "a 20 kB URL: 414" "$(get "/api/top?comm=$(head -c 20000 /dev/zero | tr '\0' a)")" 414
check_eq "20 kB of headers: 431" "$(get / -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)")" 431
head -c $((40 << 20)) /dev/zero >"$TMP/big.bin"
check_eq "a 40 MiB upload: 413" "$(get "/api/diff?a_len=1" -X POST --data-binary @"$TMP/big.bin")" 413
check_eq "an upload that is no pprof: 422" \
	"$(get "/api/diff?a_len=10" -X POST --data-binary @"$TMP/serve.out")" 422
HOSTILE=$("$PY" - "$BASE" <<'PY'
import socket, sys, time
host, port = sys.argv[1].split("//")[1].split(":")
port = int(port)
def ask(raw):
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(raw)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except socket.timeout:
        data += b"<timeout>"
    except ConnectionResetError:
        data += b"<reset>"
    s.close()
    return data.split(b"\r\n")[0].decode(errors="replace")
out = [ask(b"GARBAGE\r\n\r\n"), ask(b"GET /api/top HTTP/9.9\r\n\r\n"),
       ask(b"GET / HTTP/1.1\r\nno colon here\r\n\r\n"),
       ask(b"POST /api/diff HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
       ask(b"POST /api/diff HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
       ask(b"GET /\x01 HTTP/1.1\r\n\r\n")]
out += [ask(b"POST /api/diff?a_len=1 HTTP/1.1\r\nContent-Length: 3 x\r\n\r\nabc"),
        ask(b"GET /api/intervals HTTP/1.1\r\nX-A: a\x00b\r\n\r\n")]
# 16 silent connections hold every slot: a request takes a spare slot and is answered, the
# silent ones stay (their 10 s are not over)
idle = [socket.create_connection((host, port)) for _ in range(16)]
time.sleep(0.3)
out.append(ask(b"GET /api/intervals HTTP/1.1\r\n\r\n"))
idle[0].settimeout(0.3)
try:
    out.append("closed" if not idle[0].recv(100) else "answered")
except socket.timeout:
    out.append("open")
# and 8 silent ones more hold the spare slots (for their 1 s): one more is refused with 503
# (the refused one asks nothing: the 503 is sent at once, before any request is read)
idle += [socket.create_connection((host, port)) for _ in range(8)]
time.sleep(0.2)
out.append(ask(b""))
for s in idle:
    s.close()
time.sleep(0.3)
out.append(ask(b"GET /api/intervals HTTP/1.1\r\n\r\n"))
print("|".join(out))
PY
)
check_eq "garbage, bad version, bad header, chunked, two lengths, control byte, length '3 x', NUL; 16 idle: served in a spare slot; spare slots idle too: 503; free again" \
	"$HOSTILE" "HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 501 Not Implemented|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 400 Bad Request|HTTP/1.1 200 OK|open|HTTP/1.1 503 Service Unavailable|HTTP/1.1 200 OK"

# --- issue 39 ---
check_eq "from past int64: 400, not an unfiltered answer" \
	"$(get "/api/flamegraph?from=9223372036854775808")" 400
check_eq "to past int64: 400" "$(get "/api/intervals?to=18446744073709551615")" 400
$H pprof tiny "$TMP/tiny.pb.gz"
for kind in bomb slow heavy; do
	$H pprof $kind "$TMP/$kind.pb.gz"
	cat "$TMP/tiny.pb.gz" "$TMP/$kind.pb.gz" >"$TMP/diff_$kind.bin"
done
read -r st post_ms get_ms < <($H busy "$BASE" "$TMP/diff_bomb.bin" "$(stat -c %s "$TMP/tiny.pb.gz")")
check_eq "gzip bomb ($(stat -c %s "$TMP/bomb.pb.gz") bytes, 64 MiB inflated): 413 in ${post_ms} ms, GETs meanwhile within ${get_ms} ms" "$st" 413
check "  ... the server's peak RSS under 64 MiB ($(grep VmHWM /proc/$SPID/status | tr -s ' \t' ' '))" \
	test "$(awk '/VmHWM/ { print $2 }' /proc/$SPID/status)" -lt 65536
read -r st post_ms get_ms < <($H busy "$BASE" "$TMP/diff_slow.bin" "$(stat -c %s "$TMP/tiny.pb.gz")")
check_eq "one sample of 200,000 frames of a 100 KB name ($(stat -c %s "$TMP/slow.pb.gz") bytes): 413 in ${post_ms} ms" "$st" 413
check "  ... in under 5 s (17.6 s of the server's thread before)" test "$post_ms" -lt 5000
read -r st post_ms get_ms < <($H busy "$BASE" "$TMP/diff_heavy.bin" "$(stat -c %s "$TMP/tiny.pb.gz")")
check_eq "a heavy upload (512,000 frames): answered (${post_ms} ms)" "$st" 200
check "  ... other requests answered meanwhile, the slowest in ${get_ms} ms (< 5 s)" \
	test "$get_ms" -lt 5000
check_eq "Host of another name (DNS rebinding): 403" "$(get / -H 'Host: rebind.example:7434')" 403
check "  ... saying why" grep -q 'Host not allowed' "$TMP/out"
check_eq "Host localhost: 200" "$(get /api/intervals -H "Host: localhost:${BASE##*:}")" 200
check_eq "a cross-origin POST: 403" \
	"$(get "/api/diff?a_len=1" -X POST -H 'Origin: http://evil.example' --data-binary @"$TMP/tiny.pb.gz")" 403
check_eq "a cross-origin GET: 403" "$(get /api/intervals -H 'Origin: http://evil.example')" 403
cat "$TMP/tiny.pb.gz" "$TMP/tiny.pb.gz" >"$TMP/diff_tiny.bin"
TINY=$(stat -c %s "$TMP/tiny.pb.gz")
check_eq "a same-origin POST: answered" \
	"$(get "/api/diff?a_len=$TINY" -X POST -H "Origin: $BASE" --data-binary @"$TMP/diff_tiny.bin")" 200
read -r served others < <($H loris "$BASE")
check_eq "16 slow clients: of 30 requests meanwhile, served (others: $others)" "$served" 30
check "serve still running" kill -0 "$SPID"
if command -v clang >/dev/null &&
	[[ -e /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a ]]; then
	(cd "$SS_ROOT" && timeout -k 5 240 env BUILD="$BUILD" tests/fuzz/run_fuzz_http.sh 3000) \
		>"$TMP/fuzz_http.log" 2>&1
	rc=$?
	check_eq "fuzz http: regressions and 3000 inputs without a crash or sanitizer report" "$rc" 0
	((rc == 0)) || grep -v '^#' "$TMP/fuzz_http.log" | tail -20 | sed 's/^/        /'
else
	skip_setup "fuzz http: clang's libFuzzer runtime (libclang-rt-14-dev) is not installed"
fi
check "serve still running" kill -0 "$SPID"
check_eq "serve still answers" "$(get /api/intervals)" 200
check_eq "  ... and counts nothing wrong in the store" "$($J "$TMP/out" 'len(j["intervals"])')" 2

# --- 3. the page in a headless browser -------------------------------------------------------
echo "  (API and hostile requests done at ${SECONDS} s)"
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] &&
	/usr/bin/python3 -c 'import selenium' 2>/dev/null; then
	t0=$(date +%s%N)
	/usr/bin/python3 "$SS_ROOT/tests/system/serve_browser.py" "$BASE/" "$ART" \
		"$A_START" "$A_END" "$B_START" "$B_END" "$A_N" "$B_N" >"$TMP/browser.out" 2>&1
	rc=$?
	sed 's/^/        /' "$TMP/browser.out"
	check_eq "browser: every check passed ($(grep -c '^ok' "$TMP/browser.out") of them, $((($(date +%s%N) - t0) / 1000000)) ms)" "$rc" 0
	check "browser: screenshots kept" test -s "$ART/range_zoom.png" -a -s "$ART/diff.png" \
		-a -s "$ART/sandwich.png" -a -s "$ART/source.png"
else
	skip_setup "chromium, chromium-driver or python3-selenium missing: no browser test"
fi
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
# (another file: the old one's line must not be read before the new server truncates it)
"$SS" serve --listen 127.0.0.1:0 --store "$TMP/s.db" --allow-host profiler.example,other.example \
	>"$TMP/serve_hosts.out" 2>"$TMP/serve_hosts.err" &
SPID=$!
_bg_pids+=($SPID)
end=$((SECONDS + 10))
until grep -q '^stackscope serve: http' "$TMP/serve_hosts.out" 2>/dev/null ||
	[[ $SECONDS -ge $end ]]; do
	sleep 0.1
done
BASE=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve_hosts.out")
check_eq "--allow-host profiler.example: that Host answered" \
	"$(get /api/intervals -H 'Host: profiler.example:8080')" 200
check_eq "  ... and a same-origin POST from it" \
	"$(get "/api/diff?a_len=$TINY" -X POST -H 'Host: profiler.example:8080' \
		-H 'Origin: http://profiler.example:8080' --data-binary @"$TMP/diff_tiny.bin")" 200
check_eq "  ... another name still refused" "$(get / -H 'Host: rebind.example')" 403
kill "$SPID" 2>/dev/null

# --- 4. agent --ui ---------------------------------------------------------------------------
echo "  (browser done at ${SECONDS} s)"
spawn cpid "$FIX/wl_chain_nofp" 60 # a fresh one: the first may have run its 60 s
"$SS" agent -F 99 --interval 0.5 --cache-dir "" --store "$TMP/g.db" --ui 127.0.0.1:0 \
	2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
end=$((SECONDS + 30))
until grep -q 'web UI on' "$TMP/agent.err" 2>/dev/null || [[ $SECONDS -ge $end ]]; do sleep 0.2; done
BASE=http://127.0.0.1:$(sed -n 's/.*web UI on .* (port \([0-9]*\)).*/\1/p' "$TMP/agent.err")
# a client that connects and says nothing, held open while the agent works
exec 7<>/dev/tcp/127.0.0.1/"${BASE##*:}"
n=0 c=0
end=$((SECONDS + 30))
while [[ $SECONDS -lt $end ]]; do
	n=$(get /api/intervals >/dev/null; $J "$TMP/out" 'len(j["intervals"])' 2>/dev/null || echo 0)
	c=$(get "/api/flamegraph?pid=$cpid" >/dev/null; $J "$TMP/out" 'j["total"]' 2>/dev/null || echo 0)
	[[ $n -ge 3 && $c -ge 50 ]] && break
	sleep 0.3
done
check_ge "agent --ui: intervals served while it writes (silent client held open)" "$n" 3
check_ge "agent --ui: the chain's samples" "$c" 50
check_pct "agent --ui: the known chain" "$($J "$TMP/out" "chain('$CHAIN')")" \
	"$($J "$TMP/out" 'j["total"]')" 80
sleep 1.2
m=$(get /api/intervals >/dev/null; $J "$TMP/out" 'len(j["intervals"])')
check_ge "agent --ui: still writing intervals after the queries" "$m" $((n + 1))
# the gzip bomb against the agent's UI (issue 39: OOM-killed in 1.1 s in its 512 MiB unit)
hwm0=$(awk '/VmHWM/ { print $2 }' /proc/$APID/status)
check_eq "agent --ui: the gzip bomb refused" \
	"$(get "/api/diff?a_len=$(stat -c %s "$TMP/tiny.pb.gz")" -X POST --data-binary @"$TMP/diff_bomb.bin")" 413
hwm1=$(awk '/VmHWM/ { print $2 }' /proc/$APID/status)
echo "  (agent peak RSS: $hwm0 kB before the bomb, $hwm1 kB after)"
n=$(get /api/intervals >/dev/null; $J "$TMP/out" 'len(j["intervals"])')
sleep 1.2
m=$(get /api/intervals >/dev/null; $J "$TMP/out" 'len(j["intervals"])')
check_ge "agent --ui: still writing intervals after the bomb" "$m" $((n + 1))
exec 7>&-
kill -INT "$APID"
wait "$APID"
check_eq "agent --ui: clean stop" $? 0
finish
