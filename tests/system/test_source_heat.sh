#!/bin/bash
# timeout: 300
# The web UI's source view (GET /api/source, src/serve/source_view.c and source_file.c): a
# function's source file with its lines' heat, read through the sampled process's root.
#  1. Python on the host (tests/data/py_chain.py, its hot loop on the line marked HOT),
#     recorded and imported into a store served by `stackscope serve`: c's file comes back
#     whole, the HOT line with the largest self share (>= 90 % of the process's samples),
#     its callers' lines with their total share; a file no frame names is refused (404).
#  2. Hostile paths, named by a Python process's own code objects (tests/data/py_source_heat.py:
#     compile() takes any file name): "..", /etc/shadow and a symlink to it, a /proc magic
#     link, /proc/self/environ, a FIFO, /dev/zero, a 10 GiB sparse file, a binary, a relative
#     name: each refused with its reason, no text, nothing of /etc/passwd or /etc/shadow.
#  3. The same Python in a container (scripts/in_container.sh, Debian bookworm's root) under
#     `agent --ui`: a file that exists only in the container's root is shown from it; a
#     symlink and paths that lead to a file of the host are not followed out; once the process
#     is gone, the answer says so (a container's files are not on the host's root).
source "$(dirname "$0")/lib.sh"
need_root

PY=/usr/bin/python3
if [[ ! -x $PY ]]; then
	skip_setup "Debian's python3 missing"
	finish
fi
DATA=$SS_ROOT/tests/data
J="$PY $SS_ROOT/tests/system/serve_json.py"

get()
{
	curl -s --noproxy '*' -m 20 -o "$TMP/out" -w '%{http_code}' "$BASE$1"
}

# --- 1. Python on the host -------------------------------------------------------------------
mkdir -p "$TMP/src"
cp "$DATA/py_chain.py" "$TMP/src/py_chain.py"
marks "$TMP/src/py_chain.py" L_HOT=HOT L_B=CALL_B L_A=CALL_A
mkfifo "$TMP/src/fifo.py"
truncate -s 10G "$TMP/src/sparse.py"
cp /bin/true "$TMP/src/binary.py"
ln -s /etc/shadow "$TMP/src/shadow_link.py"
HOSTILE=(h_dotdot=/../../../../etc/passwd h_shadow=/etc/shadow
	h_shadow_link="$TMP/src/shadow_link.py" h_magic=/proc/self/root/etc/passwd
	h_environ=/proc/self/environ h_fifo="$TMP/src/fifo.py" h_zero=/dev/zero
	h_sparse="$TMP/src/sparse.py" h_binary="$TMP/src/binary.py" h_relative=relative.py)
# (they outlive a slow start of record on a loaded box; killed after part 2)
spawn ppid "$PY" "$TMP/src/py_chain.py" 120
spawn hpid "$PY" "$DATA/py_source_heat.py" 120 "${HOSTILE[@]}"
sleep 0.5
record "$TMP/rec.err" -F 199 -d 3 -q -p "$ppid,$hpid" -o "$TMP/py.pb.gz"
check_eq "record the two Python processes" $? 0
"$SS" store import --store "$TMP/s.db" "$TMP/py.pb.gz" >/dev/null 2>&1
check_eq "import into a store" $? 0
"$SS" serve --listen 127.0.0.1:0 --store "$TMP/s.db" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SPID=$!
_bg_pids+=($SPID)
end=$((SECONDS + 10))
until grep -q '^stackscope serve: http' "$TMP/serve.out" 2>/dev/null || [[ $SECONDS -ge $end ]]; do
	sleep 0.1
