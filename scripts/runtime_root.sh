#!/bin/bash
# One Debian suite's root for the runtime matrix (scripts/runtime_matrix.sh): `debootstrap
# --variant=minbase` from the Debian archive with that suite's runtime packages, kept under
# RM_CACHE/roots/SUITE and rebuilt only when its package list (below) changes. Prints the root's
# path. A root is built beside the old one and swapped in whole: an interrupted build leaves
# nothing half-made in use.
# Usage: scripts/runtime_root.sh SUITE   (bullseye, bookworm, trixie or sid)
# Env: RM_CACHE (default /var/cache/stackscope/runtime-matrix), RM_MIRROR (default
# http://deb.debian.org/debian).
set -euo pipefail

SUITE=${1:?usage: runtime_root.sh SUITE}
CACHE=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}
MIRROR=${RM_MIRROR:-http://deb.debian.org/debian}

# Each suite's own interpreters, the ones its containers run (in the matrix's order: python
# perl ruby php hotspot node go), what their rows need beside them (PHP's FPM and opcache,
# cgi-fcgi to send FPM a request), BEAM and LuaJIT (erlang-base, luajit), and Elixir in bookworm's
# (tests/system/test_beam.sh runs it on OTP 25's JIT). A JRE is enough: the Java workloads are
# compiled on the host for the oldest release.
common="libfcgi-bin erlang-base luajit"
case $SUITE in
bullseye) packages="python3.9 perl ruby2.7 php7.4-cli php7.4-fpm php7.4-opcache openjdk-11-jre-headless nodejs golang-1.15-go" ;;
bookworm) packages="python3.11 perl ruby3.1 php8.2-cli php8.2-fpm php8.2-opcache openjdk-17-jre-headless nodejs golang-1.19-go elixir" ;;
trixie) packages="python3.13 perl ruby3.3 php8.4-cli php8.4-fpm php8.4-opcache openjdk-21-jre-headless nodejs golang-1.24-go" ;;
sid) packages="python3.14 perl ruby3.3 php8.4-cli php8.4-fpm php8.4-opcache openjdk-26-jre-headless nodejs golang-1.27-go" ;;
*)
	echo "runtime_root: unknown suite '$SUITE' (bullseye, bookworm, trixie or sid)" >&2
	exit 2
	;;
esac
packages="$packages $common"
command -v debootstrap >/dev/null || {
	echo "runtime_root: debootstrap missing: run scripts/setup.sh" >&2
	exit 2
}

root=$CACHE/roots/$SUITE
stamp="$SUITE $MIRROR $packages"
if [[ -f $root/.stackscope-root && $(cat "$root/.stackscope-root") == "$stamp" ]]; then
	echo "$root"
	exit 0
fi
mkdir -p "$CACHE/roots"
new=$(mktemp -d "$CACHE/roots/.$SUITE.XXXXXX")
log=$CACHE/roots/$SUITE.debootstrap.log
echo "runtime_root: building the $SUITE root ($packages); log in $log" >&2
# sid's Release file here may be past its Valid-Until: debootstrap does not check it, and
# the root's own apt is told not to either
if ! debootstrap --variant=minbase --include="${packages// /,}" "$SUITE" "$new" "$MIRROR" >"$log" 2>&1; then
	echo "runtime_root: debootstrap $SUITE failed (last lines of $log):" >&2
	tail -5 "$log" >&2
	rm -rf "$new"
	exit 1
fi
echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99stackscope-no-valid-until"
rm -rf "$new"/var/cache/apt/archives/*.deb
echo "$stamp" >"$new/.stackscope-root"
rm -rf "$root.old"
[[ -e $root ]] && mv "$root" "$root.old"
mv "$new" "$root"
rm -rf "$root.old"
echo "$root"
