#!/bin/bash
# The kernel matrix (docs/ARCHITECTURE.md "Kernel matrix"): boots Debian's own kernels in QEMU
# with a small initramfs built from this host's files (busybox-static, stackscope and its
# libraries, the known-chain fixture, Debian's python3.11 with the stdlib its start-up needs),
# records the known chain and a Python chain inside, and prints one line per kernel:
#   5.10.0-32-cloud-amd64 x86_64 programs=ok chain=0.998 python=0.991 walker=tail-call
# followed by "  verifier PROGRAM insns=N time_us=N" lines. KVM where it works, else TCG.
# Kernels and the root are cached under build/kernel-matrix; a second run boots at once.
# aarch64: Debian 12's arm64 kernel under qemu-system-aarch64 (TCG), a root of arm64 files
# (build/arm64/stackscope from `make arm64`, the cross-built known chain, Debian's arm64
# busybox-static and python3.11 from their .debs; Go's wl_go cross-built; Debian 12's arm64
# perl, ruby3.1 and php8.2 from theirs, php8.2-opcache for PHP's JIT; Debian 12's arm64 node
# and openjdk-17-jre-headless, luajit), 6.1 only; its row has per-runtime columns (go=SHARE/SAMPLES
# perl=... ruby=... php=... php_jit=... php_jit_fn=... node=... java=... luajit=...; beam=... with
# Debian 12's arm64 erlang-base, erl_chain compiled by the runtime matrix's bookworm root's erlc).
# Usage: scripts/kernel_matrix.sh [ARCH]   (x86_64 or aarch64)
# Env: KM_SECS (workload seconds, default 2), KM_KERNELS ("5.10 6.1"; aarch64: "6.1"),
# KM_OUT (raw logs dir), KM_ACCEL (kvm or tcg; unset: KVM where a probe boot shows it works,
# else TCG), KM_NODE_JIT=1 (the arm64 row also records node with its default tiers: the
# node-jit= column; `make kernel-matrix` sets it, CI's test does not: 30-40 s of TCG),
# KM_JAVA_TINY=1 (the arm64 row's java-tiny= case too: `make kernel-matrix`, not CI),
# KM_TIMEOUT (seconds a TCG guest may take, default 240), KM_KVM_TIMEOUT (a KVM guest's, default
# 90): a guest without its result by then is booted once more under TCG (see the end).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:-x86_64}
CACHE=$ROOT/build/kernel-matrix
OUT=${KM_OUT:-$CACHE/logs/$ARCH}
SECS=${KM_SECS:-2}
KERNELS=${KM_KERNELS:-5.10 6.1}
CROSS_PREFIX=

case $ARCH in
x86_64)
	DEB_ARCH=amd64 FLAVOUR=cloud-amd64 QEMU=qemu-system-x86_64 CONSOLE=ttyS0
	QEMU_MACHINE=()
	;;
aarch64)
	# arm64 row: Debian's generic arm64 kernel (the cloud one lacks the virt board's
	# PL011 console) under TCG; pauth-impdef: QEMU's fast pointer-authentication hash
	DEB_ARCH=arm64 FLAVOUR=arm64 QEMU=qemu-system-aarch64 CONSOLE=ttyAMA0
	QEMU_MACHINE=(-M virt -cpu max,pauth-impdef=on)
	KERNELS=${KM_KERNELS:-6.1}
	ARM64_DEBS=$ROOT/build/arm64-debs CROSS_PREFIX=/usr/aarch64-linux-gnu
	;;
*)
	echo "kernel_matrix: unknown architecture '$ARCH' (x86_64 or aarch64)" >&2
	exit 2
	;;
esac
command -v "$QEMU" >/dev/null || {
	echo "kernel_matrix: $QEMU missing: run scripts/setup.sh" >&2
	exit 2
}
mkdir -p "$CACHE/$ARCH" "$OUT"

