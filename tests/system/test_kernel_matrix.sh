#!/bin/bash
# The kernel matrix (scripts/kernel_matrix.sh): Debian's 6.1 and 5.10 kernels booted in QEMU
# (KVM when /dev/kvm exists, else TCG: slower, still the real kernels), stackscope recording
# the known chain (wl_chain_nofp) and a Python chain (py_chain.py) inside. Checks per kernel:
#  - 6.1: every program loads and passes the verifier (their instruction counts are shown),
#    the bpf_loop walker, the known chain complete from _start in >= 80% of hot_leaf's
#    samples, and so with the tail-call walker forced (the one kernels before 5.17 use)
#    (typically 0.99-1.00; under TCG on a loaded box the first samples may come
#    before the executable's unwind table is loaded: "[unwind: file not loaded]"), Python's <module>;a;b;c complete in >= 90% of the script's samples;
#  - 5.10: not supported yet (bpf_get_current_task_btf, 5.11): stackscope says so in one line
#    naming the helper, never a verifier dump.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish
command -v qemu-system-x86_64 >/dev/null || {
	skip_setup "qemu-system-x86_64 missing"
	finish
}
[[ -x /bin/busybox ]] || {
	skip_setup "busybox (busybox-static) missing"
	finish
}

out=$TMP/matrix
KM_OUT=$out KM_SECS=2 "$SS_ROOT/scripts/kernel_matrix.sh" x86_64 >"$TMP/rows" 2>"$TMP/err"
check_eq "kernel_matrix.sh exit status" $? 0 || sed 's/^/        /' "$TMP/err"
sed 's/^/    /' "$TMP/rows"

# row SERIES: the result line of the kernel of that series
row() { grep "^$1\.[0-9].* x86_64 " "$TMP/rows"; }
# field ROW NAME: NAME=value in ROW
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
# at_least VALUE MIN: VALUE (a decimal share) >= MIN
at_least() { [[ $1 != none ]] && python3 -c "import sys; sys.exit(not float('$1') >= $2)"; }

r=$(row 6.1)
check "6.1: booted, one result line" test -n "$r"
check_eq "6.1: programs" "$(field "$r" programs)" ok
check_eq "6.1: walker" "$(field "$r" walker)" bpf_loop
samples=$(field "$r" samples)
check_ge "6.1: known-chain samples in hot_leaf" "${samples%/*}" 40
check "6.1: known chain complete from _start (share $(field "$r" chain) >= 0.80)" \
	at_least "$(field "$r" chain)" 0.80
check "6.1: tail-call walker (forced): known chain complete (share $(field "$r" tail-call-chain) >= 0.80)" \
	at_least "$(field "$r" tail-call-chain)" 0.80
check_ge "6.1: Python samples running the script" "${samples#*/}" 40
check "6.1: Python <module>;a;b;c complete (share $(field "$r" python) >= 0.90)" \
	at_least "$(field "$r" python)" 0.90
progs=$(sed -n '/^6\.1\./,/^[^ ]/p' "$TMP/rows" | grep -c '^  verifier on_[a-z_]* insns=[0-9][0-9]* time_us=[0-9]')
check_ge "6.1: programs with verifier statistics (on_sample, on_fork, on_exec, on_exit...)" "$progs" 4

r=$(row 5.10)
check "5.10: booted, one result line" test -n "$r"
check_eq "5.10: programs (not supported yet)" "$(field "$r" programs)" failed
errs=$(sed -n '/^5\.10\./,/^[^ ]/p' "$TMP/rows" | grep '^  error chain:')
check_eq "5.10: one error line for the known-chain case" "$(grep -c . <<<"$errs")" 1
check "5.10: it names the missing helper and its kernel version" \
	grep -q 'lacks the bpf_[a-z_]* helper (Linux 5\.[0-9]*+)' <<<"$errs"
check_eq "5.10: no verifier dump on the console" \
	"$(grep -c 'PROG LOAD LOG' "$out/5.10.console")" 0

finish
