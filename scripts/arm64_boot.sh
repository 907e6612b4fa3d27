#!/bin/bash
# A manual check (the checked one is the kernel matrix's arm64 row, scripts/kernel_matrix.sh
# aarch64, tests/system/test_kernel_matrix_arm64.sh): boot Debian 12's arm64
# kernel under qemu-system-aarch64 (TCG, ~20 s to a shell) with an initramfs holding busybox,
# build/arm64/stackscope with its arm64 libraries and the arm64_chain fixture spinning in its
# known chain, run `stackscope record` there and print its result and the fixture's stacks.
# Needs `make arm64`, `make fixtures`, qemu-system-arm and busybox-static:arm64 (downloaded).
# Usage: [SS_ENV='STACKSCOPE_TAIL_CALLS=1'] scripts/arm64_boot.sh [WORKDIR]
# (default build/arm64-boot; SS_ENV: variables for the record run)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-build/arm64-boot}
files=build/arm64-debs
ir=$work/initramfs
scripts/arm64_files.sh "$files" kernel
rm -rf "$ir" && mkdir -p "$ir"/{bin,proc,sys,tmp,dev,lib}
(cd "$files/kernel" && ls busybox-static_*_arm64.deb >/dev/null 2>&1 ||
	apt-get download -q -o APT::Sandbox::User=root busybox-static:arm64 >/dev/null)
dpkg-deb -x "$files"/kernel/busybox-static_*_arm64.deb "$work/bb"
cp "$work/bb/bin/busybox" "$ir/bin/"
cp build/arm64/stackscope build/fixtures/arm64_chain "$ir/"
# the libraries, where the arm64 loader looks for them (qemu-user lists them); the host's
# multiarch ones first: its libc.so.6 with the cross toolchain's ld.so loops in pthread_create
LD_TRACE_LOADED_OBJECTS=1 qemu-aarch64-static -L /usr/aarch64-linux-gnu build/arm64/stackscope |
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' | while read -r p; do
	src=$p
	[[ -e $src ]] || src=/usr/aarch64-linux-gnu$p
	mkdir -p "$ir$(dirname "$p")"
	cp -L "$src" "$ir$p"
done
cat >"$ir/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
echo "arm64-boot: kernel $(uname -r) $(uname -m)"
/arm64_chain - 40 &
sleep 1
env $SS_ENV /stackscope record -d 5 -F 199 -o /tmp/out.folded >/tmp/log 2>&1
echo "arm64-boot: record exit $?"
grep -v "^stackscope: debug" /tmp/log | cut -c1-300 | tail -20
grep arm64_chain /tmp/out.folded 2>/dev/null | sort -k2 -n -r | head -10
poweroff -f
INIT
sed -i "s|\$SS_ENV|${SS_ENV:-}|" "$ir/init"
chmod +x "$ir/init"
(cd "$ir" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"
timeout 600 qemu-system-aarch64 -M virt -cpu max -smp 1 -m 1024 -nographic -no-reboot \
	-kernel "$(ls "$files"/kernel/boot/vmlinuz-*)" -initrd "$work/initrd.gz" \
	-append "console=ttyAMA0 rdinit=/init quiet" | tee "$work/console.log" | grep -a "^arm64-boot\|^stackscope\|arm64_chain"
