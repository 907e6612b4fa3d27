#!/bin/bash
# Fixtures for the Go 1.16-1.17 table format (.gopclntab magic 0xfffffffa), which no Go on this
# machine writes: npm's esbuild-linux-64 0.11.23 (esbuild built by Go 1.16.3) and 0.12.29
# (Go 1.17.1), stripped binaries nobody here built, put at DIR/esbuild-go116 and
# DIR/esbuild-go117; and for each DIR/<name>.addr2line, what the Go toolchain's addr2line
# (debug/gosym, which reads that format) says of every 61st byte of .text:
# "addr<TAB>function<TAB>file:line". Optional, like go.mk's esbuild: a fetch that fails is
# recorded in DIR/<name>.unavailable (delete it to try again) and never fails the build.
# Usage: esbuild_go116.sh DIR GO NPM   (GO, NPM: the commands, or empty)
set -uo pipefail

DIR=$1 GO=$2 NPM=$3
for e in esbuild-go116:0.11.23 esbuild-go117:0.12.29; do
	name=${e%%:*} ver=${e#*:}
	bin=$DIR/$name
	if [[ -n $NPM && ! -x $bin && ! -e $bin.unavailable ]]; then
		d=$(mktemp -d)
		if (cd "$d" && timeout 60 "$NPM" pack --silent "esbuild-linux-64@$ver" >/dev/null 2>&1 &&
			tar xzf "esbuild-linux-64-$ver.tgz" package/bin/esbuild); then
			mv "$d/package/bin/esbuild" "$bin"
		else
			echo "npm pack esbuild-linux-64@$ver failed" >"$bin.unavailable"
		fi
		rm -rf "$d"
	fi
	[[ -n $GO && -x $bin && ! -s $bin.addr2line ]] || continue
	read -r start size < <(readelf -SW "$bin" | sed 's/^ *\[ *[0-9]*\]//' |
		awk '$1 == ".text" { print $3, $5 }')
	[[ -n ${size:-} ]] || continue
	end=$((16#$start + 16#$size)) start=$((16#$start))
	for ((a = start; a < end; a += 61)); do printf '0x%x\n' "$a"; done >"$bin.addrs"
	if "$GO" tool addr2line "$bin" <"$bin.addrs" | paste - - >"$bin.a2l"; then
		paste "$bin.addrs" "$bin.a2l" >"$bin.addr2line.tmp" && mv "$bin.addr2line.tmp" "$bin.addr2line"
	fi
	rm -f "$bin.addrs" "$bin.a2l"
done
exit 0