# kernel_package SERIES: the newest Debian linux-image-SERIES.*-FLAVOUR known to apt (the 5.10
# ones come from the bullseye suite scripts/setup.sh adds)
kernel_package()
{
	apt-cache show "linux-image-$FLAVOUR:$DEB_ARCH" 2>/dev/null | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' |
		grep "^linux-image-${1//./\\.}\.[0-9]" | sort -V | tail -1
}

# fetch_kernel SERIES: prints the cached vmlinuz of that series, downloading it once
fetch_kernel()
{
	local series=$1 pkg dir vmlinuz
	vmlinuz=$(ls "$CACHE/$ARCH"/vmlinuz-"$series".* 2>/dev/null | sort -V | tail -1 || true)
	if [[ -n $vmlinuz ]]; then
		echo "$vmlinuz"
		return
	fi
	pkg=$(kernel_package "$series")
	if [[ -z $pkg ]]; then
		echo "kernel_matrix: no linux-image-$series.*-$FLAVOUR in apt (scripts/setup.sh adds bullseye)" >&2
		return 1
	fi
	dir=$(mktemp -d "$CACHE/dl.XXXXXX")
	(cd "$dir" && apt-get download -q "$pkg:$DEB_ARCH" >/dev/null 2>&1) || {
		echo "kernel_matrix: apt-get download $pkg failed" >&2
		rm -rf "$dir"
		return 1
	}
	dpkg-deb --fsys-tarfile "$dir"/*.deb | tar -x -C "$dir" --wildcards './boot/vmlinuz-*'
	mv "$dir"/boot/vmlinuz-* "$CACHE/$ARCH/"
	rm -rf "$dir"
	ls "$CACHE/$ARCH"/vmlinuz-"$series".* | sort -V | tail -1
}

# libs_of FILE: the shared libraries FILE loads, with the loader (another architecture's:
# its loader run by qemu-user over the cross toolchain's libraries, then this host's
# multiarch ones, as ldd would)
libs_of()
{
	if [[ $ARCH == "$(uname -m)" ]]; then
		ldd "$1" 2>/dev/null | grep -o '/[^ ]*'
	else
		LD_TRACE_LOADED_OBJECTS=1 "qemu-$ARCH-static" -L "${LIB_PREFIX:-$CROSS_PREFIX}" "$1" 2>/dev/null |
			grep -o '/[^ ]*'
	fi
}

# copy_with_libs FILE...: FILE and the shared libraries it loads (with the loader), at their
# own paths under the staging root; LIB_PREFIX: a root of unpacked .debs looked in first
copy_with_libs()
{
	local f lib src
	for f in "$@"; do
		install -D -m 0755 "$f" "$STAGE$f"
		for lib in $(libs_of "$f"); do
			# this host's multiarch files first: the loader and libc must be one build
			# (the cross toolchain's ld.so with the multiarch libc.so.6 loops in
			# pthread_create); the cross prefix has what multiarch lacks (libstdc++)
			src=$lib
			[[ -n ${LIB_PREFIX:-} && -e $LIB_PREFIX$lib ]] && src=$LIB_PREFIX$lib
			[[ -e $src ]] || src=$CROSS_PREFIX$lib
			[[ -e $STAGE$lib ]] || install -D -m 0755 "$(readlink -f "$src")" "$STAGE$lib"
		done
	done
}

# arm64_inputs: the arm64 root's pieces from Debian's arm64 .debs (busybox-static,
# python3.11-minimal and the runtimes: scripts/arm64_files.sh unpacks those), downloaded once
arm64_inputs()
{
	local dir=$ARM64_DEBS/kernel
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" >/dev/null || return 1
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" runtimes >/dev/null || return 1
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" node >/dev/null || return 1
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" java >/dev/null || return 1
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" luajit >/dev/null || return 1
	"$ROOT/scripts/arm64_files.sh" "$ARM64_DEBS" beam >/dev/null || return 1
	mkdir -p "$dir"
	if [[ ! -x $dir/busybox/bin/busybox ]]; then
		(cd "$dir" && ls busybox-static_*_arm64.deb >/dev/null 2>&1 ||
			apt-get download -q -o APT::Sandbox::User=root busybox-static:arm64 >/dev/null) || return 1
		dpkg-deb -x "$dir"/busybox-static_*_arm64.deb "$dir/busybox"
	fi
}

# stage_arm64_runtimes: Debian 12's arm64 perl, ruby3.1 and php8.2 with their libraries and
# what each needs to start (perl-base's modules, Ruby's encoding tables), and their chains
stage_arm64_runtimes()
{
	local rt=$ARM64_DEBS/runtimes/root multi=usr/lib/aarch64-linux-gnu b d
	LIB_PREFIX=$rt copy_with_libs "$rt/usr/bin/perl" "$rt/usr/bin/ruby3.1" "$rt/usr/bin/php8.2"
	for b in perl ruby3.1 php8.2; do
		install -D -m 0755 "$rt/usr/bin/$b" "$STAGE/usr/bin/$b"
	done
	rm -rf "${STAGE:?}$rt"
	for d in "$multi/perl-base" "$multi/ruby/3.1.0/enc"; do
		mkdir -p "$STAGE/$(dirname "$d")"
		cp -r "$rt/$d" "$STAGE/$d"
	done
	cp "$ROOT"/tests/data/{perl_chain.pl,rb_chain.rb,php_chain.php} "$STAGE/usr/share/km/"
	# PHP 8.2's opcache (its JIT: the php_jit= columns), where php8.2 looks for extensions
	d=usr/lib/php/20220829
	install -D -m 0644 "$ARM64_DEBS/php-jit/root/$d/opcache.so" "$STAGE/$d/opcache.so"
}

# stage_arm64_node: Debian 12's arm64 node (Node 18: V8 10.2 in libnode108) with its libraries,
# and the JS known chain (tests/data/node_chain.js, as tests/system/test_node.sh runs it)
stage_arm64_node()
{
	local rt=$ARM64_DEBS/node/root
	LIB_PREFIX=$rt copy_with_libs "$rt/usr/bin/node"
	install -D -m 0755 "$rt/usr/bin/node" "$STAGE/usr/bin/node"
	rm -rf "${STAGE:?}$rt"
	# the JavaScript Debian's node loads at start-up from files of their own packages
	for f in acorn/dist/acorn.js acorn-walk/dist/walk.js cjs-module-lexer/lexer.js \
		cjs-module-lexer/dist/lexer.js undici/undici-fetch.js; do
		install -D -m 0644 "$rt/usr/share/nodejs/$f" "$STAGE/usr/share/nodejs/$f"
	done
	cp "$ROOT/tests/data/node_chain.js" "$STAGE/usr/share/km/"
}

# stage_arm64_java: Debian 12's arm64 OpenJDK 17 (its JVM tree copied with its files' times:
# the CDS archive checks lib/modules' size and time), the libraries libjvm.so loads, and
# JvmChain and JvmTiny compiled by this host's javac (class files are the same on every
# architecture)
stage_arm64_java()
{
	local jr=$ARM64_DEBS/java/root jvm=usr/lib/jvm/java-17-openjdk-arm64 multi=usr/lib/aarch64-linux-gnu l
	command -v javac >/dev/null || return 0
	LIB_PREFIX=$jr copy_with_libs "$jr/$jvm/bin/java"
	rm -rf "${STAGE:?}$jr"
	mkdir -p "$STAGE/usr/lib/jvm"
	cp -a "$jr/$jvm" "$STAGE/usr/lib/jvm/"
	rm -f "$STAGE/$jvm/lib/ct.sym" "$STAGE/$jvm/lib/server/classes_nocoops.jsa" # (javac's, -Xmx > 32g)
	# (dlopened by the launcher: not in the libraries bin/java loads)
	for l in libstdc++.so.6 libm.so.6 libgcc_s.so.1; do
		[[ -e $STAGE/$multi/$l ]] && continue
		if [[ -e $jr/$multi/$l ]]; then
			install -D -m 0755 "$(readlink -f "$jr/$multi/$l")" "$STAGE/$multi/$l"
		else
			install -D -m 0755 "$(readlink -f "/$multi/$l")" "$STAGE/$multi/$l"
		fi
	done
	javac --release 17 -d "$STAGE/usr/share/km" "$ROOT"/tests/data/{JvmChain,JvmTiny}.java
}

# stage_arm64_luajit: Debian 12's arm64 luajit (LuaJIT 2.1, the VM linked in), and the Lua
# known chain (tests/data/lua_chain.lua, as tests/system/test_luajit.sh runs it)
stage_arm64_luajit()
{
	local rt=$ARM64_DEBS/luajit/root
	LIB_PREFIX=$rt copy_with_libs "$rt/usr/bin/luajit"
	install -D -m 0755 "$rt/usr/bin/luajit" "$STAGE/usr/bin/luajit"
	rm -rf "${STAGE:?}$rt"
	cp "$ROOT/tests/data/lua_chain.lua" "$STAGE/usr/share/km/"
}

# stage_arm64_beam: Debian 12's arm64 OTP 25 (erlang-base's /usr/lib/erlang: beam.smp with the
# BEAMASM JIT, erl_child_setup it starts, the boot files and kernel/stdlib) with its libraries,
# and erl_chain.beam compiled by the runtime matrix's bookworm root's erlc (the same OTP 25.2.3;
# .beam files are the same on every architecture; no bookworm root: no beam case)
stage_arm64_beam()
{
	local br=$ARM64_DEBS/beam/root erts rr=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/bookworm
	local tmp id
	[[ -x $rr/usr/bin/erlc ]] || return 0
	tmp=$(mktemp -d "$rr/tmp/stackscope-km-beam.XXXXXX")
	chmod 755 "$tmp"
	cp "$ROOT/tests/data/erl_chain.erl" "$tmp/"
	id=$(printf 'stackscope-km-beam' | sha256sum | cut -c1-64)
	"$ROOT/scripts/in_container.sh" "$rr" "$id" erlc -o "${tmp#"$rr"}" "${tmp#"$rr"}/erl_chain.erl" >&2 || {
		rm -rf "$tmp"
		return 0
	}
	install -m 0644 "$tmp/erl_chain.beam" "$STAGE/usr/share/km/"
	rm -rf "$tmp"
	erts=$(cd "$br/usr/lib/erlang" && echo erts-*)
	LIB_PREFIX=$br copy_with_libs "$br/usr/lib/erlang/$erts/bin/beam.smp" \
		"$br/usr/lib/erlang/$erts/bin/erlexec" "$br/usr/lib/erlang/$erts/bin/erl_child_setup"
	rm -rf "${STAGE:?}$br"
	mkdir -p "$STAGE/usr/lib"
	cp -a "$br/usr/lib/erlang" "$STAGE/usr/lib/"
}

# build_root: the initramfs (rebuilt when stackscope, a fixture or the init script changed)
build_root()
{
	local img=$CACHE/$ARCH/root.cpio.gz
	local bin=${KM_STACKSCOPE:-$ROOT/stackscope} chain=$ROOT/build/fixtures/wl_chain_nofp
	local init=$ROOT/tests/kernel_matrix/guest_init.sh py=/usr/bin/python3.11 newer f
	local busybox=/bin/busybox pylib=/usr/lib/python3.11 goexe=
	if [[ $ARCH == aarch64 ]]; then
		# arm64: the arm64 build, the cross-built chain, Debian's arm64 busybox and python
		arm64_inputs || {
			echo "kernel_matrix: arm64 .debs not downloaded (scripts/arm64_files.sh)" >&2
			return 1
		}
		bin=${KM_STACKSCOPE:-$ROOT/build/arm64/stackscope} chain=$ROOT/build/fixtures/arm64_wl_chain_nofp
		py=$ARM64_DEBS/root/usr/bin/python3.11 busybox=$ARM64_DEBS/kernel/busybox/bin/busybox
		# the runtimes' columns (go=...): their workloads, where the fixtures have them
		goexe=$ROOT/build/fixtures/arm64_wl_go
	fi
	for f in "$bin" "$chain" "$py"; do
		[[ -x $f ]] || {
			echo "kernel_matrix: $f missing (make all fixtures$([[ $ARCH == aarch64 ]] && echo ' arm64'); scripts/setup.sh)" >&2
			return 1
		}
	done
	[[ -x $busybox ]] || {
		echo "kernel_matrix: $busybox missing: run scripts/setup.sh" >&2
		return 1
	}
	newer=$(find "$bin" "$chain" "$init" "$ROOT"/tests/data/{py_chain.py,py_many_code.py,perl_chain.pl,rb_chain.rb,php_chain.php,node_chain.js,JvmChain.java,JvmTiny.java,lua_chain.lua,erl_chain.erl} \
		"$0" $goexe -newer "$img" 2>/dev/null || echo all)
	if [[ -s $img && -z $newer ]]; then
		echo "$img"
		return
	fi
	STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
	mkdir -p "$STAGE"/{bin,proc,sys,dev,tmp,usr/bin,usr/share/km,sys/fs/bpf}
	install -m 0755 "$busybox" "$STAGE/bin/busybox"
	install -m 0755 "$init" "$STAGE/init"
	copy_with_libs "$py"
	if [[ $py != /usr/bin/python3.11 ]]; then
		install -D -m 0755 "$py" "$STAGE/usr/bin/python3.11"
		rm -f "$STAGE$py"
	fi
	install -D -m 0755 "$bin" "$STAGE/usr/bin/stackscope"
	copy_with_libs "$bin"
	rm -f "$STAGE$bin"
	[[ $bin == /usr/bin/stackscope ]] && install -m 0755 "$bin" "$STAGE/usr/bin/stackscope"
	install -m 0755 "$chain" "$STAGE/usr/bin/wl_chain_nofp"
	copy_with_libs "$STAGE/usr/bin/wl_chain_nofp" >/dev/null 2>&1 || true
	install -m 0644 "$ROOT/tests/data/py_chain.py" "$STAGE/usr/share/km/py_chain.py"
	install -m 0644 "$ROOT/tests/data/py_many_code.py" "$STAGE/usr/share/km/py_many_code.py"
	# Go: the static cross build of wl_go (GOARCH=arm64, tests/data/go.mk), no runtime package
	[[ -n $goexe && -x $goexe ]] && install -m 0755 "$goexe" "$STAGE/usr/bin/wl_go"
	[[ $ARCH == aarch64 ]] && stage_arm64_runtimes
	[[ $ARCH == aarch64 ]] && stage_arm64_node
	[[ $ARCH == aarch64 ]] && stage_arm64_java
	[[ $ARCH == aarch64 ]] && stage_arm64_luajit
	[[ $ARCH == aarch64 ]] && stage_arm64_beam
	# python3.11 -S: os.py is the landmark of its prefix, encodings the codecs it imports
	mkdir -p "$STAGE/usr/lib/python3.11"
	# (the same sources on every architecture)
	cp "$pylib/os.py" "$STAGE/usr/lib/python3.11/"
	cp -r "$pylib/encodings" "$STAGE/usr/lib/python3.11/"
	find "$STAGE/usr/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} +
	(cd "$STAGE" && find . | cpio -o -H newc --quiet | gzip -1) >"$img.tmp"
	mv "$img.tmp" "$img"
	rm -rf "$STAGE"
	echo "$img"
}

# boot SERIES VMLINUZ IMG ACCEL LIMIT: boots one kernel, its console into $OUT/SERIES.console,
# killed after LIMIT seconds (a hung guest then reports what its console got to). loglevel=5:
# the kernel's warnings and their backtraces (a soft lockup's, of every CPU) on the console,
# not its boot messages.
boot()
{
	local series=$1 vmlinuz=$2 img=$3 accel=(-accel tcg)
	[[ $4 == kvm ]] && accel=(-enable-kvm -cpu host)
	timeout "$5" "$QEMU" "${QEMU_MACHINE[@]}" "${accel[@]}" -smp 2 -m 1G \
		-nographic -no-reboot -kernel "$vmlinuz" -initrd "$img" \
		-append "console=$CONSOLE panic=-1 loglevel=5 softlockup_all_cpu_backtrace=1 km_secs=$SECS${KM_VERBOSE:+ km_verbose}${KM_NODE_JIT:+ km_node_jit}${KM_JAVA_TINY:+ km_java_tiny}" >"$OUT/$series.console" 2>&1 || true
}

# kvm_works VMLINUZ: whether a KVM guest boots that kernel to its end without a root file
# system (the panic at the root's mount, after which -no-reboot ends QEMU) within 20 s: 1-2 s
# when KVM works; TCG takes 2 s. Nested under some hypervisors (this box's Firecracker VM,
# some days) /dev/kvm opens but the guest hangs, right after the kernel's decompression or
# after its first lines, or QEMU aborts setting an MSR: TCG then.
kvm_works()
{
	local log=$OUT/kvm-probe.console
	[[ -w /dev/kvm && $ARCH == "$(uname -m)" ]] || return 1
	# (in the background: the shell's "Aborted" line of a QEMU that aborts goes nowhere)
	timeout 20 "$QEMU" "${QEMU_MACHINE[@]}" -enable-kvm -cpu host -smp 1 -m 256M -nographic \
		-no-reboot -kernel "$1" -append "console=$CONSOLE panic=-1" >"$log" 2>&1 &
	wait $! 2>/dev/null
	grep -q 'Kernel panic' "$log"
}

# report SERIES: the line of one kernel, parsed from its console (and from the console of a first
# boot that gave no result, a "first boot" line)
report()
{
	local first=$OUT/$1.first.console r=0
	python3 "$ROOT/tests/kernel_matrix/parse_console.py" "$ARCH" "$OUT/$1.console" || r=1
	if [[ -f $first ]]; then
		python3 "$ROOT/tests/kernel_matrix/parse_console.py" "$ARCH" "$first" | sed 's/^/  first boot: /'
	fi
	return $r
}

img=$(build_root) || exit 2
declare -A vm
for series in $KERNELS; do
	vm[$series]=$(fetch_kernel "$series")
done
ACCEL=${KM_ACCEL:-}
if [[ -z $ACCEL ]]; then
	ACCEL=tcg
	first=${KERNELS%% *}
	kvm_works "${vm[$first]}" && ACCEL=kvm
fi
echo "kernel_matrix: $ARCH guests under ${ACCEL^^}" >&2
# A guest that gave no result in its time is booted once more, under TCG, its first console
# kept as SERIES.first.console and summed up in its row's "first boot" line: a KVM that passed
# the probe and hangs later (a KVM guest takes 20-40 s), and a TCG guest that hung (5.10 once
# in 23 boots on this box, both vCPUs in soft lockups) must not cost the matrix its row
# without showing it.
limit=${KM_TIMEOUT:-240}
[[ $ACCEL == kvm ]] && limit=${KM_KVM_TIMEOUT:-90}
for series in $KERNELS; do
	boot "$series" "${vm[$series]}" "$img" "$ACCEL" "$limit" &
done
wait
again=()
for series in $KERNELS; do
	grep -q KM-END "$OUT/$series.console" && continue
	echo "kernel_matrix: $series gave no result under ${ACCEL^^} in $limit s: booted once more under TCG" >&2
	mv "$OUT/$series.console" "$OUT/$series.first.console"
	again+=("$series")
done
for series in "${again[@]}"; do
	boot "$series" "${vm[$series]}" "$img" tcg "${KM_TIMEOUT:-240}" &
done
wait
rc=0
for series in $KERNELS; do
	report "$series" || rc=1
done
exit $rc
