#!/bin/bash
# Debian's arm64 ELF files that the unit tests build arm64 unwind tables from (libc,
# libstdc++, python3.11, node's libnode): the packages' .debs, downloaded with apt-get into
# DIR/debs and unpacked into DIR/root. Needs the arm64 architecture in dpkg (setup.sh adds
# it). A second run with everything in place does nothing.
# With `kernel`: Debian's arm64 kernel image instead (linux-image-arm64's), whose BTF
# (scripts/kernel_btf.py) becomes DIR/vmlinux.btf for the arm64 BPF object (`make arm64`).
# Usage: scripts/arm64_files.sh DIR [kernel]
set -euo pipefail
dir=${1:?usage: arm64_files.sh DIR}
if [[ ${2:-} == kernel ]]; then
	[[ -s $dir/vmlinux.btf ]] && exit 0
	mkdir -p "$dir/kernel"
	pkg=$(apt-cache depends linux-image-arm64:arm64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
	[[ -n $pkg ]] || { echo "arm64_files.sh: no linux-image-arm64:arm64 in apt's lists" >&2; exit 1; }
	(cd "$dir/kernel" && ls linux-image-*_arm64.deb >/dev/null 2>&1 ||
		apt-get download -q -o APT::Sandbox::User=root "${pkg%%:*}:arm64" >/dev/null)
	dpkg-deb --fsys-tarfile "$dir"/kernel/linux-image-*_arm64.deb | tar -x -C "$dir/kernel" ./boot
	"$(dirname "$0")/kernel_btf.py" "$dir"/kernel/boot/vmlinuz-* "$dir/vmlinux.btf.tmp"
	mv "$dir/vmlinux.btf.tmp" "$dir/vmlinux.btf"
	exit 0
fi
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
