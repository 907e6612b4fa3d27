#!/bin/bash
# Runs every unit-test binary given on the command line; prints each one's lines and one
# closing "unit: N passed, N failed, N skipped" over all of them (each binary's own closing
# line is "N passed, N failed, N skipped": tests/unit/test.h). Exit status 1 if anything
# failed, or a binary died without its closing line.
passed=0 failed=0 skipped=0
for t in "$@"; do
	echo "== ${t##*/}"
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -1)
	if [[ -z $line ]]; then
		echo "FAIL ${t##*/}: exited $rc without a summary"
		failed=$((failed + 1)); continue
	fi
	read -r p _ f _ k _ <<<"${line//,/}"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + k))
	[[ $rc -ne 0 && $f -eq 0 ]] && { echo "FAIL ${t##*/}: exit $rc"; failed=$((failed + 1)); }
done
echo "unit: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
