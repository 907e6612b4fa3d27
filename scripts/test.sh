#!/bin/bash
# Sets up a fresh machine, builds stackscope and runs every test: unit tests (no root needed),
# the sanitizer build of the unit tests, and the system tests (root, real eBPF).
# Usage: sudo scripts/test.sh. The last line sums the three stages: "P passed, F failed,
# S skipped". CI=true (CI's runs, .ci/run) makes a skip of anything scripts/setup.sh installs
# a failure, in the unit and the system tests alike.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# the runtime matrix's Debian roots (tests/system/test_runtime_matrix.sh), built once and cached
for suite in bullseye bookworm trixie sid; do
	scripts/runtime_root.sh "$suite" >/dev/null || echo "test.sh: no $suite root: the runtime matrix fails" >&2
done
export CI=${CI:-}
make -j"$(nproc)" WERROR=-Werror
status=0
make -j"$(nproc)" test WERROR=-Werror | tee build/unit.log || status=1
make -j"$(nproc)" asan-test | tee build/asan.log || status=1
make -j"$(nproc)" system-test WERROR=-Werror | tee build/system.log || status=1
counts='[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'
unit=$(grep -E "^unit: $counts" build/unit.log | tail -1)
asan=$(grep -E "^unit: $counts" build/asan.log | tail -1)
system=$(grep -E "^system: $counts" build/system.log | tail -1)
p=0 f=0 s=0
for line in "$unit" "$asan" "$system"; do
	# a stage that printed no closing line counts as one failure
	[[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]] || { f=$((f + 1)); continue; }
	p=$((p + BASH_REMATCH[1])) f=$((f + BASH_REMATCH[2])) s=$((s + BASH_REMATCH[3]))
done
((f == 0)) || status=1
echo "$p passed, $f failed, $s skipped"
exit $status
