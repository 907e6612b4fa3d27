#!/bin/bash
# The offline validator of the Kubernetes manifests in dist/kubernetes/ (a test tool, not part
# of the product): scripts/k8s_validator/main.go built from the Kubernetes API's own Go modules
# at the versions pinned in scripts/k8s_validator/go.mod and go.sum (k8s.io/api and
# k8s.io/apimachinery v0.37.2, sigs.k8s.io/yaml v1.6.0). It decodes each document strictly
# into its API type (an unknown or misspelled field, a wrong type, a bad quantity: an error)
# and checks what the API server would refuse in them (main.go says which). Chosen over
# kubeconform because kubeconform's JSON schemas are not Go modules (they come from GitHub at
# run time) and this machine reaches only the Go module proxy; the API types are the schemas'
# source. Prints the binary's path.
#
# Cached under K8S_VALIDATOR_CACHE (default /var/cache/stackscope/k8s-validator): the Go
# module cache (gomod/), the build cache (gocache/) and the binary (bin/stackscope-k8s-
# validator-HASH, HASH of main.go, go.mod and go.sum): a second run prints the path at once.
# The binary is put in place whole. Needs Go >= go.mod's go line (the first go on PATH,
# /usr/local/go/bin/go, or GO=...); -mod=readonly: go.sum's hashes, nothing re-resolved.
# Usage: scripts/k8s_validator.sh   Env: K8S_VALIDATOR_CACHE, GO.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/k8s_validator" && pwd)
CACHE=${K8S_VALIDATOR_CACHE:-/var/cache/stackscope/k8s-validator}
hash=$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-16)
BIN=$CACHE/bin/stackscope-k8s-validator-$hash
if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi

want=$(sed -n 's/^go \([0-9][0-9.]*\)$/\1/p' "$SRC/go.mod")
source "$(dirname "$0")/go_toolchain.sh"
go_toolchain "$want" k8s_validator.sh

mkdir -p "$CACHE/bin" "$CACHE/gomod" "$CACHE/gocache"
export GOMODCACHE=$CACHE/gomod GOCACHE=$CACHE/gocache GOTOOLCHAIN=local GOFLAGS=-mod=readonly
tmp=$(mktemp "$CACHE/bin/.build.XXXXXX")
trap 'rm -f "$tmp" "$tmp.log"' EXIT
echo "k8s_validator.sh: building the manifest validator into $BIN (once)" >&2
start=$SECONDS
if ! (cd "$SRC" && nice "$GO_BIN" build -p 2 -trimpath -o "$tmp" .) >"$tmp.log" 2>&1; then
	echo "k8s_validator.sh: go build failed:" >&2
	tail -20 "$tmp.log" >&2
	exit 1
fi
chmod 755 "$tmp"
mv "$tmp" "$BIN"
echo "k8s_validator.sh: built in $((SECONDS - start)) s" >&2
find "$CACHE/bin" -maxdepth 1 -name 'stackscope-k8s-validator-*' ! -path "$BIN" -delete
echo "$BIN"
