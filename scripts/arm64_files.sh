#!/bin/bash
# Debian's arm64 ELF files that the unit tests build arm64 unwind tables from (libc,
# libstdc++, python3.11, node's libnode): the packages' .debs, downloaded with apt-get into
# DIR/debs and unpacked into DIR/root. Needs the arm64 architecture in dpkg (setup.sh adds
# it). A second run with everything in place does nothing.
# Usage: scripts/arm64_files.sh DIR
set -euo pipefail
dir=${1:?usage: arm64_files.sh DIR}
pkgs=(libc6:arm64 libstdc++6:arm64 python3.11-minimal:arm64 libnode108:arm64)
stamp=$dir/root/.packages
if [[ -f $stamp && $(cat "$stamp") == "${pkgs[*]}" ]]; then
	exit 0
fi
mkdir -p "$dir/debs"
rm -rf "$dir/root"
mkdir -p "$dir/root"
(cd "$dir/debs" && for p in "${pkgs[@]}"; do
	ls "${p%%:*}"_*_arm64.deb >/dev/null 2>&1 || apt-get download -q -o APT::Sandbox::User=root "$p" >/dev/null
done)
for d in "$dir"/debs/*_arm64.deb; do
	dpkg-deb -x "$d" "$dir/root"
done
echo "${pkgs[*]}" >"$stamp"
echo "arm64_files.sh: $(ls "$dir"/debs | wc -l) packages unpacked into $dir/root"
