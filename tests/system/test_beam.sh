#!/bin/bash
# Erlang frames of the BEAM interleaved with native frames (bpf/interp/beam/walk.h,
# src/interp/beam/), on the runtime matrix's roots (scripts/runtime_root.sh): the JIT of
# bookworm's OTP 25, trixie's 27, sid's 29 (BEAM_SUITES= to choose) and the emulator flavour
# (`emu`, its interpreter loop walked) of bullseye's OTP 23 (BEAM_EMU_SUITES=), each run in a
# container (scripts/in_container.sh) on tests/data/erl_chain.erl, compiled there by the root's
# erlc.
# The workload's lines are marked (% HOT, % CALL_BETA...) and looked up here, so the checks name
# exact lines. Erlang frames are the names with an "@" (module:function/arity@file:line); OTP's
# own modules carry no line tables in Debian's build, so init's frames have no "@".
# Checks, per suite:
#  - chain: the scheduler thread's native root (clone3 -> start_thread -> the emulator's thread
#    wrapper -> sched_thread_func, by address in the stripped roots), then init's frames, then
#    erl_chain:main/1 -> alpha/1 -> beta/1 -> gamma/3, each at its call line, gamma at its hot
#    line;
#  - the stacks with Erlang frames (init's at their root) are complete from start_thread;
#  - the JIT: the scheduler loop's own calls (global::process_main's: erts_schedule, ...) carry
#    no marker: no Erlang code is their caller; the emulator flavour: the interpreter loop's
#    native frame (process_main) lies between sched_thread_func and init's frames;
#  - record's summary: Erlang frames walked, walks back to the scheduler, native code called by
#    the scheduler loop (the JIT), the interpreter loop walked to the process's first CP (the
#    emulator flavour), no refused emulator.
# Then Elixir (bookworm's elixir 1.14, BEAM_ELIXIR_SUITE=): tests/data/ex_chain.ex's chain named
# as Elixir names it.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
CPU_SECS=3 # the workload runs for this much CPU (at most 6 x that of wall time on a busy box)
DATA=$SS_ROOT/tests/data
ROOTS=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots

# marks of an Erlang source ("% MARK"): lib.sh's line() reads "#" and "//" ones
erl_line()
{
	grep -nE "% $2\$" "$1" | cut -d: -f1 | paste -sd'|'
}

F=$DATA/erl_chain.erl
C=erl_chain\\.erl
L_ALPHA=$(erl_line "$F" CALL_ALPHA)
L_BETA=$(erl_line "$F" CALL_BETA)
L_GAMMA=$(erl_line "$F" CALL_GAMMA)
L_HOT=$(erl_line "$F" HOT)
SCHED='^x;'
ROOT="((__clone3|clone3|libc\\.so\\.6\\+0x[0-9a-f]+);)?(start_thread|libc\\.so\\.6\\+0x[0-9a-f]+);[^;@]*;[^;@]*;"
CHAIN="${ROOT}(process_main;)?init:do_boot/3;init:start_em/1;(init:start_it/1;)?erl_chain:main/1@$C:$L_ALPHA;erl_chain:alpha/1@$C:$L_BETA;erl_chain:beta/1@$C:$L_GAMMA;erl_chain:gamma/3@$C:[0-9]+(;[^;@]*)*\$"

