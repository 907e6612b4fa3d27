#!/bin/bash
# timeout: 600
# record --alloc beyond glibc's malloc: the allocator a process runs with is found by symbol
# (src/sampler/alloc_targets.c) and probed.
#   1. jemalloc and tcmalloc preloaded (`env LD_PRELOAD=...`, Debian's libjemalloc2 and
#      libtcmalloc-minimal4) under tests/data/wl_alloc.c's known workload: "malloc served by"
#      names the preloaded file; each chain's share of alloc_space within 5 % of the truth, the
#      leak's inuse_space within 10 %, nothing in use under the chains that free everything
#      (at --alloc-rate 65536: ~2700 samples in alloc_cold, the 5 % at 3 sigma; the default
#      rate's accuracy is test_alloc.sh's).
#   2. A static binary (wl_alloc linked -static): its own malloc, found in its symbols, the
#      same checks; stripped: a clear line, no samples, no crash.
#   3. pymalloc, tests/data/py_alloc_chain.py on the newest Python here, at the default rate:
#      alloc_hot and alloc_cold (4 MiB bytes objects: PyObject_Calloc, with calloc nested
#      inside, counted once) within 5 % of the truth, the 64 MiB leak (leak_big) within 10 %;
#      then small objects (pymalloc's pools, leak_small) at --alloc-rate 4096 on every CPython
#      3.6-3.13 of pyenv and Debian's python3 (static libpython), and with PYTHONMALLOC=malloc:
#      the leak within 10 %.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_alloc || finish

STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"
LIBDIR=/usr/lib/x86_64-linux-gnu
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
SS_TIMEOUT=240

truth()
{
	awk -v c="$2" '$1 == c { print $2 }' "$1"
}

# within NAME GOT WANT PCT: GOT within PCT % of WANT
within()
{
	if [[ $3 -gt 0 && $((($2 - $3) * 100)) -le $(($3 * $4)) &&
		$((($3 - $2) * 100)) -le $(($3 * $4)) ]]; then
		ok "$1 ($2 vs $3: within $4 %)"
	else
		fail "$1 ($2 vs $3: not within $4 %)"
	fi
}

# wl_chains LABEL PROFILE TRUTH ERR: tests/data/wl_alloc.c's chains and leak (ERR: record's summary)
wl_chains()
{
	local M=';main;' hot cold leak t_hot t_cold t_leak total t_total lost
	$STACKS --value=alloc_space "$2" | sed 's/^/wl_alloc;/' >"$TMP/space"
	$STACKS --value=inuse_space "$2" | sed 's/^/wl_alloc;/' >"$TMP/inuse"
	hot=$(samples "$TMP/space" wl_alloc "${M}alloc_hot;take_hot;\\[alloc: (malloc|posix_memalign)\\]$")
	cold=$(samples "$TMP/space" wl_alloc "${M}alloc_cold;take_cold;\\[alloc: (calloc|realloc)\\]$")
	leak=$(samples "$TMP/inuse" wl_alloc "${M}leak_blocks;\\[alloc: malloc\\]$")
	t_hot=$(truth "$3" hot) t_cold=$(truth "$3" cold) t_leak=$(truth "$3" leak)
	total=$((hot + cold)) t_total=$((t_hot + t_cold))
	within "$1: alloc_hot's share of alloc_space (per mille)" \
		$((hot * 1000 / (total + 1))) $((t_hot * 1000 / t_total)) 5 || show "$TMP/space" wl_alloc
	within "$1: alloc_cold's share of alloc_space (per mille)" \
		$((cold * 1000 / (total + 1))) $((t_cold * 1000 / t_total)) 5
	# samples lost to a full ring buffer (counted in record's summary, ERR) leave the shares
	# as they were but not the total: then only never more than asked
	lost=$(sed -n 's/^lost samples *[0-9]* (ring buffer full: \([0-9]*\).*/\1/p' "$4")
	if [[ ${lost:-0} -eq 0 ]]; then
		within "$1: alloc_space of the two chains vs the bytes asked" "$total" "$t_total" 5
	else
		check_le "$1: alloc_space of the two chains, never more than asked ($lost samples lost: ring buffer full)" \
			$((total * 100)) $((t_total * 105))
	fi
	within "$1: inuse_space of the leak" "$leak" "$t_leak" 10
	check_eq "$1: inuse_space under alloc_hot and alloc_cold (all freed)" \
		"$(samples "$TMP/inuse" wl_alloc "${M}alloc_(hot|cold);")" 0
}

# 1. Preloaded allocators.
for lib in "$LIBDIR/libjemalloc.so.2" "$LIBDIR/libtcmalloc_minimal.so.4"; do
	name=$(basename "$lib")
	if [[ ! -e $lib ]]; then
		skip_setup "$name missing"
		continue
	fi
	record "$TMP/p.err" --alloc --alloc-rate 65536 -o "$TMP/p.pb.gz" -- \
		env LD_PRELOAD="$lib" "$FIX/wl_alloc" 512 "$TMP/p.truth"
	check_eq "$name: stackscope exit status" $? 0
	check "$name: named as the allocator serving malloc" \
		grep -q "malloc served by $lib" "$TMP/p.err"
	wl_chains "$name" "$TMP/p.pb.gz" "$TMP/p.truth" "$TMP/p.err"
