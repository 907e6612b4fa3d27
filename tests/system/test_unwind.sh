#!/bin/bash
# User-space unwinding of workloads with known chains, each recorded as `-- COMMAND`:
# frame pointers, no frame pointers (.eh_frame only), a libc callback (qsort), deep
# recursion, a signal handler (through the kernel's signal frame and __restore_rt) and the
# dynamic loader's lazy-binding trampoline (a CFA kept in rbx), glibc's __vfork (the return
# address in rdi).
# A stack counts as complete when it goes back to _start;__libc_start_main. The first
# ~100 ms of a new process can lose libc's frames (see test_short.sh): measured 92-99%
# complete over 4 runs, so 85%; a broken unwinder gives ~0%.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499 SECS=2 MIN_SAMPLES=100 COMPLETE_PCT=85

# run_wl NAME: records `NAME SECS` into $TMP/NAME.folded; 0 when stackscope succeeded and
# produced enough samples of NAME.
run_wl()
{
	local name=$1 rc n
	have_fixture "$name" || return 1
	record "$TMP/$name.err" -F $HZ -q -o "$TMP/$name.folded" -- "$FIX/$name" $SECS
	rc=$?
	if [[ $rc -ne 0 || ! -s $TMP/$name.folded ]]; then
		fail "$name: stackscope exited $rc: $(head -3 "$TMP/$name.err")"
		return 1
	fi
	n=$(samples "$TMP/$name.folded" "$name")
	check_ge "$name: samples of the workload" "$n" $MIN_SAMPLES || return 1
	return 0
}

