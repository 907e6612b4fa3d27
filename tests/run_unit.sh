#!/bin/bash
# Runs every unit-test binary given on the command line; prints each one's lines and
# one closing "N passed, N failed" over all of them. Exit status 1 if anything failed.
passed=0 failed=0 crashed=0
for t in "$@"; do
	echo "== ${t##*/}"
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -1)
	if [[ -z $line ]]; then
		echo "FAIL ${t##*/}: exited $rc without a summary"
		failed=$((failed + 1)); crashed=1; continue
	fi
	p=${line%% passed*}; f=${line#*, }; f=${f%% failed}
	passed=$((passed + p)); failed=$((failed + f))
	[[ $rc -ne 0 && $f -eq 0 ]] && { echo "FAIL ${t##*/}: exit $rc"; failed=$((failed + 1)); }
done
echo "unit: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
