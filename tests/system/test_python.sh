#!/bin/bash
# CPython frames interleaved with native frames (bpf/python_unwind.h, src/interp/python.c),
# for every interpreter installed here: pyenv 3.6-3.13 (shared libpython; any patch level;
# pyenv is not installed by scripts/setup.sh, so a missing version is a visible skip) and
# Debian's python3 (static, non-PIE, .dynsym only; setup.sh installs it: missing under CI is a
# failure). The workloads are tests/data/py_*.py; their lines are marked (# HOT, # CALL_A...)
# and looked up here, so the checks name exact lines.
#
# pprof output is turned into "func@file:line;..." stacks by pprof_stacks.py: Python frames
# are the names with an "@", native ones have none. Checks:
#  - chain: <module> -> a -> b -> c, each at its call line and c at the hot line, with the
#    native _PyEval_EvalFrameDefault frame that runs them right below (root side);
#  - mixed: Python -> C (sorted / re.sub) -> Python callback, in that order;
#  - threads: a thread in zlib with the GIL released keeps its Python frames (Debian's, the
#    oldest and the newest pyenv version);
#  - a Python started after the recording began, and recursion 600 deep (the leaf side and
#    the truncation marker), on the newest pyenv 3.11+ or else Debian's;
#  - a version it does not walk (pyenv 2.7) gets a marker above its eval loop.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=1.5
DATA=$SS_ROOT/tests/data
PYENV=${PYENV_ROOT:-/root/.pyenv}/versions

# py_record NAME PYTHON SCRIPT ARGS...: records PYTHON -S SCRIPT ARGS (-S: no site import,
# a start-up as short as the interpreter allows: see the thresholds below)
py_record()
{
	local name=$1 py=$2
	shift 2
	RECORD_OPTS=-q record_stacks "$name" "$py" -S "$@"
}

marks "$DATA/py_chain.py" L_HOT=HOT L_B=CALL_B L_A=CALL_A L_MOD=CALL_MODULE
marks "$DATA/py_mixed.py" L_KEY=KEY L_REPL=REPL L_SORTED=SORTED L_SUB=SUB
marks "$DATA/py_threads.py" L_ZLIB=ZLIB L_SPIN=SPIN
L_DEEP=$(line "$DATA/py_recurse.py" DEEP)
L_LEAF=$(line "$DATA/py_many_code.py" LEAF)

# Thresholds: 499 Hz for 1.5 s is ~750 samples on an idle box; the interpreter's start-up
# (and the moments before its library is known: "[unwind: unmapped pc]") costs a fixed ~30.
# On a loaded 2-core box a workload may get a quarter of a CPU: counts ask for 150 and
# shares of all samples for 80%.
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
	check_ge "$name chain: samples" "$total" 150
	# <= 3.10 run one Python frame per eval activation: native frames between them
	[[ $minor -le 10 ]] && between="($N)+"
	chain=$(samples "$f" "*" \
		"_PyEval_EvalFrameDefault;($N)*<module>@$C:$L_MOD;${between}a@$C:$L_A;${between}b@$C:$L_B;${between}c@$C:$L_HOT(;[^;@]*)*\$")
	check_pct "$name chain: <module>:$L_MOD;a:$L_A;b:$L_B;c:$L_HOT (exact lines, interleaved)" \
		"$chain" "$total" 80 || show_stacks "$f"
	inc=$(samples "$f" "*" ";c@$C:")
	hot=$(samples "$f" "*" ";c@$C:$L_HOT(;|\$)")
	check_pct "$name chain: c at the hot line $L_HOT" "$hot" "$inc" 99
	inter=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*_PyEval_EvalFrameDefault;($N)*<module>@$C:")
	check_pct "$name chain: complete from _start" "$inter" "$total" 80

	py_record "$name-mixed" "$py" "$DATA/py_mixed.py" $SECS
	f=$TMP/$name-mixed.stacks
	# the callbacks also spend time on their other lines (entry, return): the structure is
	# checked at any line of theirs, and the loop line must dominate
	inc=$(samples "$f" "*" ";sort_key@py_mixed\\.py:")
	mixed=$(samples "$f" "*" \
		";sort_loop@py_mixed\\.py:$L_SORTED;($N)+_PyEval_EvalFrameDefault;($N)*sort_key@py_mixed\\.py:[0-9]+(;[^;@]*)*\$")
	hot=$(samples "$f" "*" ";sort_key@py_mixed\\.py:$L_KEY(;|\$)")
	check_ge "$name mixed: samples in sort_key" "$inc" 25
	check_pct "$name mixed: sort_loop:$L_SORTED -> C (sorted) -> eval -> sort_key" \
		"$mixed" "$inc" 85 || show_stacks "$f"
	check_pct "$name mixed: sort_key at its loop line $L_KEY" "$hot" "$inc" 60
	inc=$(samples "$f" "*" ";replace@py_mixed\\.py:")
	mixed=$(samples "$f" "*" \
		";sort_loop@py_mixed\\.py:$L_SUB;($N)+_PyEval_EvalFrameDefault;($N)*replace@py_mixed\\.py:[0-9]+(;[^;@]*)*\$")
	hot=$(samples "$f" "*" ";replace@py_mixed\\.py:$L_REPL(;|\$)")
	check_ge "$name mixed: samples in replace" "$inc" 15
	check_pct "$name mixed: sort_loop:$L_SUB -> C (re.sub) -> eval -> replace" \
		"$mixed" "$inc" 85 || show_stacks "$f"
	check_pct "$name mixed: replace at its loop line $L_REPL" "$hot" "$inc" 50
}

