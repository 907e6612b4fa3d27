#!/bin/bash
# Runs every unit-test binary given on the command line, UNIT_JOBS at a time (default: the
# number of CPUs; each binary is single-threaded and none shares a file, a port or a process
# with another), then prints each one's lines in the order given and one closing
# "unit: N passed, N failed, N skipped" over all of them (each binary's own closing line is
# "N passed, N failed, N skipped": tests/unit/test.h). Exit status 1 if anything failed, or
# a binary died without its closing line.
jobs=${UNIT_JOBS:-$(nproc)}
out_dir=$(mktemp -d /tmp/stackscope-unit.XXXXXX)
trap 'rm -rf "$out_dir"' EXIT
i=0
for t in "$@"; do
	while (($(jobs -rp | wc -l) >= jobs)); do wait -n; done
	{ "$t" >"$out_dir/$i.out" 2>&1; echo $? >"$out_dir/$i.rc"; } &
	i=$((i + 1))
done
wait
passed=0 failed=0 skipped=0
i=0
for t in "$@"; do
	echo "== ${t##*/}"
	out=$(cat "$out_dir/$i.out"); rc=$(cat "$out_dir/$i.rc" 2>/dev/null || echo 255)
	i=$((i + 1))
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
