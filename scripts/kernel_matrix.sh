#!/bin/bash
# The kernel matrix (docs/ARCHITECTURE.md "Kernel matrix"): boots Debian's own kernels in QEMU
# with a small initramfs built from this host's files (busybox-static, stackscope and its
# libraries, the known-chain fixture, Debian's python3.11 with the stdlib its start-up needs),
# records the known chain and a Python chain inside, and prints one line per kernel:
#   5.10.0-32-cloud-amd64 x86_64 programs=ok chain=0.998 python=0.991 walker=tail-call
# followed by "  verifier PROGRAM insns=N time_us=N" lines. TCG (KVM with KM_ACCEL=kvm).
# Kernels and the root are cached under build/kernel-matrix; a second run boots at once.
# Usage: scripts/kernel_matrix.sh [ARCH]   (x86_64; aarch64 is the hook for the arm64 row)
# Env: KM_SECS (workload seconds, default 2), KM_KERNELS ("5.10 6.1"), KM_OUT (raw logs dir),
# KM_ACCEL (tcg, or kvm).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:-x86_64}
CACHE=$ROOT/build/kernel-matrix
OUT=${KM_OUT:-$CACHE/logs/$ARCH}
SECS=${KM_SECS:-2}
KERNELS=${KM_KERNELS:-5.10 6.1}

case $ARCH in
x86_64)
	DEB_ARCH=amd64 FLAVOUR=cloud-amd64 QEMU=qemu-system-x86_64 CONSOLE=ttyS0
	QEMU_MACHINE=()
	;;
aarch64)
	# arm64 row: Debian's arm64 kernel under TCG. Needs an arm64 stackscope build
	# (KM_STACKSCOPE) and arm64 libraries in the root: the arm64 port provides them.
	DEB_ARCH=arm64 FLAVOUR=cloud-arm64 QEMU=qemu-system-aarch64 CONSOLE=ttyAMA0
	QEMU_MACHINE=(-M virt -cpu max)
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
	apt-cache show "linux-image-$FLAVOUR" 2>/dev/null | sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' |
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

# copy_with_libs FILE...: FILE and the shared libraries it loads (with the loader), at their
# own paths under the staging root
copy_with_libs()
{
	local f lib
	for f in "$@"; do
		install -D -m 0755 "$f" "$STAGE$f"
		for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
			[[ -e $STAGE$lib ]] || install -D -m 0755 "$(readlink -f "$lib")" "$STAGE$lib"
		done
	done
}

# build_root: the initramfs (rebuilt when stackscope, a fixture or the init script changed)
build_root()
{
	local img=$CACHE/$ARCH/root.cpio.gz
	local bin=${KM_STACKSCOPE:-$ROOT/stackscope} chain=$ROOT/build/fixtures/wl_chain_nofp
	local init=$ROOT/tests/kernel_matrix/guest_init.sh py=/usr/bin/python3.11 newer f
	# another architecture's root needs its own stackscope, fixtures, busybox and python
	# (the arm64 port's task): refuse rather than boot a root that cannot run
	if [[ $ARCH != "$(uname -m)" ]]; then
		echo "kernel_matrix: no $ARCH root yet: it needs an $ARCH stackscope (KM_STACKSCOPE)," \
			"fixtures and $DEB_ARCH libraries" >&2
		return 1
	fi
	for f in "$bin" "$chain" "$py"; do
		[[ -x $f ]] || {
			echo "kernel_matrix: $f missing (make all fixtures; scripts/setup.sh)" >&2
			return 1
		}
	done
	[[ -x /bin/busybox ]] || {
		echo "kernel_matrix: /bin/busybox missing: run scripts/setup.sh" >&2
		return 1
	}
	newer=$(find "$bin" "$chain" "$init" "$ROOT/tests/data/py_chain.py" "$0" -newer "$img" 2>/dev/null || echo all)
	if [[ -s $img && -z $newer ]]; then
		echo "$img"
		return
	fi
	STAGE=$(mktemp -d "$CACHE/stage.XXXXXX")
	mkdir -p "$STAGE"/{bin,proc,sys,dev,tmp,usr/bin,usr/share/km,sys/fs/bpf}
	install -m 0755 /bin/busybox "$STAGE/bin/busybox"
	install -m 0755 "$init" "$STAGE/init"
	copy_with_libs "$py"
	install -D -m 0755 "$bin" "$STAGE/usr/bin/stackscope"
	copy_with_libs "$bin"
	rm -f "$STAGE$bin"
	[[ $bin == /usr/bin/stackscope ]] && install -m 0755 "$bin" "$STAGE/usr/bin/stackscope"
	install -m 0755 "$chain" "$STAGE/usr/bin/wl_chain_nofp"
	copy_with_libs "$STAGE/usr/bin/wl_chain_nofp" >/dev/null 2>&1 || true
	install -m 0644 "$ROOT/tests/data/py_chain.py" "$STAGE/usr/share/km/py_chain.py"
	# python3.11 -S: os.py is the landmark of its prefix, encodings the codecs it imports
	mkdir -p "$STAGE/usr/lib/python3.11"
	cp /usr/lib/python3.11/os.py "$STAGE/usr/lib/python3.11/"
	cp -r /usr/lib/python3.11/encodings "$STAGE/usr/lib/python3.11/"
	find "$STAGE/usr/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} +
	(cd "$STAGE" && find . | cpio -o -H newc --quiet | gzip -1) >"$img.tmp"
	mv "$img.tmp" "$img"
	rm -rf "$STAGE"
	echo "$img"
}

# boot SERIES VMLINUZ IMG: boots one kernel, its console into $OUT/SERIES.console
boot()
{
	local series=$1 vmlinuz=$2 img=$3 accel=(-accel tcg)
	# KVM only when asked (KM_ACCEL=kvm): nested under this box's Firecracker VM, its guests
	# hang right after the kernel's decompression (no console output at all); TCG boots them
	[[ ${KM_ACCEL:-tcg} == kvm && -w /dev/kvm && $ARCH == "$(uname -m)" ]] && accel=(-enable-kvm -cpu host)
	timeout "${KM_TIMEOUT:-240}" "$QEMU" "${QEMU_MACHINE[@]}" "${accel[@]}" -smp 2 -m 1G \
		-nographic -no-reboot -kernel "$vmlinuz" -initrd "$img" \
		-append "console=$CONSOLE panic=-1 quiet km_secs=$SECS${KM_VERBOSE:+ km_verbose}" >"$OUT/$series.console" 2>&1 || true
}

# report SERIES: the line of one kernel, parsed from its console
report()
{
	python3 "$ROOT/tests/kernel_matrix/parse_console.py" "$ARCH" "$OUT/$1.console"
}

img=$(build_root) || exit 2
declare -A vm
for series in $KERNELS; do
	vm[$series]=$(fetch_kernel "$series")
done
for series in $KERNELS; do
	boot "$series" "${vm[$series]}" "$img" &
done
wait
rc=0
for series in $KERNELS; do
	report "$series" || rc=1
done
exit $rc
