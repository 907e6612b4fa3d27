#!/bin/bash
# The reference the benchmarks measure stackscope against, built here: the OpenTelemetry eBPF
# profiler (github.com/open-telemetry/opentelemetry-ebpf-profiler), its standalone agent (the
# repository's main package, `ebpf-profiler`) at the pinned commit REFERENCE_COMMIT, from a
# local git copy of the repository (REFERENCE_GIT: its git directory, e.g. what the session
# tool's `fetch github:open-telemetry/opentelemetry-ebpf-profiler` brings; none of its code is
# in this repository). Its eBPF objects are the ones its source ships, compiled
# (support/ebpf/tracer.ebpf.amd64, embedded by go:embed), so no clang-17 is needed; its Go
# modules come through the Go module proxy (`go env GOPROXY`), checked against its go.sum
# (-mod=readonly). Prints the binary's path.
#
# Cached under REFERENCE_CACHE (default /var/cache/stackscope/reference): the Go module cache
# (gomod/), the build cache (gocache/) and the binary bin/ebpf-profiler-COMMIT, so a second run
# prints the path at once and another pin builds another binary. The binary is put in place
# whole; the source is unpacked into a scratch folder that is removed.
#
# One change to its source, made here at build time (the "-memlock" in the binary's name): its
# rlimit.MaximizeMemlock raises RLIMIT_MEMLOCK to unlimited and the agent stops when it may not
# (EPERM without CAP_SYS_RESOURCE, which the containers of this machine's kind lack, with a
# hard limit of 8 MiB). The limit is first lowered to the hard one's value, which is always
# allowed: on kernels >= 5.11, which charge BPF memory to the memory cgroup instead of the
# memlock limit, nothing else changes (stackscope's agent sets no such limit either).
# Usage: bench/reference_build.sh   Env: REFERENCE_GIT, REFERENCE_COMMIT, REFERENCE_CACHE, GO.
set -euo pipefail

# b442421a "fix(deps): update go dependencies (#1779)", 2026-08-21: the snapshot studied in
# the project's notes on the reference
COMMIT=${REFERENCE_COMMIT:-b442421a32ccfa07a527084c7c93b0f2b260b28f}
GIT=${REFERENCE_GIT:-/work/.mirror/open-telemetry+opentelemetry-ebpf-profiler/repo}
CACHE=${REFERENCE_CACHE:-/var/cache/stackscope/reference}
BIN=$CACHE/bin/ebpf-profiler-$COMMIT-memlock
if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi
if ! git --git-dir="$GIT" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
	echo "reference_build.sh: commit $COMMIT not in $GIT (REFERENCE_GIT=...: a git copy of" \
		"open-telemetry/opentelemetry-ebpf-profiler)" >&2
	exit 1
fi
want=$(git --git-dir="$GIT" show "$COMMIT:go.mod" | sed -n 's/^go \([0-9][0-9.]*\)$/\1/p')
source "$(dirname "$0")/../scripts/go_toolchain.sh"
go_toolchain "$want" reference_build.sh

mkdir -p "$CACHE/bin" "$CACHE/gomod" "$CACHE/gocache"
export GOMODCACHE=$CACHE/gomod GOCACHE=$CACHE/gocache GOTOOLCHAIN=local GOFLAGS=-mod=readonly
src=$(mktemp -d "$CACHE/.src.XXXXXX")
tmp=$(mktemp "$CACHE/bin/.build.XXXXXX")
trap 'rm -rf "$src" "$tmp" "$tmp.log"' EXIT
git --git-dir="$GIT" archive "$COMMIT" | tar -x -C "$src"
# the memlock change above: ask for the hard limit when unlimited is beyond it
sed -i 's/^\(\tif err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &tmpLimit, &oldLimit)\)/\tif unix.Getrlimit(unix.RLIMIT_MEMLOCK, \&oldLimit) == nil \&\& oldLimit.Max != unix.RLIM_INFINITY {\n\t\ttmpLimit = oldLimit\n\t\ttmpLimit.Cur = oldLimit.Max\n\t}\n\1/' \
	"$src/rlimit/rlimit.go"
grep -q 'tmpLimit.Cur = oldLimit.Max' "$src/rlimit/rlimit.go" || {
	echo "reference_build.sh: rlimit/rlimit.go is not as expected: the memlock change failed" >&2
	exit 1
}
echo "reference_build.sh: building the OpenTelemetry eBPF profiler ${COMMIT:0:12} into $BIN" \
	"(minutes, once)" >&2
start=$SECONDS
# CGO_ENABLED=0: the agent's packages need no cgo (only its coredump tool and types_def.go's
# generator do), and a static binary runs the same anywhere
if ! (cd "$src" && CGO_ENABLED=0 nice "$GO_BIN" build -p 2 -trimpath -o "$tmp" .) \
	>"$tmp.log" 2>&1; then
	echo "reference_build.sh: go build failed:" >&2
	tail -20 "$tmp.log" >&2
	exit 1
fi
"$tmp" -copyright >/dev/null 2>&1 || {
	echo "reference_build.sh: the built profiler does not run ($tmp -copyright)" >&2
	exit 1
}
chmod 755 "$tmp"
mv "$tmp" "$BIN"
echo "reference_build.sh: built in $((SECONDS - start)) s" >&2
# builds of other pins: not used any more
find "$CACHE/bin" -maxdepth 1 -name 'ebpf-profiler-*' ! -path "$BIN" -delete
echo "$BIN"
