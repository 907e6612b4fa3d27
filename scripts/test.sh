#!/bin/bash
# Sets up a fresh machine, builds stackscope and runs every test: unit tests (no root needed),
# the sanitizer build of the unit tests, and the system tests (root, real eBPF).
# Usage: sudo scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CI=${CI:-}
make -j"$(nproc)" WERROR=-Werror
status=0
make test WERROR=-Werror | tee build/unit.log || status=1
make asan-test | tee build/asan.log || status=1
make system-test WERROR=-Werror | tee build/system.log || status=1
unit=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' build/unit.log | tail -1)
asan=$(grep -E '^unit: [0-9]+ passed, [0-9]+ failed$' build/asan.log | tail -1)
system=$(grep -E '^system: [0-9]+ passed, [0-9]+ failed' build/system.log | tail -1)
p=0 f=0
for line in "$unit" "$asan" "$system"; do
	[[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]] || { f=$((f + 1)); continue; }
	p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2]))
done
((f == 0)) || status=1
echo "$p passed, $f failed"
exit $status
