#!/bin/bash
# CPython frames interleaved with native frames (bpf/python_unwind.h, src/interp/python.c),
# for every interpreter installed here: pyenv 3.8-3.13 (shared libpython) and Debian's
# python3.11 (static, non-PIE, .dynsym only). The workloads are tests/data/py_*.py; their
# lines are marked (# HOT, # CALL_A...) and looked up here, so the checks name exact lines.
#
# pprof output is turned into "func@file:line;..." stacks by pprof_stacks.py: Python frames
# are the names with an "@", native ones have none. Checks:
#  - chain: <module> -> a -> b -> c, each at its call line and c at the hot line, with the
#    native _PyEval_EvalFrameDefault frame that runs them right below (root side);
#  - mixed: Python -> C (sorted / re.sub) -> Python callback, in that order;
#  - threads: a thread in zlib with the GIL released keeps its Python frames;
#  - a Python started after the recording began; an unsupported version gets a marker;
#  - recursion 600 deep: complete or ending in the explicit truncation marker.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
STACKS="/usr/bin/python3 $SS_ROOT/tests/system/pprof_stacks.py"

# line FILE MARK: the line number of the line of FILE that ends in "# MARK"
line()
{
	grep -n "# $2\$" "$1" | cut -d: -f1
}

# py_record NAME PYTHON SCRIPT ARGS...: records PYTHON SCRIPT ARGS into $TMP/NAME.stacks
py_record()
{
	local name=$1 py=$2
	shift 2
	record "$TMP/$name.err" -F $HZ -q -o "$TMP/$name.pb.gz" -- "$py" "$@"
	check_eq "$name: exit status" $? 0
	$STACKS "$TMP/$name.pb.gz" | sed 's/^/x;/' >"$TMP/$name.stacks"
}

# show_py FILE: the top stacks of a stacks file, for the log of a failing test
show_py()
{
	sort -t' ' -k2 -rn "$1" | head -4 | cut -c1-600 | sed 's/^/        /'
}

L_HOT=$(line "$DATA/py_chain.py" HOT)
L_B=$(line "$DATA/py_chain.py" CALL_B)
L_A=$(line "$DATA/py_chain.py" CALL_A)
L_MOD=$(line "$DATA/py_chain.py" CALL_MODULE)
L_KEY=$(line "$DATA/py_mixed.py" KEY)
L_REPL=$(line "$DATA/py_mixed.py" REPL)
L_SORTED=$(line "$DATA/py_mixed.py" SORTED)
L_SUB=$(line "$DATA/py_mixed.py" SUB)
L_ZLIB=$(line "$DATA/py_threads.py" ZLIB)
L_SPIN=$(line "$DATA/py_threads.py" SPIN)
L_DEEP=$(line "$DATA/py_recurse.py" DEEP)

N='[^;@]*;' # one native frame
C=py_chain\\.py

# test_version NAME PYTHON MINOR
test_version()
{
	local name=$1 py=$2 minor=$3 f total chain inter hot inc mixed
	local between=""

	py_record "$name-chain" "$py" "$DATA/py_chain.py" $SECS
	f=$TMP/$name-chain.stacks
	total=$(samples "$f" "*")
	check_ge "$name chain: samples" "$total" 300
	# <= 3.10 run one Python frame per eval activation: native frames between them
	[[ $minor -le 10 ]] && between="($N)+"
	chain=$(samples "$f" "*" \
		"_PyEval_EvalFrameDefault;($N)*<module>@$C:$L_MOD;${between}a@$C:$L_A;${between}b@$C:$L_B;${between}c@$C:$L_HOT(;[^;@]*)*\$")
	check_pct "$name chain: <module>:$L_MOD;a:$L_A;b:$L_B;c:$L_HOT (exact lines, interleaved)" \
		"$chain" "$total" 85 || show_py "$f"
	inc=$(samples "$f" "*" ";c@$C:")
	hot=$(samples "$f" "*" ";c@$C:$L_HOT(;|\$)")
	check_pct "$name chain: c at the hot line $L_HOT" "$hot" "$inc" 99
	inter=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*_PyEval_EvalFrameDefault;($N)*<module>@$C:")
	check_pct "$name chain: complete from _start" "$inter" "$total" 85

	py_record "$name-mixed" "$py" "$DATA/py_mixed.py" $SECS
	f=$TMP/$name-mixed.stacks
	# the callbacks also spend time on their other lines (entry, return): the structure is
	# checked at any line of theirs, and the loop line must dominate
	inc=$(samples "$f" "*" ";sort_key@py_mixed\\.py:")
	mixed=$(samples "$f" "*" \
		";sort_loop@py_mixed\\.py:$L_SORTED;($N)+_PyEval_EvalFrameDefault;($N)*sort_key@py_mixed\\.py:[0-9]+(;[^;@]*)*\$")
	hot=$(samples "$f" "*" ";sort_key@py_mixed\\.py:$L_KEY(;|\$)")
	check_ge "$name mixed: samples in sort_key" "$inc" 50
	check_pct "$name mixed: sort_loop:$L_SORTED -> C (sorted) -> eval -> sort_key" \
		"$mixed" "$inc" 85 || show_py "$f"
	check_pct "$name mixed: sort_key at its loop line $L_KEY" "$hot" "$inc" 60
	inc=$(samples "$f" "*" ";replace@py_mixed\\.py:")
	mixed=$(samples "$f" "*" \
		";sort_loop@py_mixed\\.py:$L_SUB;($N)+_PyEval_EvalFrameDefault;($N)*replace@py_mixed\\.py:[0-9]+(;[^;@]*)*\$")
	hot=$(samples "$f" "*" ";replace@py_mixed\\.py:$L_REPL(;|\$)")
	check_ge "$name mixed: samples in replace" "$inc" 30
	check_pct "$name mixed: sort_loop:$L_SUB -> C (re.sub) -> eval -> replace" \
		"$mixed" "$inc" 85 || show_py "$f"
	check_pct "$name mixed: replace at its loop line $L_REPL" "$hot" "$inc" 50
}

