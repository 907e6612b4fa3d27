#!/bin/bash
# The OpenTelemetry Collector the tests send the agent's profiles through (a test peer, not
# part of the product): scripts/collector/main.go built from the Collector's own Go modules
# at the versions pinned in scripts/collector/go.mod and go.sum (core v0.161.0 / v1.67.0, the
# contrib file exporter v0.161.0: the newest release whose OTLP profiles speak the same wire
# format as src/export/otlp.c, opentelemetry-proto v1.11.0's v1development; checked field by
# field in pdata's generated code). Prints the binary's path.
#
# Cached under COLLECTOR_CACHE (default /var/cache/stackscope/collector): the Go module
# cache (gomod/), the build cache (gocache/) and the binary (bin/stackscope-otelcol-HASH,
# HASH of main.go, go.mod and go.sum), so a second run prints the path at once and a change
# of the pinned versions builds a new binary. The binary is put in place whole (an
# interrupted build leaves nothing half-made in use).
#
# It needs Go >= 1.26 (the machine's /usr/local/go; Debian 12's golang-go is 1.19): the
# first go on PATH, /usr/local/go/bin/go, or GO=... The modules come through the Go module
# proxy as `go env GOPROXY` says; go.sum pins their hashes (-mod=readonly: nothing is
# re-resolved).
# Usage: scripts/collector.sh   Env: COLLECTOR_CACHE, GO.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/collector" && pwd)
CACHE=${COLLECTOR_CACHE:-/var/cache/stackscope/collector}
hash=$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-16)
BIN=$CACHE/bin/stackscope-otelcol-$hash
if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi

# a Go new enough for go.mod's go line
want=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$SRC/go.mod")
source "$(dirname "$0")/go_toolchain.sh"
go_toolchain "$want" collector.sh

mkdir -p "$CACHE/bin" "$CACHE/gomod" "$CACHE/gocache"
export GOMODCACHE=$CACHE/gomod GOCACHE=$CACHE/gocache GOTOOLCHAIN=local GOFLAGS=-mod=readonly
tmp=$(mktemp "$CACHE/bin/.build.XXXXXX")
trap 'rm -f "$tmp"' EXIT
echo "collector.sh: building the OpenTelemetry Collector into $BIN (minutes, once)" >&2
start=$SECONDS
if ! (cd "$SRC" && nice "$GO_BIN" build -p 2 -trimpath -o "$tmp" .) >"$tmp.log" 2>&1; then
	echo "collector.sh: go build failed:" >&2
	tail -20 "$tmp.log" >&2
	rm -f "$tmp.log"
	exit 1
fi
rm -f "$tmp.log"
"$tmp" components >/dev/null 2>&1 || {
	echo "collector.sh: the built collector does not run ($tmp components)" >&2
	exit 1
}
chmod 755 "$tmp"
mv "$tmp" "$BIN"
echo "collector.sh: built in $((SECONDS - start)) s" >&2
# older builds of other pins: not used any more
find "$CACHE/bin" -maxdepth 1 -name 'stackscope-otelcol-*' ! -path "$BIN" -delete
echo "$BIN"
