#!/bin/bash
# Runs test_debuginfo --server against a local debuginfod (Debian's `debuginfod` package)
# serving $BUILD/fixtures/dwarf_debuginfod/ on a loopback port, with a private client cache.
# Usage: BUILD=build tests/unit/test_debuginfod.sh [path/to/test_debuginfo]
# Prints "SKIP" and exits 0 when debuginfod is not installed (a failure under CI=true). Takes a few seconds (the server
# scans the folder before it answers), so it is not part of `make test`.
set -uo pipefail

BUILD=${BUILD:-build}
bin=${1:-$BUILD/tests/test_debuginfo}
dir=$BUILD/fixtures/dwarf_debuginfod
if ! command -v debuginfod >/dev/null; then
	# scripts/setup.sh installs it: under CI (CI=true) its absence is a failure
	if [[ ${CI:-} == true ]]; then
		echo "FAIL debuginfod: not installed (scripts/setup.sh installs it)"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	echo "SKIP debuginfod: not installed"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
[[ -d $dir && -x $bin ]] || { echo "FAIL: $dir or $bin missing"; exit 1; }

tmp=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
debuginfod -F -p "$port" -d "$tmp/db.sqlite" -t0 -g0 "$dir" >"$tmp/server.log" 2>&1 &
server=$!
cleanup() {
	kill "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# Ready when the scan has indexed the fixture (its build id answers).
id=$(readelf -n "$dir/dwarf_inline" | sed -n 's/.*Build ID: //p')
for _ in $(seq 1 100); do
	if curl -sf -o /dev/null "http://127.0.0.1:$port/buildid/$id/debuginfo" 2>/dev/null; then
		break
	fi
	sleep 0.1
done

DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$tmp/cache" \
	BUILD=$BUILD "$bin" --server