# chain NAME: the main -> chain_a -> chain_b -> chain_c -> hot_leaf workload.
chain()
{
	local name=$1 f=$TMP/$1.folded top total full
	run_wl "$name" || return
	top=$(dominant "$f" "$name")
	if [[ $top =~ ^$name\;${START_RE}main\;chain_a\;chain_b\;chain_c\;hot_leaf$ ]]; then
		ok "$name: dominant stack is _start..main;chain_a;chain_b;chain_c;hot_leaf"
	else
		fail "$name: dominant stack is '$top'"
	fi
	total=$(samples "$f" "$name")
	full=$(samples "$f" "$name" "^$name;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_pct "$name: samples with the complete chain" "$full" "$total" $COMPLETE_PCT ||
		show "$f" "$name"
}

chain wl_chain_fp
chain wl_chain_nofp
# built without unwind tables: its CFI is .debug_frame in a separate debug file (debuglink)
chain wl_debugframe

# qsort: the comparator is called from inside libc (qsort_r and its local helpers).
if run_wl wl_qsort; then
	f=$TMP/wl_qsort.folded
	total=$(samples "$f" wl_qsort)
	cmp=$(samples "$f" wl_qsort ';main;sort_loop;(__)?qsort[^;]*;([^;]+;)*compare_items(;|$)')
	cmp_full=$(samples "$f" wl_qsort \
		"^wl_qsort;${START_RE}main;sort_loop;(__)?qsort[^;]*;([^;]+;)*compare_items(;|\$)")
	top=$(dominant "$f" wl_qsort)
	check "wl_qsort: dominant stack ends in compare_items under sort_loop;qsort ('$top')" \
		grep -Eq ';main;sort_loop;(__)?qsort[^;]*;([^;]+;)*compare_items$' <<<"$top"
	check_pct "wl_qsort: samples in compare_items called through qsort" "$cmp" "$total" 50
	check_pct "wl_qsort: of those, complete back to _start" "$cmp_full" "$cmp" $COMPLETE_PCT ||
		show "$f" wl_qsort
fi

# 300-deep non-tail recursion, burning in recurse_leaf.
if run_wl wl_recurse; then
	f=$TMP/wl_recurse.folded
	total=$(samples "$f" wl_recurse)
	deep=$(printf 'recurse;%.0s' {1..300})
	full=$(samples "$f" wl_recurse "^wl_recurse;${START_RE}main;${deep}recurse_leaf(;|\$)")
	top=$(dominant "$f" wl_recurse)
	check "wl_recurse: dominant stack is main, 300 x recurse, recurse_leaf" \
		test "$top" = "$(grep -Eo "^wl_recurse;${START_RE}main;" <<<"$top")${deep}recurse_leaf"
	check_pct "wl_recurse: samples with all 300 frames back to _start" "$full" "$total" \
		$COMPLETE_PCT
fi

# Signal handler: the unwinder must step through the signal frame the kernel pushed
# (return address __restore_rt) back into the interrupted code.
if run_wl wl_signal; then
	f=$TMP/wl_signal.folded
	total=$(samples "$f" wl_signal)
	handler=$(samples "$f" wl_signal ';on_signal;burn_in_handler(;|$)')
	full=$(samples "$f" wl_signal \
		"^wl_signal;${START_RE}main;interrupted_loop;([^;]+;)*on_signal;burn_in_handler(;|\$)")
	check_pct "wl_signal: samples in on_signal;burn_in_handler" "$handler" "$total" 30
	check_pct "wl_signal: of those, unwound through the signal frame to main and _start" \
		"$full" "$handler" $COMPLETE_PCT || show "$f" wl_signal
	# the frame below on_signal is the trampoline (__restore_rt, local to libc so it may
	# be shown as libc.so.6+0x...), never main or interrupted_loop directly
	bad=$(samples "$f" wl_signal ';(main|interrupted_loop);on_signal;')
	check_eq "wl_signal: samples with on_signal called straight from main/interrupted_loop" \
		"$bad" 0
fi

# Lazy binding: the dynamic loader's trampoline (_dl_runtime_resolve_xsavec) realigns its
# stack and keeps its CFA in rbx, so a sample in what it calls (_dl_fixup, the symbol lookup)
# needs rbx followed from the interrupted frame through the frames that save it. Debian's
# python3.11 is lazily bound; LD_BIND_NOT=1 sends every call through its PLT into the
# trampoline (measured: 40 % of those samples stopped at "[unwind: unsupported CFI]" before).
PY3=/usr/bin/python3.11
if [[ -x $PY3 ]]; then
	LD_BIND_NOT=1 record "$TMP/lazy.err" -F $HZ -o "$TMP/lazy.folded" -- \
		"$PY3" -S "$SS_ROOT/tests/data/py_chain.py" $SECS
	check_eq "lazy binding: stackscope exit status" $? 0
	f=$TMP/lazy.folded
	total=$(samples "$f" python3.11 ';_dl_runtime_resolve_[a-z]+;_dl_fixup(;|$)')
	full=$(samples "$f" python3.11 "^python3.11;${START_RE}.*;_dl_runtime_resolve_[a-z]+;_dl_fixup(;|\$)")
	check_ge "lazy binding: samples in _dl_fixup under the trampoline" "$total" 20
	check_pct "lazy binding: of those, complete back to _start" "$full" "$total" \
		$COMPLETE_PCT || show "$f" python3.11
else
	skip_setup "$PY3 missing (Debian python3.11)"
fi

# vfork: glibc's __vfork pops its return address into rdi around the syscall (CFI: CFA = rsp,
# ra in rdi), so a sample in the syscall needs the interrupted frame's rdi. dash runs every
# command through vfork (measured before: 63 of 63 such samples "[unwind: unsupported CFI]").
if [[ -x /bin/dash ]]; then
	record "$TMP/vfork.err" -F $HZ -o "$TMP/vfork.folded" -- \
		/bin/dash -c 'i=0; while [ $i -lt 3000 ]; do /bin/true; i=$((i+1)); done'
	check_eq "vfork: stackscope exit status" $? 0
	f=$TMP/vfork.folded
	total=$(samples "$f" dash ';__vfork(;|$)')
	full=$(samples "$f" dash '^dash;[^;]+;__libc_start_main(_impl)?;.*;__vfork(;|$)')
	check_ge "vfork: samples of dash in __vfork" "$total" 10
	check_pct "vfork: of those, complete back to __libc_start_main" "$full" "$total" \
		$COMPLETE_PCT || show "$f" dash
else
	skip_setup "/bin/dash missing"
fi

# Kernels without bpf_loop (before 5.17) unwind by tail calls; force that path here.
if have_fixture wl_recurse; then
	STACKSCOPE_TAIL_CALLS=1 record "$TMP/tc.err" -F $HZ -o "$TMP/tc.folded" -- \
		"$FIX/wl_recurse" $SECS
	check_eq "tail calls: stackscope exit status" $? 0
	check "tail calls: the tail-call unwinder was used" grep -q 'unwinding with tail calls' "$TMP/tc.err"
	f=$TMP/tc.folded
	total=$(samples "$f" wl_recurse)
	deep=$(printf 'recurse;%.0s' {1..300})
	full=$(samples "$f" wl_recurse "^wl_recurse;${START_RE}main;${deep}recurse_leaf(;|\$)")
	check_pct "tail calls: samples with all 300 frames back to _start" "$full" "$total" \
		$COMPLETE_PCT || show "$f" wl_recurse
fi

finish