done
BASE=$(sed -n 's|^stackscope serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve.out")
check "serve: listening (${BASE:-none})" test -n "$BASE" || finish

check_eq "source of c: 200" "$(get "/api/source?function=c")" 200
check_eq "  ... its file, from the living process's root" \
	"$($J "$TMP/out" "(j['file'], j['pid'], j['root'], j['reason'])")" \
	"('$TMP/src/py_chain.py', $ppid, 'process', None)"
check_eq "  ... the file's lines, all of them" \
	"$($J "$TMP/out" "j['lines'] == open('$TMP/src/py_chain.py').read().splitlines()")" 1
check_eq "  ... the line with the largest self share: HOT ($L_HOT)" \
	"$($J "$TMP/out" "max(j['heat'], key=lambda h: h[1])[0]")" "$L_HOT"
check_pct "  ... HOT's self share of the process's samples" \
	"$($J "$TMP/out" "[h[1] for h in j['heat'] if h[0] == $L_HOT][0]")" \
	"$($J "$TMP/out" "j['process_samples']")" 90
check_pct "  ... the CALL_A line's total share (a caller's line: no self)" \
	"$($J "$TMP/out" "[h[2] for h in j['heat'] if h[0] == $L_A and h[1] == 0][0]")" \
	"$($J "$TMP/out" "j['process_samples']")" 90
check_eq "source of a on the filter pid=$ppid: the same file" \
	"$(get "/api/source?function=a&pid=$ppid" >/dev/null; $J "$TMP/out" "j['file']")" "$TMP/src/py_chain.py"
check_eq "a file no frame of the function names (/etc/passwd): 404" \
	"$(get "/api/source?function=c&file=/etc/passwd")" 404
check "  ... never its content" bash -c "! grep -q 'root:' '$TMP/out'"
check_eq "a function not in the store: 404" "$(get "/api/source?function=nope")" 404
check_eq "no function: 400" "$(get "/api/source")" 400
check_eq "an unknown parameter: 400" "$(get "/api/source?function=c&path=/etc/passwd")" 400
check_eq "a native function without lines (_start): the reason" \
	"$(get "/api/source?function=_start" >/dev/null; $J "$TMP/out" "j['reason'].startswith('no line information')")" 1
check_eq "a cross-origin request: 403" \
	"$(curl -s --noproxy '*' -m 20 -o /dev/null -w '%{http_code}' -H 'Origin: http://evil.example' "$BASE/api/source?function=c")" 403

# --- 2. hostile paths ------------------------------------------------------------------------
# name|the start of the reason
while IFS='|' read -r fn want; do
	st=$(get "/api/source?function=$fn")
	got=$($J "$TMP/out" "(j.get('reason') or '') + ('' if j.get('lines') is None else ' [TEXT]')" 2>/dev/null)
	if [[ $st == 200 && $got == "$want"* ]] && ! grep -qE 'root:|PATH=|ELF' "$TMP/out"; then
		ok "hostile $fn: $got"
	else
		fail "hostile $fn: $st, '$got' (want '$want...')"
	fi
done <<'LIST'
h_dotdot|the path leads outside the process's root
h_shadow|the file is not readable by every user
h_shadow_link|the file is not readable by every user
h_magic|the path goes through a /proc magic link
h_environ|a kernel file
h_fifo|not a regular file
h_zero|not a regular file
h_sparse|the file is too big
h_binary|a binary file
h_relative|not an absolute path
LIST
check "serve still running" kill -0 "$SPID"
kill "$SPID" "$ppid" "$hpid" 2>/dev/null

# --- 3. a container under agent --ui ---------------------------------------------------------
ROOT=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/bookworm
if [[ ! -f $ROOT/.stackscope-root || ! -x $ROOT/usr/bin/python3.11 ]]; then
	skip_setup "no bookworm root with python3 (make runtime-matrix): no container checks"
	finish
fi
dir=$(mktemp -d "$ROOT/tmp/stackscope-systest-heat.XXXXXX")
chmod 755 "$dir"
wd=${dir#"$ROOT"}
cp "$DATA/py_source_heat.py" "$dir/"
# a file of the root only; a file of the host only (world-readable), and ways to it
printf 'import time\n\n\ndef h_inroot(end):\n    while time.monotonic() < end: pass  # HOT h_inroot\n' \
	>"$dir/inroot.py"
echo "HOST_ONLY_SECRET" >"$TMP/host_secret.py"
chmod 644 "$TMP/host_secret.py" "$dir/inroot.py"
ln -s "$TMP/host_secret.py" "$dir/abs_link.py"
ln -s "../../../../../../../..$TMP/host_secret.py" "$dir/rel_link.py"
id=$(printf 'stackscope-test-source-heat' | sha256sum | cut -c1-64)
"$SS" agent -F 99 --interval 0.5 --cache-dir "" --store "$TMP/g.db" --ui 127.0.0.1:0 \
	2>"$TMP/agent.err" &
APID=$!
_bg_pids+=($APID)
end=$((SECONDS + 30))
until grep -q 'web UI on' "$TMP/agent.err" 2>/dev/null || [[ $SECONDS -ge $end ]]; do sleep 0.2; done
BASE=http://127.0.0.1:$(sed -n 's/.*web UI on .* (port \([0-9]*\)).*/\1/p' "$TMP/agent.err")
end=$((SECONDS + 30)) # sampling: the first interval written
until [[ $(get /api/intervals) == 200 ]] && [[ $($J "$TMP/out" 'len(j["intervals"])') -ge 1 ]] ||
	[[ $SECONDS -ge $end ]]; do
	sleep 0.3
done
"$SS_ROOT/scripts/in_container.sh" "$ROOT" "$id" python3.11 "$wd/py_source_heat.py" 120 \
	h_inroot="$wd/inroot.py" h_abs_link="$wd/abs_link.py" h_rel_link="$wd/rel_link.py" \
	h_host_path="$TMP/host_secret.py" h_out="/../../..$TMP/host_secret.py" \
	>"$TMP/cont.out" 2>&1 & # (ended below: the process gone)
CPID=$!
_bg_pids+=($CPID)
st=0 n=0
end=$((SECONDS + 40))
while [[ $SECONDS -lt $end ]]; do
	st=$(get "/api/source?function=h_inroot")
	[[ $st == 200 ]] && n=$($J "$TMP/out" "j['process_samples']") && [[ $n -ge 30 ]] && break
	sleep 0.5
done
check_eq "agent --ui: source of h_inroot in the container: 200 ($n samples)" "$st" 200
check_eq "  ... read from the process's root, the root's own file" \
	"$($J "$TMP/out" "(j['file'], j['root'], j['reason'], j['lines'] == open('$dir/inroot.py').read().splitlines())")" \
	"('$wd/inroot.py', 'process', None, True)"
check_eq "  ... its hot line (5) the hottest" "$($J "$TMP/out" "max(j['heat'], key=lambda h: h[1])[0]")" 5
for fn in h_abs_link h_rel_link h_host_path; do
	get "/api/source?function=$fn" >/dev/null
	check_eq "container: $fn (a file of the host's) not followed out of the root" \
		"$($J "$TMP/out" "(j['reason'], j['lines'])")" "(\"no such file in the process's root\", None)"
	check "  ... never the host file's text" bash -c "! grep -q HOST_ONLY_SECRET '$TMP/out'"
done
get "/api/source?function=h_out" >/dev/null
check_eq "container: '..' past the root refused" "$($J "$TMP/out" "j['reason']")" \
	"the path leads outside the process's root"
# SIGKILL: the process is its PID namespace's init, which ignores any other signal sent from
# outside it for which it has no handler (pid_namespaces(7)); a SIGTERM waited out its 120 s
kill -KILL "$($J "$TMP/out" "j['pid']" 2>/dev/null || echo "$CPID")" 2>/dev/null
wait "$CPID"
sleep 1
check_eq "the process gone: still answered" "$(get "/api/source?function=h_inroot")" 200
check_eq "  ... saying why the text is not shown (it ran in a container)" \
	"$($J "$TMP/out" "(j['lines'], 'gone' in j['reason'] and 'container' in j['reason'], len(j['heat']) > 0)")" \
	"(None, True, True)"
kill -INT "$APID"
wait "$APID"
check_eq "agent: clean stop" $? 0
rm -rf "${dir:?}"
finish