done

# 2. A static binary: its own malloc; stripped, a clear line.
if gcc -O1 -g -static -o "$TMP/wl_static" "$SS_ROOT/tests/data/wl_alloc.c" 2>"$TMP/gcc.err"; then
	record "$TMP/s.err" --alloc --alloc-rate 65536 -o "$TMP/s.pb.gz" -- "$TMP/wl_static" 512 \
		"$TMP/s.truth"
	check_eq "static: stackscope exit status" $? 0
	check "static: the executable serves malloc" grep -q "malloc served by $TMP/wl_static" \
		"$TMP/s.err"
	wl_chains "static" "$TMP/s.pb.gz" "$TMP/s.truth" "$TMP/s.err"
	strip -o "$TMP/wl_stripped" "$TMP/wl_static"
	record "$TMP/x.err" --alloc -o "$TMP/x.pb.gz" -- "$TMP/wl_stripped" 16 "$TMP/x.truth"
	check_eq "stripped static: stackscope exit status" $? 0
	check "stripped static: a clear line (no file defines malloc)" \
		grep -q "the command: no file defines malloc" "$TMP/x.err"
	check_eq "stripped static: no allocation of its own chains" \
		"$($STACKS --value=alloc_space "$TMP/x.pb.gz" | grep -c 'leak_blocks')" 0
else
	skip_setup "static glibc (libc6-dev's libc.a) missing: $(head -1 "$TMP/gcc.err")"
fi

# 3. pymalloc.
PY_CHAIN="$SS_ROOT/tests/data/py_alloc_chain.py"
pys=()
for v in 3.6 3.7 3.8 3.9 3.10 3.11 3.12 3.13; do
	for d in "$PYENV/$v".*; do
		[[ -x $d/bin/python$v ]] && pys+=("$d/bin/python$v")
	done
done
if [[ -x /usr/bin/python3 ]]; then
	pys+=(/usr/bin/python3)
else
	skip_setup "Debian's python3 missing"
fi
newest=${pys[-1]}
[[ ${#pys[@]} -gt 1 ]] && newest=${pys[-2]}

# py_chain PROFILE CHAIN FN: a chain's bytes through main -> CHAIN -> ... -> [alloc: FN] (the
# interpreter's own frames between main and CHAIN before 3.11)
py_chain()
{
	samples "$1" py "main@py_alloc_chain\\.py:[0-9]+;(.*;)?($2)@py_alloc_chain\\.py:[0-9]+;.*\\[alloc: ($3)\\]$"
}

# (-S: no site import, whose allocations each trap a probe too: 3 s of 17 on pyenv's 3.11)
record "$TMP/py.err" --alloc -o "$TMP/py.pb.gz" -- "$newest" -S "$PY_CHAIN" 25 0 "$TMP/py.truth"
check_eq "python ($newest): stackscope exit status" $? 0
$STACKS --value=alloc_space "$TMP/py.pb.gz" | sed 's/^/py;/' >"$TMP/py.space"
$STACKS --value=inuse_space "$TMP/py.pb.gz" | sed 's/^/py;/' >"$TMP/py.inuse"
within "python: alloc_hot's alloc_space (PyObject_Calloc, once) vs the bytes asked" \
	"$(py_chain "$TMP/py.space" alloc_hot 'PyObject_Calloc')" "$(truth "$TMP/py.truth" hot)" 5 ||
	show "$TMP/py.space" py
within "python: alloc_cold's alloc_space vs the bytes asked" \
	"$(py_chain "$TMP/py.space" alloc_cold 'PyObject_Calloc')" "$(truth "$TMP/py.truth" cold)" 5
within "python: inuse_space of leak_big" \
	"$(py_chain "$TMP/py.inuse" leak_big 'PyObject_Calloc')" "$(truth "$TMP/py.truth" leak_big)" 10
check_eq "python: inuse_space under alloc_hot and alloc_cold (all freed)" \
	"$(samples "$TMP/py.inuse" py ';alloc_(hot|cold)@')" 0

# small objects, pymalloc's pools: every version
for py in "${pys[@]}" "PYTHONMALLOC=malloc $newest"; do
	# shellcheck disable=SC2086 # "VAR=VALUE PYTHON" splits into env's arguments
	record "$TMP/ps.err" -q --alloc --alloc-rate 4096 -o "$TMP/ps.pb.gz" -- env $py -S \
		"$PY_CHAIN" 0 20000 "$TMP/ps.truth"
	check_eq "$py: stackscope exit status" $? 0
	$STACKS --value=inuse_space "$TMP/ps.pb.gz" | sed 's/^/py;/' >"$TMP/ps.inuse"
	within "$py: inuse_space of leak_small (400-byte bytes objects, --alloc-rate 4096)" \
		"$(py_chain "$TMP/ps.inuse" leak_small 'PyObject_(Malloc|Calloc)')" \
		"$(truth "$TMP/ps.truth" leak_small)" 10 || show "$TMP/ps.inuse" py
done

finish