# threads NAME PYTHON: zlib with the GIL released in one thread, Python in the main thread
test_threads()
{
	local name=$1 py=$2 f inz withpy spin

	py_record "$name-threads" "$py" "$DATA/py_threads.py" $SECS
	f=$TMP/$name-threads.stacks
	inz=$(samples "$f" "*" "(deflate|libz\\.so)")
	withpy=$(samples "$f" "*" \
		"Thread\\.run@threading\\.py:[0-9]+;($N)*compressor@py_threads\\.py:$L_ZLIB;($N)*[^;@]*(deflate|libz\\.so)")
	check_ge "$name threads: samples in zlib" "$inz" 50
	check_pct "$name threads: zlib (GIL released) under compressor:$L_ZLIB" "$withpy" "$inz" 85 ||
		show_py "$f"
	spin=$(samples "$f" "*" "<module>@py_threads\\.py:[0-9]+;spinner@py_threads\\.py:$L_SPIN(;[^;@]*)*\$")
	check_ge "$name threads: main thread in spinner:$L_SPIN" "$spin" 100
}

found=0
for v in 3.8 3.9 3.10 3.11 3.12 3.13; do
	dir=$(ls -d "$PYENV/$v".* 2>/dev/null | sort -V | tail -1)
	if [[ -z $dir || ! -x $dir/bin/python$v ]]; then
		skip "pyenv python $v not installed"
		continue
	fi
	found=$((found + 1))
	test_version "py$v" "$dir/bin/python$v" "${v#3.}"
done
check_ge "pyenv versions tested" "$found" 1

if [[ -x /usr/bin/python3.11 ]]; then
	test_version "debian3.11" /usr/bin/python3.11 11
	test_threads "debian3.11" /usr/bin/python3.11
else
	skip "Debian /usr/bin/python3.11 not installed"
fi

for v in 3.11 3.13; do
	dir=$(ls -d "$PYENV/$v".* 2>/dev/null | sort -V | tail -1)
	[[ -n $dir ]] && test_threads "py$v" "$dir/bin/python$v"
done

# A Python exec'd by a child 0.5 s after the recording began (exec, libpython mmap, init).
dir=$(ls -d "$PYENV/3.12".* 2>/dev/null | sort -V | tail -1)
if [[ -n $dir ]]; then
	py_record late /bin/sh -c "sleep 0.5; $dir/bin/python3.12 $DATA/py_chain.py $SECS"
	f=$TMP/late.stacks
	inc=$(samples "$f" "*" "(_PyEval_EvalFrameDefault|py_chain)")
	chain=$(samples "$f" "*" "<module>@$C:$L_MOD;a@$C:$L_A;b@$C:$L_B;c@$C:$L_HOT(;[^;@]*)*\$")
	check_pct "late process: chain with exact lines" "$chain" "$inc" 85 || show_py "$f"

	py_record deep "$dir/bin/python3.12" "$DATA/py_recurse.py" $SECS
	f=$TMP/deep.stacks
	inc=$(samples "$f" "*" ";down@py_recurse\\.py:$L_DEEP(;|\$)")
	# 601 Python frames do not fit: the leaf side is kept, the rest is one marker
	trunc=$(samples "$f" "*" \
		"_PyEval_EvalFrameDefault;\\[python: more frames truncated\\];(down@py_recurse\\.py:[0-9]+;)+down@py_recurse\\.py:$L_DEEP(;[^;@]*)*\$")
	check_ge "deep recursion: samples in the innermost call" "$inc" 300
	check_pct "deep recursion: innermost frames kept, explicit truncation marker" "$trunc" \
		"$inc" 85 || show_py "$f"
fi

# A Python whose layout is not known: native frames and a visible marker.
dir=$(ls -d "$PYENV/3.7".* 2>/dev/null | sort -V | tail -1)
if [[ -n $dir ]]; then
	py_record old "$dir/bin/python3.7" "$DATA/py_chain.py" $SECS
	f=$TMP/old.stacks
	total=$(samples "$f" "*")
	inc=$(samples "$f" "*" "_PyEval_EvalFrameDefault;\\[python: unsupported version\\]")
	check_pct "python 3.7: eval loop marked [python: unsupported version]" "$inc" "$total" 85 ||
		show_py "$f"
else
	skip "pyenv python 3.7 not installed: unsupported-version marker not tested"
fi

finish