# in_root ROOT NAME SOURCE COMPILER: a folder of ROOT's /tmp with SOURCE in it (dir; wd: its
# path in the container), the container's command prefix (in) and COMPILER run on SOURCE there
# (its output in $TMP/NAME.compile). 1 (failed, the folder removed) if the compiler fails.
in_root()
{
	local id
	dir=$(mktemp -d "$1/tmp/stackscope-systest-$2.XXXXXX")
	chmod 755 "$dir"
	cp "$3" "$dir/"
	id=$(printf 'stackscope-test-%s' "$2" | sha256sum | cut -c1-64)
	in=("$SS_ROOT/scripts/in_container.sh" "$1" "$id")
	wd=${dir#"$1"}
	if ! "${in[@]}" sh -c "cd $wd && $4 $(basename "$3")" >"$TMP/$2.compile" 2>&1; then
		fail "$2: $4 $(basename "$3"): $(head -3 "$TMP/$2.compile")"
		rm -rf "${dir:?}"
		return 1
	fi
}

emu_suites=" ${BEAM_EMU_SUITES-bullseye} "
for suite in ${BEAM_EMU_SUITES-bullseye} ${BEAM_SUITES:-bookworm trixie sid}; do
	root=$ROOTS/$suite
	if [[ ! -f $root/.stackscope-root ]] || ! compgen -G "$root/usr/lib/erlang/erts-*/bin/beam.smp" >/dev/null; then
		skip "$suite: no root with erlang-base (make runtime-matrix)"
		continue
	fi
	in_root "$root" "$suite" "$F" erlc || continue
	record_stacks "$suite" "${in[@]}" erl -noshell -pa "$wd" -run erl_chain main "$CPU_SECS"
	rm -rf "${dir:?}"
	f=$TMP/$suite.stacks
	sched=$(samples "$f" "*" "${SCHED}.*;init:do_boot/3;")
	inc=$(samples "$f" "*" "${SCHED}.*;erl_chain:gamma/3@$C:")
	check_ge "$suite: samples in erl_chain:gamma/3" "$inc" 250
	chain=$(samples "$f" "*" "$SCHED$CHAIN")
	check_pct "$suite: start_thread..init;main:$L_ALPHA;alpha:$L_BETA;beta:$L_GAMMA;gamma" \
		"$chain" "$inc" 95 || show_stacks "$f" "gamma"
	hot=$(samples "$f" "*" "${SCHED}.*;erl_chain:gamma/3@$C:($L_HOT)(;[^;@]*)*\$")
	check_pct "$suite: gamma at its hot line $L_HOT" "$hot" "$inc" 95
	whole=$(samples "$f" "*" "$SCHED${ROOT}(process_main;)?init:do_boot/3;")
	check_pct "$suite: stacks with Erlang frames complete from start_thread" "$whole" "$sched" 95 ||
		show_stacks "$f" "\\[unwind"
	if [[ $emu_suites == *" $suite "* ]]; then
		# the interpreter loop's own native frame under the Erlang frames it runs
		loop=$(samples "$f" "*" "${SCHED}${ROOT}process_main;init:do_boot/3;")
		check_pct "$suite: the Erlang frames over the interpreter loop's (process_main)" \
			"$loop" "$sched" 95 || show_stacks "$f" "process_main"
		walked=("interpreter loop walked" "interpreter walks to the normal exit")
	else
		# the scheduler loop's own calls (erts_schedule...): no Erlang caller, so no marker
		# (the walk starts once the emulator's records have named the loop: OTP 27's boot
		# schedules most before the first 200 ms)
		loop=$(samples "$f" "*" "${SCHED}.*;global::process_main(;|\$)")
		loop_marked=$(samples "$f" "*" "${SCHED}.*;\[beam: [^];]*\];global::process_main(;|\$)")
		check_pct "$suite: the scheduler loop's stacks without a marker" \
			"$((loop - loop_marked))" "$loop" 95 || show_stacks "$f" "global::process_main"
		walked=("back to the scheduler" "called by the scheduler loop")
	fi
	check_summary "$TMP/$suite.err" beam 1 "erlang frames" "${walked[@]}"
	check "$suite: no refused emulator" grep -q "^beam .* unsupported 0," "$TMP/$suite.err"
done

# Elixir: tests/data/ex_chain.ex compiled by the root's elixirc and run by `elixir -e` on the
# suite's JIT (BEAM_ELIXIR_SUITE, "" for none): its functions named as Elixir shows them
# (Elixir.ExChain.gamma/3, not 'Elixir.ExChain':gamma/3), each at its line, the whole chain
# from the scheduler thread's root through elixir's CLI and erl_eval.
ex_suite=${BEAM_ELIXIR_SUITE-bookworm}
root=$ROOTS/$ex_suite
if [[ -z $ex_suite ]]; then
	:
elif [[ ! -x $root/usr/bin/elixir ]]; then
	skip_setup "$ex_suite: no elixir in the root (scripts/runtime_root.sh $ex_suite)"
else
	XF=$DATA/ex_chain.ex
	XC=ex_chain\\.ex
	marks "$XF" X_ALPHA=CALL_ALPHA X_BETA=CALL_BETA X_GAMMA=CALL_GAMMA X_HOT=HOT
	if in_root "$root" elixir "$XF" elixirc; then
		record_stacks elixir "${in[@]}" elixir -pa "$wd" -e "ExChain.main([\"$CPU_SECS\"])"
		f=$TMP/elixir.stacks
		inc=$(samples "$f" "*" "${SCHED}.*;Elixir\\.ExChain\\.gamma/3@$XC:")
		check_ge "elixir: samples in Elixir.ExChain.gamma/3" "$inc" 250
		chain=$(samples "$f" "*" "$SCHED${ROOT}.*;Elixir\\.Kernel\\.CLI\\.[^;]*;.*;erl_eval:[^;]*;Elixir\\.ExChain\\.main/1@$XC:($X_ALPHA);Elixir\\.ExChain\\.alpha/1@$XC:($X_BETA);Elixir\\.ExChain\\.beta/1@$XC:($X_GAMMA);Elixir\\.ExChain\\.gamma/3@$XC:($X_HOT)(;[^;@]*)*\$")
		check_pct "elixir: start_thread..Elixir.Kernel.CLI..erl_eval;main:$X_ALPHA;alpha:$X_BETA;beta:$X_GAMMA;gamma:$X_HOT" \
			"$chain" "$inc" 95 || show_stacks "$f" "gamma"
		check_eq "elixir: frames of Elixir modules in Erlang's quoted form" \
			"$(grep -c "'Elixir\\." "$f")" 0
		check "elixir: an anonymous function named as Elixir does" \
			grep -q "anonymous fn/[0-9]* in Elixir\\.Kernel\\.CLI\\." "$f"
		rm -rf "${dir:?}"
	fi
fi

finish