# test_threads NAME PYTHON MINOR: zlib with the GIL released in one thread, Python in the
# main thread
test_threads()
{
	local name=$1 py=$2 minor=$3 f inz withpy spin between=""

	py_record "$name-threads" "$py" "$DATA/py_threads.py" $SECS
	f=$TMP/$name-threads.stacks
	[[ $minor -le 10 ]] && between="($N)+"
	inz=$(samples "$f" "*" "(deflate|libz\\.so)")
	# before 3.11 a code object has no qualified name: "run", not "Thread.run"
	withpy=$(samples "$f" "*" \
		"(Thread\\.)?run@threading\\.py:[0-9]+;($N)*compressor@py_threads\\.py:$L_ZLIB;($N)*[^;@]*(deflate|libz\\.so)")
	check_ge "$name threads: samples in zlib" "$inz" 50
	check_pct "$name threads: zlib (GIL released) under compressor:$L_ZLIB" "$withpy" "$inz" 85 ||
		show_stacks "$f"
	spin=$(samples "$f" "*" \
		"<module>@py_threads\\.py:[0-9]+;${between}spinner@py_threads\\.py:$L_SPIN(;[^;@]*)*\$")
	check_ge "$name threads: main thread in spinner:$L_SPIN" "$spin" 50
}

# test_late NAME PYTHON MINOR: a Python exec'd by a child 0.5 s after the recording began
# (exec, libpython mmap and interpreter initialisation all while recording)
test_late()
{
	local name=$1 py=$2 minor=$3 f inc chain between=""

	RECORD_OPTS=-q record_stacks "$name-late" \
		/bin/sh -c "sleep 0.5; exec $py -S $DATA/py_chain.py $SECS"
	f=$TMP/$name-late.stacks
	[[ $minor -le 10 ]] && between="($N)+"
	inc=$(samples "$f" "*" "(_PyEval_EvalFrameDefault|py_chain)")
	chain=$(samples "$f" "*" \
		"<module>@$C:$L_MOD;${between}a@$C:$L_A;${between}b@$C:$L_B;${between}c@$C:$L_HOT(;[^;@]*)*\$")
	check_pct "$name late process: chain with exact lines" "$chain" "$inc" 80 || show_stacks "$f"
}

