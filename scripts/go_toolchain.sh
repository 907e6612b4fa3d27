#!/bin/bash
# The Go toolchain search shared by the scripts that build a Go test peer from the Go module
# proxy (scripts/collector.sh, scripts/k8s_validator.sh, bench/reference_build.sh), sourced:
#     source "$(dirname "$0")/go_toolchain.sh"; go_toolchain WANT NAME
# go_toolchain sets GO_BIN to a go whose version is at least WANT (a go.mod's go line): GO=...
# when given, else the first go on PATH, else /usr/local/go/bin/go (Debian 12's golang-go is
# 1.19, too old for every pin here; the machine's Go is in /usr/local/go). GOTOOLCHAIN=local:
# a go never downloads another toolchain behind the script's back. Without one it says so,
# as NAME, and exits 1.

# go_ok GO WANT: GO runs and its version is at least WANT
go_ok()
{
	local v
	v=$(GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 1
	v=${v#go}
	[[ $(printf '%s\n%s\n' "$2" "$v" | sort -V | head -1) == "$2" ]]
}

# go_toolchain WANT NAME: GO_BIN, or exit 1 after saying why (as NAME)
go_toolchain()
{
	local want=$1 g
	GO_BIN=${GO:-}
	if [[ -z $GO_BIN ]]; then
		for g in "$(command -v go || true)" /usr/local/go/bin/go; do
			if [[ -n $g && -x $g ]] && go_ok "$g" "$want"; then
				GO_BIN=$g
				break
			fi
		done
	fi
	if [[ -z $GO_BIN ]] || ! go_ok "$GO_BIN" "$want"; then
		echo "$2: needs Go >= $want (go.mod); none found (GO=..., /usr/local/go)" >&2
		exit 1
	fi
}
