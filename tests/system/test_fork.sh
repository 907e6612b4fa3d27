#!/bin/bash
# Forked children that do not exec (pre-fork servers: PHP-FPM, gunicorn, PostgreSQL backends,
# multiprocessing): unwound from their first sample through their parent's mappings, before
# userspace has read theirs (bpf/sampler.bpf.c: "forked", mapping_owner()). Before, a 150 ms
# child had ~55% of its samples complete. Also: Python children get their Python frames, two
# generations deep works, and a child that execs is never resolved through its parent.
# And the other end of a process's life: a main thread that calls pthread_exit() while a
# worker runs on (wl_leader_exit) leaves the process its mappings (it took them: 97 % of the
# worker's samples were "[unwind: unmapped pc]"), and a scan after it reads them from a live
# thread (the leader's /proc/PID/maps is empty then: 3 runs of 8 had every sample unmapped).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
DATA=$SS_ROOT/tests/data
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"
CHAIN='main;spawn_workers;worker_main;chain_a;chain_b;chain_c;hot_leaf'

# prefork NAME ARGS...: 12 children (or grandchildren) of 150 ms each, every one complete
prefork()
{
	local name=$1 f=$TMP/$1.folded total full inherited
	shift
	have_fixture wl_prefork || return
	record "$TMP/$name.err" -F $HZ -o "$f" -- "$FIX/wl_prefork" 12 150 "$@"
	check_eq "$name: exit status" $? 0
	total=$(samples "$f" wl_prefork ';hot_leaf$')
	full=$(samples "$f" wl_prefork "^wl_prefork;${START_RE}$CHAIN\$")
	check_ge "$name: samples of the children in hot_leaf" "$total" 300
	check_pct "$name: of those, complete from _start through the chain" "$full" "$total" 95 ||
		show "$f" wl_prefork
	inherited=$(sed -n 's/.*forked children resolved through their parent \([0-9]\+\).*/\1/p' \
		"$TMP/$name.err")
	check_ge "$name: samples resolved through the parent (counted)" "${inherited:-0}" 100
}

prefork prefork
prefork prefork-nested nested

# Python children: their Python frames, read with the parent's interpreter state.
py_prefork()
{
	local name=$1 py=$2 f total chain
	local P=py_prefork\\.py N='[^;@]*;'
	record "$TMP/$name.err" -F $HZ -q -o "$TMP/$name.pb.gz" -- "$py" "$DATA/py_prefork.py" 8 150
	check_eq "$name: exit status" $? 0
	$STACKS "$TMP/$name.pb.gz" | sed 's/^/x;/' >"$TMP/$name.stacks"
	f=$TMP/$name.stacks
	total=$(samples "$f" "*" ";c@$P:")
	chain=$(samples "$f" "*" "_PyEval_EvalFrameDefault;($N)*<module>@$P:[0-9]+;($N)*serve@$P:[0-9]+;($N)*work@$P:[0-9]+;($N)*a@$P:[0-9]+;($N)*b@$P:[0-9]+;($N)*c@$P:[0-9]+(;[^;@]*)*\$")
	check_ge "$name: samples of the children in c" "$total" 200
	check_pct "$name: <module> -> serve -> work -> a -> b -> c in the children" "$chain" "$total" 90 ||
		sort -t' ' -k2 -rn "$f" | head -3 | cut -c1-500 | sed 's/^/        /'
}

if [[ -x /usr/bin/python3.11 ]]; then
	py_prefork debian3.11-prefork /usr/bin/python3.11
else
	fail "Debian python3.11 missing (apt-get install python3)"
fi
py312=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V | tail -1)
if [[ -n $py312 ]]; then
	py_prefork py3.12-prefork "$py312"
else
	skip "pyenv python 3.12 not installed"
fi

# A child that execs gets its own address space: nothing of the parent (bash) in its stacks.
if have_fixture wl_chain_nofp; then
	f=$TMP/exec.folded
	record "$TMP/exec.err" -F $HZ -o "$f" -- bash -c \
		"for i in 1 2 3 4 5 6; do '$FIX/wl_chain_nofp' 0.15; done"
	total=$(samples "$f" wl_chain_nofp)
	check_ge "fork+exec: samples of the exec'd children" "$total" 100
	check_eq "fork+exec: exec'd children's frames resolved through bash" \
		"$(samples "$f" wl_chain_nofp '(bash|libtinfo)')" 0
fi

if have_fixture wl_leader_exit; then
	f=$TMP/leader.folded
	record "$TMP/leader.err" -F $HZ -o "$f" -- "$FIX/wl_leader_exit" 1.5
	check_eq "leader exits first: exit status" $? 0
	total=$(samples "$f" wl_leader_exit ';leader_gone_leaf$')
	full=$(samples "$f" wl_leader_exit \
		"^wl_leader_exit;(__clone3;|clone;|clone3;)start_thread;worker_main;leader_gone_a;leader_gone_leaf\$")
	check_ge "leader exits first: the worker's samples in leader_gone_leaf" "$total" 300
	check_pct "leader exits first: of those, complete from clone through the chain" "$full" \
		"$total" 95 || show "$f" wl_leader_exit
	# the same process found after its leader's exit (-p): its leader's maps, map_files and
	# root are gone then, a live thread's are read (every sample was "unmapped pc")
	spawn LPID "$FIX/wl_leader_exit" 3
	for i in $(seq 50); do
		[[ $(awk '/^State:/ { print $2 }' /proc/$LPID/status 2>/dev/null) == Z ]] && break
		sleep 0.02
	done
	f=$TMP/leader_p.folded
	record "$TMP/leader_p.err" -F $HZ -d 1.5 -p "$LPID" -o "$f"
	check_eq "leader gone before -p: exit status" $? 0
	total=$(samples "$f" wl_leader_exit ';leader_gone_leaf$')
	full=$(samples "$f" wl_leader_exit \
		"^wl_leader_exit;(__clone3;|clone;|clone3;)start_thread;worker_main;leader_gone_a;leader_gone_leaf\$")
	check_ge "leader gone before -p: samples in leader_gone_leaf" "$total" 200
	check_pct "leader gone before -p: of those, complete from clone through the chain" \
		"$full" "$total" 95 || show "$f" wl_leader_exit
fi

finish