# test_deep NAME PYTHON: recursion 600 deep (3.11+: the Python frames share one activation)
test_deep()
{
	local name=$1 py=$2 f inc trunc

	py_record "$name-deep" "$py" "$DATA/py_recurse.py" $SECS
	f=$TMP/$name-deep.stacks
	inc=$(samples "$f" "*" ";down@py_recurse\\.py:$L_DEEP(;|\$)")
	# 601 Python frames do not fit: the leaf side is kept, the rest is one marker
	trunc=$(samples "$f" "*" \
		"_PyEval_EvalFrameDefault;\\[python: more frames truncated\\];(down@py_recurse\\.py:[0-9]+;)+down@py_recurse\\.py:$L_DEEP(;[^;@]*)*\$")
	check_ge "$name deep recursion: samples in the innermost call" "$inc" 150
	check_pct "$name deep recursion: innermost frames kept, explicit truncation marker" \
		"$trunc" "$inc" 85 || show_stacks "$f"
}

# test_many_code NAME PYTHON [tail-calls]: 150 distinct functions on every stack. Their code
# objects fit the symbol cache together: each read once, and the samples still in flight when
# the process exits keep their names (a cache where two of them evicted each other read the
# process again on every sample, thousands of reads, and gave markers once it had exited).
# With "tail-calls", on the tail-call walker (kernels before 5.17; forced here): a runtime's
# frame at any of its 528 steps (its runtime frames once ended at the 32nd step: 31 of 150).
test_many_code()
{
	local name=$1 py=$2 f inc chain kept reads i

	[[ ${3:-} == tail-calls ]] && name+=-tc
	f=$TMP/$name-many.stacks
	if [[ ${3:-} == tail-calls ]]; then
		STACKSCOPE_TAIL_CALLS=1 record_stacks "$name-many" "$py" -S "$DATA/py_many_code.py" $SECS
		check "$name many code objects: the tail-call walker was used" \
			grep -q 'unwinding with tail calls' "$TMP/$name-many.err"
	else
		record_stacks "$name-many" "$py" -S "$DATA/py_many_code.py" $SECS
	fi
	inc=$(samples "$f" "*" ";leaf@py_many_code\\.py:$L_LEAF(;|\$)")
	# f0..f149 in order (awk without interval expressions: the pattern spelt out)
	chain=$(for ((i = 0; i < 150; i++)); do printf ';f%d@<string>:[0-9]+' $i; done)
	kept=$(samples "$f" "*" \
		";<module>@py_many_code\\.py:[0-9]+$chain;leaf@py_many_code\\.py:$L_LEAF(;[^;@]*)*\$")
	reads=$(grep -o '^python .*code objects read [0-9]*' "$TMP/$name-many.err" | grep -o '[0-9]*$')
	check_ge "$name many code objects: samples in the leaf" "$inc" 150
	check_pct "$name many code objects: all 150 frames above the leaf named" "$kept" "$inc" 97 ||
		show_stacks "$f"
	check_le "$name many code objects: code objects read (150 on the stack, ~15 at start-up)" \
		"${reads:-100000}" 450
}

# pyenv_python MINOR: the newest pyenv interpreter of 3.MINOR (any patch level), or nothing.
pyenv_python()
{
	local dir

	dir=$(ls -d "$PYENV/3.$1".* 2>/dev/null | sort -V | tail -1)
	[[ -n $dir && -x $dir/bin/python3.$1 ]] && echo "$dir/bin/python3.$1"
}

found=()
for minor in 6 7 8 9 10 11 12 13; do
	py=$(pyenv_python $minor)
	if [[ -z $py ]]; then
		skip "pyenv python 3.$minor not installed"
		continue
	fi
	found+=("$minor")
	test_version "py3.$minor" "$py" "$minor"
