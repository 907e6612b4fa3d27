# shellcheck shell=bash
# Shared steps of the tests/fuzz/run_fuzz_*.sh scripts (sourced, not run).
#
# A run script sets FUZZ_NAME (the target: tests/fuzz/fuzz_$FUZZ_NAME.c), builds it with
# fuzz_build, fills its seed corpus FUZZ_SEEDS (fuzz_seed_fixtures, fuzz_seed_sections) and
# calls fuzz_run. fuzz_run first replays every committed
# reproducer under tests/fuzz/regressions/$FUZZ_NAME/ (a fixed finding that comes back fails
# the run), then fuzzes:
#   - bounded (the default, the system test): `runs` inputs from seed 1, deterministic;
#   - a campaign when FUZZ_TIME is set (seconds): -max_total_time with final statistics,
#     at the lowest CPU priority, into FUZZ_OUT (default build-fuzz-campaign/$FUZZ_NAME);
#   - a line-coverage report when FUZZ_COVERAGE names a corpus folder (a campaign's): the
#     target is built with clang's source coverage instead of sanitizers, runs every input of
#     that folder once, and llvm-cov reports on the parser sources given to fuzz_build.
# Extra libFuzzer flags can be passed in FUZZ_ARGS.

: "${FUZZ_NAME:?set by the run script}"
BUILD=${BUILD:-build}
FUZZ_CFLAGS=(-std=gnu17 -O1 -g -D_GNU_SOURCE -Isrc)
FUZZ_SAN=('-fsanitize=fuzzer,address,undefined' -fno-sanitize-recover=all)
FUZZ_DIR=$BUILD/fuzz                   # binaries, seed corpora, bounded runs' findings
FUZZ_SEEDS=$FUZZ_DIR/corpus_$FUZZ_NAME # the seed corpus
mkdir -p "$FUZZ_SEEDS"

FUZZ_REPORT_SRCS=()

# fuzz_seed_fixtures FIXTURE...: copies each built fixture ($BUILD/fixtures/FIXTURE, from
# tests/data/; those not built are passed over) into FUZZ_SEEDS.
fuzz_seed_fixtures()
{
	local f

	for f in "$@"; do
		[[ -f $BUILD/fixtures/$f ]] && cp "$BUILD/fixtures/$f" "$FUZZ_SEEDS/"
	done
	return 0
}

# fuzz_seed_sections SECTION FIXTURE...: the section .SECTION of each built fixture that has
# one, cut out into FUZZ_SEEDS/FIXTURE.SECTION.
fuzz_seed_sections()
{
	local sec=$1 f tmp=$FUZZ_SEEDS/.tmp

	shift
	for f in "$@"; do
		[[ -f $BUILD/fixtures/$f ]] || continue
		objcopy --dump-section ".$sec=$FUZZ_SEEDS/$f.$sec" "$BUILD/fixtures/$f" "$tmp" \
			2>/dev/null || true
	done
	rm -f "$tmp"
}

# fuzz_build SOURCES... [LIBS...]: FUZZ_DIR/fuzz_$FUZZ_NAME, the libFuzzer binary of
# tests/fuzz/fuzz_$FUZZ_NAME.c.
fuzz_build()
{
	local bin=$FUZZ_DIR/fuzz_$FUZZ_NAME a

	if [[ -n ${FUZZ_COVERAGE:-} ]]; then
		for a in "$@"; do
			[[ $a == src/*.c && $a != src/base/* ]] && FUZZ_REPORT_SRCS+=("$a")
		done
		clang "${FUZZ_CFLAGS[@]}" -fsanitize=fuzzer -fprofile-instr-generate \
			-fcoverage-mapping "tests/fuzz/fuzz_$FUZZ_NAME.c" "$@" -o "$bin"
		return
	fi
	clang "${FUZZ_CFLAGS[@]}" "${FUZZ_SAN[@]}" "tests/fuzz/fuzz_$FUZZ_NAME.c" "$@" -o "$bin"
}

# fuzz_coverage BIN: line coverage of the parser sources over the corpus $FUZZ_COVERAGE.
fuzz_coverage()
{
	local bin=$1 prof

	prof=$(dirname "$bin")/cov_$FUZZ_NAME
	rm -f "$prof".prof*
	LLVM_PROFILE_FILE=$prof.profraw "$bin" -runs=0 -timeout=300 -rss_limit_mb=4096 \
		"$FUZZ_COVERAGE" >/dev/null 2>&1 || true
	llvm-profdata merge -sparse "$prof.profraw" -o "$prof.profdata"
	llvm-cov report "$bin" -instr-profile="$prof.profdata" "${FUZZ_REPORT_SRCS[@]}"
}

# fuzz_run RUNS [libFuzzer flags...]: fuzz_build's binary over FUZZ_SEEDS.
fuzz_run()
{
	local bin=$FUZZ_DIR/fuzz_$FUZZ_NAME corpus=$FUZZ_SEEDS runs=$1
	local reg="tests/fuzz/regressions/$FUZZ_NAME" out
	local -a regs=()

	shift
	if [[ -n ${FUZZ_COVERAGE:-} ]]; then
		fuzz_coverage "$bin"
		return
	fi
	if [[ -d $reg ]]; then
		mapfile -t regs < <(find "$reg" -type f | sort)
	fi
	if ((${#regs[@]})); then
		echo "replaying ${#regs[@]} regression input(s) from $reg"
		"$bin" -timeout=10 -rss_limit_mb=2048 "$@" "${regs[@]}"
	fi
	if [[ -n ${FUZZ_TIME:-} ]]; then
		out=${FUZZ_OUT:-build-fuzz-campaign/$FUZZ_NAME}
		mkdir -p "$out/corpus" "$out/artifacts"
		cp -n "$corpus"/* "$out/corpus/" 2>/dev/null || true
		# libFuzzer's -timeout is wall-clock time: at nice 19 on a busy machine a unit can
		# wait for the CPU for many seconds, so a campaign only calls a unit hung after 300 s
		# (an endless loop still ends there); slow units are re-timed by hand.
		# shellcheck disable=SC2086
		nice -n 19 "$bin" -max_total_time="$FUZZ_TIME" -print_final_stats=1 \
			-close_fd_mask=3 -artifact_prefix="$out/artifacts/" -timeout=300 \
			-rss_limit_mb=2048 "$@" ${FUZZ_ARGS:-} "$out/corpus"
	else
		# New inputs go to a scratch folder emptied each time, so the seeds stay the seeds
		# and every bounded run is the same run.
		out=$FUZZ_DIR/new_$FUZZ_NAME
		rm -rf "$out"
		mkdir -p "$out"
		# shellcheck disable=SC2086
		"$bin" -runs="$runs" -seed=1 -artifact_prefix="$FUZZ_DIR/" -timeout=10 \
			-rss_limit_mb=2048 "$@" ${FUZZ_ARGS:-} "$out" "$corpus"
	fi
}
