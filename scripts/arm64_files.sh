#!/bin/bash
# Debian's arm64 ELF files that the unit tests build arm64 unwind tables from (libc,
# libstdc++, python3.11, node's libnode): the packages' .debs, downloaded with apt-get into
# DIR/debs and unpacked into DIR/root. Needs the arm64 architecture in dpkg (setup.sh adds
# it). A second run with everything in place does nothing.
# With `kernel`: Debian's arm64 kernel image instead (linux-image-arm64's), whose BTF
# (scripts/kernel_btf.py) becomes DIR/vmlinux.btf for the arm64 BPF object (`make arm64`).
# With `runtimes`: the kernel matrix's arm64 runtimes (Debian 12's perl-base, ruby3.1 with
# libruby3.1, php8.2-cli) and the libraries they load that this host's :arm64 multiarch lacks,
# unpacked into DIR/runtimes/root (without libc: the guest's loader and libc are the host's),
# and php8.2-opcache into DIR/php-jit/root.
# With `node`: Debian 12's arm64 nodejs (Node 18, V8 10.2 in libnode108) and the libraries it
# loads that the host's :arm64 multiarch lacks, unpacked into DIR/node/root.
# With `java`: Debian 12's openjdk-17-jre-headless (HotSpot 17: the JVM tree with its CDS archive)
# and libstdc++6 that its libjvm.so loads, unpacked into DIR/java/root.
# With `luajit`: Debian 12's luajit (LuaJIT 2.1, GC64 on arm64; its arm64 build has the VM
# linked in, libluajit-5.1-2 is not loaded), unpacked into DIR/luajit/root.
# With `beam`: Debian 12's erlang-base (OTP 25, beam.smp with the BEAMASM JIT) and the libraries
# its emulator loads that the host's :arm64 multiarch lacks, unpacked into DIR/beam/root.
# Usage: scripts/arm64_files.sh DIR [kernel|runtimes|node|java|luajit|beam]
set -euo pipefail
dir=${1:?usage: arm64_files.sh DIR}
# unpack_debs ROOT PACKAGE...: the packages' arm64 .debs (downloaded once into ROOT's sibling debs/)
# unpacked into ROOT, stamped with the list; nothing when the stamp already says it
unpack_debs()
{
	local root=$1 stamp=$1/.packages debs p d
	debs=$(dirname "$root")/debs
	shift
	[[ -f $stamp && $(cat "$stamp") == "$*" ]] && return 0
	mkdir -p "$debs"
	rm -rf "$root"
	mkdir -p "$root"
	(cd "$debs" && for p in "$@"; do
		ls "${p%%:*}"_*_{arm64,all}.deb >/dev/null 2>&1 || apt-get download -q -o APT::Sandbox::User=root "$p" >/dev/null
	done)
	for p in "$@"; do
		# (arm64's, or a package of every architecture: node's JavaScript)
		for d in "$debs/${p%%:*}"_*_{arm64,all}.deb; do
			[[ -e $d ]] && dpkg-deb -x "$d" "$root"
		done
	done
	echo "$*" >"$stamp"
	echo "arm64_files.sh: $# packages unpacked into $root"
}
if [[ ${2:-} == runtimes ]]; then
	# php8.2's libxml2 loads ICU (libicudata: 30 MB of the root) and libstdc++
	unpack_debs "$dir/runtimes/root" perl-base:arm64 ruby3.1:arm64 libruby3.1:arm64 \
		php8.2-cli:arm64 libargon2-1:arm64 libpcre2-8-0:arm64 libsodium23:arm64 \
		libxml2:arm64 libicu72:arm64 libstdc++6:arm64
	# opcache (its JIT: the php_jit= column), a root of its own: DIR/php-jit/root
	unpack_debs "$dir/php-jit/root" php8.2-opcache:arm64
	exit 0
fi
if [[ ${2:-} == node ]]; then
	unpack_debs "$dir/node/root" nodejs:arm64 libnode108:arm64 libuv1:arm64 libicu72:arm64 \
		libnghttp2-14:arm64 libc-ares2:arm64 libbrotli1:arm64 libssl3:arm64 zlib1g:arm64 \
		libstdc++6:arm64 node-cjs-module-lexer node-acorn node-undici
	exit 0
fi
if [[ ${2:-} == java ]]; then
	unpack_debs "$dir/java/root" openjdk-17-jre-headless:arm64 libstdc++6:arm64
	exit 0
fi
if [[ ${2:-} == luajit ]]; then
	unpack_debs "$dir/luajit/root" luajit:arm64
	exit 0
fi
if [[ ${2:-} == beam ]]; then
	unpack_debs "$dir/beam/root" erlang-base:arm64 libstdc++6:arm64 libtinfo6:arm64 zlib1g:arm64
	exit 0
fi
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
unpack_debs "$dir/root" libc6:arm64 libstdc++6:arm64 python3.11-minimal:arm64 libnode108:arm64
