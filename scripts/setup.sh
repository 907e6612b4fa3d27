#!/bin/bash
# Installs everything stackscope needs to build, test and benchmark on Debian 12, from
# Debian's own packages, and makes the kernel interfaces it uses available. Idempotent.
# Usage: sudo scripts/setup.sh
set -euo pipefail

if [[ $(id -u) -ne 0 ]]; then
	echo "setup.sh: run as root (it installs packages)" >&2
	exit 1
fi

packages=(
	# build
	make gcc g++ clang llvm pkg-config libbpf-dev bpftool libelf-dev zlib1g-dev
	# make format, make format-check (part of make check)
	clang-format
	# OTLP export: SHA-256 for the htlhash file id (libcurl4-openssl-dev below: transport)
	libssl-dev
	libdw-dev libdebuginfod-dev liblzma-dev libcurl4-openssl-dev
	# Rust demangling (libiberty's, as c++filt; a static archive)
	libiberty-dev
	# the embedded profile store (src/store/)
	libsqlite3-dev
	# the OTLP/gRPC receiver's HTTP/2 (src/serve/grpc_listener.c)
	libnghttp2-dev
	# symbols the tests and users rely on: Debian's libc debug file, a debuginfod server
	libc6-dbg debuginfod
	# tests: independent readers and tools
	golang-go binutils elfutils protobuf-compiler python3 libxml2-utils
	# test_ruby.sh: Debian's CRuby 3.1 (libruby-3.1.so)
	ruby ruby3.1
	# test_lang.sh: a chain linked by lld (text at p_vaddr != p_offset, as rustc links)
	lld
	# the fuzz targets (clang -fsanitize=fuzzer)
	libclang-rt-14-dev
	# the h2c gRPC receiver in tests/unit/test_otlp_client.c
	python3-h2
	# PHP frames (tests/system/test_php.sh, test_php_jit.sh): the CLI, FPM, opcache, a FastCGI client
	php8.2-cli php8.2-fpm php8.2-opcache libfcgi-bin
	# Perl frames (tests/system/test_perl.sh): Perl 5.36 with its standard modules
	perl
	curl xz-utils
	# test_privileges.sh: systemd-analyze (the unit's exposure), setpriv (reduced capabilities)
	systemd util-linux
	# test_jvm.sh: a HotSpot JVM and javac (Temurin 25, the second JVM, is not a Debian package)
	openjdk-17-jdk-headless
	# test_node.sh, bench/node.sh: Node.js (this box has NodeSource's 20, the version walked
	# and tested; a fresh box gets Debian's 18, V8 10.2: not measured yet)
	nodejs
	# test_alloc_allocators.sh: jemalloc and tcmalloc, preloaded (record --alloc finds them);
	# bench/alloc.sh's peers: heaptrack (LD_PRELOAD) and bcc's memleak (uprobes)
	libjemalloc2 libtcmalloc-minimal4 heaptrack bpfcc-tools
	# benchmarks: the peers we measure against
	linux-perf bpftrace bc austin libdevel-nytprof-perl
	# the kernel matrix (scripts/kernel_matrix.sh): QEMU, the guest's shell, its initramfs
	qemu-system-x86 busybox-static cpio
	# bench/offcpu.sh: bcc's CO-RE offcputime (bpfcc-tools' Python one needs kernel headers)
	libbpf-tools
	# the runtime matrix (scripts/runtime_root.sh): Debian roots of other suites
	debootstrap
	# test_top.sh: `stackscope top` driven in a terminal
	tmux
	# test_serve.sh: the web UI in a real headless browser; xxd embeds the UI's files
	chromium chromium-driver python3-selenium xxd
	# test_otlp_tls.sh: the CA and certificates it makes
	openssl
)

# The kernel matrix boots Debian 11's linux-image-5.10 (apt-get download): the bullseye suite,
# added explicitly here (its packages are older than bookworm's: nothing else comes from it).
BULLSEYE=/etc/apt/sources.list.d/stackscope-bullseye.sources
if [[ ! -e $BULLSEYE ]]; then
	cat >"$BULLSEYE" <<-'EOF'
		# stackscope's kernel matrix (scripts/setup.sh): Debian 11's linux-image-5.10 for QEMU
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: bullseye
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	apt-get update -qq
fi
# ... and pinned low: its kernels can be downloaded by name, nothing is ever installed or
# upgraded from it unasked
BULLSEYE_PIN=/etc/apt/preferences.d/stackscope-bullseye
if [[ ! -e $BULLSEYE_PIN ]]; then
	printf '%s\n' '# stackscope (scripts/setup.sh): bullseye only for the kernel matrix' \
		'Package: *' 'Pin: release n=bullseye' 'Pin-Priority: 1' >"$BULLSEYE_PIN"
fi
# arm64 (issue 19): `make arm64` cross-builds with Debian's cross toolchain and multiarch
# :arm64 libraries; qemu-user runs the arm64 fixtures; the unit tests build unwind tables from
# Debian's arm64 ELF files (scripts/arm64_files.sh, below); qemu-system-arm boots Debian's
# arm64 kernel for the kernel matrix's arm64 row (scripts/kernel_matrix.sh aarch64), whose
# python3.11 (Debian's arm64 one) loads libexpat
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	dpkg --add-architecture arm64
	apt-get update -qq
fi
packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross qemu-user-static
	qemu-system-arm libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libssl-dev:arm64 libdw-dev:arm64
	libdebuginfod-dev:arm64 liblzma-dev:arm64 libcurl4-openssl-dev:arm64 libiberty-dev:arm64
	libsqlite3-dev:arm64 libnghttp2-dev:arm64 libexpat1:arm64)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup.sh: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tracefs (bpftrace and perf use it; stackscope's tracepoints go through BTF, not tracefs).
if [[ -d /sys/kernel/tracing ]] && ! mountpoint -q /sys/kernel/tracing; then
	mount -t tracefs nodev /sys/kernel/tracing || echo "setup.sh: warning: cannot mount tracefs" >&2
fi

if [[ ! -r /sys/kernel/btf/vmlinux ]]; then
	echo "setup.sh: this kernel has no BTF (/sys/kernel/btf/vmlinux): stackscope needs it" >&2
	exit 1
fi
scripts_dir=$(cd "$(dirname "$0")" && pwd)
"$scripts_dir/arm64_files.sh" "$scripts_dir/../build/arm64-debs"
# (and the runtimes' root: test_php_jit_arm64 reads Debian's arm64 php8.2)
"$scripts_dir/arm64_files.sh" "$scripts_dir/../build/arm64-debs" runtimes >/dev/null
# (and Debian's arm64 luajit: test_luajit_arm64 detects its VM in the real file)
"$scripts_dir/arm64_files.sh" "$scripts_dir/../build/arm64-debs" luajit >/dev/null
# test_node.sh's Maglev and Node 22 cases: the npm registry's Node 24 (V8 13.6, Maglev on)
# and Node 22 (V8 12.4), fetched once into scripts/node_npm.sh's cache (through npm, which
# nodejs above ships), then used offline
for major in 24 22; do
	"$scripts_dir/node_npm.sh" "$major" >/dev/null
done
# test_collector.sh, test_otlp_tls.sh: an OpenTelemetry Collector built from its Go modules
# at pinned versions (the machine's Go >= 1.26 and the Go module proxy), once, then cached
"$scripts_dir/collector.sh" >/dev/null
# test_k8s.sh: the offline validator of dist/kubernetes/ (the Kubernetes API's Go modules)
"$scripts_dir/k8s_validator.sh" >/dev/null
echo "setup.sh: ready"