done
# pyenv is not installed by scripts/setup.sh: none at all is a skip, shown, even under CI
((${#found[@]})) || skip "no pyenv python 3.6-3.13: shared-libpython interpreters not tested"

# Debian's python3 (static, non-PIE, .dynsym only), whatever its minor version: setup.sh
# installs it, so it is there under CI.
debian_minor=""
if [[ -x /usr/bin/python3 ]]; then
	debian_minor=$(/usr/bin/python3 -c 'import sys; print(sys.version_info[1])')
fi
if [[ -n $debian_minor ]]; then
	test_version "debian3.$debian_minor" /usr/bin/python3 "$debian_minor"
	test_threads "debian3.$debian_minor" /usr/bin/python3 "$debian_minor"
else
	skip_setup "Debian /usr/bin/python3 missing: its chain, mixed and threads checks"
fi

# threads on the oldest and newest pyenv versions present (one eval activation per frame up
# to 3.10, shared from 3.11)
if ((${#found[@]})); then
	oldest=${found[0]} newest=${found[-1]}
	test_threads "py3.$oldest" "$(pyenv_python "$oldest")" "$oldest"
	if [[ $newest != "$oldest" ]]; then
		test_threads "py3.$newest" "$(pyenv_python "$newest")" "$newest"
	fi
fi

# Late start, many code objects and deep recursion on one interpreter: the newest pyenv one (3.11+), else
# Debian's (always there under CI). Never dropped silently: no interpreter is a visible skip
# (a failure under CI, where Debian's must be there).
late_name="" late_py="" late_minor=""
if ((${#found[@]})) && [[ ${found[-1]} -ge 11 ]]; then
	late_name=py3.${found[-1]} late_py=$(pyenv_python "${found[-1]}") late_minor=${found[-1]}
elif [[ -n $debian_minor ]]; then
	late_name=debian3.$debian_minor late_py=/usr/bin/python3 late_minor=$debian_minor
fi
if [[ -z $late_py ]]; then
	skip_setup "no Python 3.11+ (Debian's /usr/bin/python3 or pyenv): late start and deep recursion"
else
	test_late "$late_name" "$late_py" "$late_minor"
	test_many_code "$late_name" "$late_py"
	test_many_code "$late_name" "$late_py" tail-calls
	if [[ $late_minor -ge 11 ]]; then
		test_deep "$late_name" "$late_py"
	else
		skip "$late_name: deep recursion is checked on 3.11+ only"
	fi
fi

# The agent (reads every 250 ms) and six processes of 150 ms each: the samples of a young
# process with Python frames wake it (bpf/sampler.bpf.c, wake_reader()), so their code objects
# are read while the processes live. Without that, 16 % of burn_short's frames had its name,
# the rest "[python: code object unreadable]".
if [[ -x /usr/bin/python3 ]]; then
	"$SS" agent -F $HZ --interval 1 --output-dir "$TMP/agent.out" 2>"$TMP/agent.err" &
	APID=$!
	_bg_pids+=($APID)
	check "agent: running" wait_agent "$TMP/agent.err" $APID
	for ((i = 0; i < 6; i++)); do
		/usr/bin/python3 -S "$DATA/py_short.py"
	done
	sleep 1.5 # the last interval goes out
	kill -INT $APID
	wait $APID
	check_eq "agent: exit status" $? 0
	for f in "$TMP"/agent.out/*.pb.gz; do
		$STACKS --comm "$f"
	done >"$TMP/agent.stacks"
	named=$(samples "$TMP/agent.stacks" python3 ';burn_short@py_short\\.py:')
	# (other python3 processes on the box have their code cached: theirs are rare)
	unnamed=$(samples "$TMP/agent.stacks" python3 \
		'\\[python: code object [a-z]+\\](;[^@]*)*$')
	check_ge "agent: short processes' samples in burn_short" "$((named + unnamed))" 60
	check_pct "agent: burn_short named in a short process's samples (read while it ran)" \
		"$named" "$((named + unnamed))" 70
else
	skip_setup "Debian /usr/bin/python3 missing: short processes under the agent"
fi

# A Python it does not walk: native frames and a visible marker above the eval loop. pyenv's
# 2.7 (PyEval_EvalFrameEx, no _PyRuntime), the only one here; a loop 2.7 runs (no
# time.monotonic).
old=$(ls -d "$PYENV"/2.7.* 2>/dev/null | sort -V | tail -1)
if [[ -n $old && -x $old/bin/python2.7 ]]; then
	py_record old "$old/bin/python2.7" -c \
		"import time; end = time.time() + $SECS
while time.time() < end: pass"
	f=$TMP/old.stacks
	total=$(samples "$f" "*")
	inc=$(samples "$f" "*" "PyEval_EvalFrameEx;\\[python: unsupported version\\](;[^;@]*)*\$")
	check_pct "python 2.7: eval loop marked [python: unsupported version]" "$inc" "$total" 80 ||
		show_stacks "$f"
else
	skip "no pyenv python 2.7: unsupported-version marker not tested"
fi

finish
