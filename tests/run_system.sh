#!/bin/bash
# Runs every tests/system/test_*.sh (as root, against real eBPF and the workloads in
# $BUILD/fixtures), one after another: the box has few CPUs and the tests burn them. Prints
# each script's checks, one ok/FAIL line per script (with its skips), and a last line
# "system: N passed, M failed, K skipped" counting checks over all scripts. Exit status 1 if
# any check failed or a script died without its summary. Under CI (CI=true) a skip of
# something scripts/setup.sh installs is a failure (tests/system/lib.sh skip_setup).
cd "$(dirname "$0")/.." || exit 1
export BUILD=${BUILD:-build}
# a bound on a hung script, not a duration: test_python.sh takes ~100 s on a loaded box
SCRIPT_TIMEOUT=${SCRIPT_TIMEOUT:-180}
passed=0 failed=0 skipped=0
declare -a lines=()
start_all=$SECONDS
for t in tests/system/test_*.sh; do
	name=${t##*/}
	name=${name%.sh}
	echo "== $name"
	s=$SECONDS
	# a script that needs longer says so in a "# timeout: SECS" line (the runtime matrix)
	limit=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -1)
	out=$(timeout -k 10 "${limit:-$SCRIPT_TIMEOUT}" bash "$t" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	secs=$((SECONDS - s))
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -1)
	if [[ -z $line ]]; then
		lines+=("FAIL $name: exited $rc without a summary (${secs}s)")
		failed=$((failed + 1))
		continue
	fi
	read -r p _ f _ k _ <<<"${line//,/}"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
	if [[ $f -gt 0 || $rc -ne 0 ]]; then
		[[ $f -eq 0 ]] && failed=$((failed + 1))
		lines+=("FAIL $name: $line (${secs}s)")
	elif [[ $k -gt 0 ]]; then
		lines+=("ok   $name: $line (${secs}s) -- SKIP $k")
	else
		lines+=("ok   $name: $line (${secs}s)")
	fi
done
echo "== summary ($((SECONDS - start_all))s)"
printf '%s\n' "${lines[@]}"
echo "system: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
