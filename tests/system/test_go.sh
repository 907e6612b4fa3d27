#!/bin/bash
# Go programs, stripped (-ldflags='-s -w': no .symtab, no DWARF, no .eh_frame): names, files,
# lines and inlined calls from .gopclntab, unwinding from its stack deltas (pcsp).
#  - wl_go: main.main -> main.alpha -> main.beta -> main.gamma, a frameless leaf (the frame-
#    pointer walk loses main.beta under it) with main.churn inlined into it: exact chain and
#    lines, the inlined frame, and every sample of the chain complete;
#  - wl_go_cgo: Go -> cgo -> C (c_outer -> c_inner) and back: the C frames under the Go
#    caller, runtime.cgocall (at its entersyscall call, where it saved the goroutine's pc and
#    sp) and runtime.asmcgocall (which moved to the thread's stack) between them;
#  - wl_go_labels: two goroutines under pprof.Do with labels route/worker, one without: each
#    sample of main.work carries its goroutine's two labels (pprof labels, folded annotations),
#    main.unlabeled's carry none;
#  - wl_go_g0: samples on g0's stack go on into the goroutine that switched there: under
#    runtime.morestack the main.deep chain that grew its stack, under runtime.systemstack the GC
#    mark worker, both down to runtime.goexit (the frame-pointer/pcsp walk alone stops at the
#    switch);
#  - esbuild from npm (a Go 1.26 binary nobody here built, when `make fixtures` could fetch
#    it) bundling a generated project of 2000 modules: Go frames with files and lines;
#  - the Go of each runtime matrix root (1.15, 1.24, 1.27 beside the fixtures' 1.19) and the
#    host's newer `go` (1.26): test_gopclntab on their builds of wl_go, their wl_go_labels'
#    labels, their wl_go_cgo's chain into C.
# Lines come from the workload sources' markers (// NAME).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
# the Go that built the fixtures (tests/data/go.mk): Debian's when present
GO=${GO:-$( [[ -x /usr/lib/go/bin/go ]] && echo /usr/lib/go/bin/go || command -v go)}
DATA=$SS_ROOT/tests/data
STACKS+=" --native-lines"
STACKS_COMM=1 # record_stacks: "comm;func@file:line;... count", root first

if [[ ! -x $FIX/wl_go ]]; then
	skip_setup "wl_go: go (golang-go) not found when the fixtures were built"
	finish
fi

G=wl_go\\.go
marks "$DATA/wl_go.go" L_MAIN=MAIN_CALLS_ALPHA L_ALPHA=ALPHA_CALLS_BETA L_BETA=BETA_CALLS_GAMMA \
	L_GAMMA=GAMMA_LOOP L_CALL=GAMMA_CALLS_CHURN L_CHURN=CHURN_LOOP

# 499 Hz for 2 s: ~1000 samples on an idle box; a tenth of a CPU on a loaded one (load 14 on
# the 2 cores, measured) still gives 200: the counts ask for 100.
record_stacks wl_go "$FIX/wl_go" 2
f=$TMP/wl_go.stacks
total=$(samples "$f" wl_go)
check_ge "wl_go: samples" "$total" 100
# (the vDSO's internal functions have no symbol: "[vdso]+0x79d" is not Go's)
check_eq "wl_go: samples with an unnamed frame of wl_go (named from .gopclntab)" \
	"$(samples "$f" wl_go ';wl_go\+0x[0-9a-f]+(;|$)')" 0 || grep ';wl_go+0x' "$f" | head -3
ROOT="runtime\\.goexit@asm_amd64\\.s:[0-9]+;runtime\\.main@proc\\.go:[0-9]+"
CHAIN="$ROOT;main\\.main@$G:$L_MAIN;main\\.alpha@$G:$L_ALPHA;main\\.beta@$G:$L_BETA"
# the for statement (line - 1) or its body
in_gamma=$(samples "$f" wl_go ';main\.gamma@')
gamma=$(samples "$f" wl_go "^wl_go;$CHAIN;main\\.gamma@$G:($((L_GAMMA - 1))|$L_GAMMA)(;[^@]*)*\$")
churn=$(samples "$f" wl_go \
	"^wl_go;$CHAIN;main\\.gamma@$G:$L_CALL;main\\.churn@$G:($((L_CHURN - 1))|$L_CHURN)(;[^@]*)*\$")
whole=$(samples "$f" wl_go "^wl_go;$CHAIN;main\\.gamma@")
check_pct "wl_go: samples in main.gamma (with main.churn inlined)" "$in_gamma" "$total" 80 ||
	show_stacks "$f"
check_pct "wl_go: goexit;runtime.main;main.main:$L_MAIN;alpha:$L_ALPHA;beta:$L_BETA;gamma:$L_GAMMA (exact)" \
	"$gamma" "$in_gamma" 25 || show_stacks "$f"
check_pct "wl_go: ...;gamma:$L_CALL;churn:$L_CHURN (the inlined call as its own frame)" \
	"$churn" "$in_gamma" 25 || show_stacks "$f"
# completeness: every sample in the chain's leaf has every caller, main.beta included
if [[ $((whole * 1000)) -ge $((in_gamma * 995)) && $in_gamma -gt 0 ]]; then
	ok "wl_go: samples in main.gamma complete from runtime.goexit ($whole/$in_gamma >= 99.5%)"
else
	fail "wl_go: samples in main.gamma complete from runtime.goexit ($whole/$in_gamma < 99.5%)"
	grep ';main\.gamma@' "$f" | grep -Ev "^wl_go;$CHAIN;main\\.gamma@" | head -3 | cut -c1-400
fi

if [[ -x $FIX/wl_go_cgo ]]; then
	record_stacks wl_go_cgo "$FIX/wl_go_cgo" 2
	f=$TMP/wl_go_cgo.stacks
	L_CGO=$(line "$DATA/wl_go_cgo.go" CGO_CALL)
	# runtime.cgocall at its call of entersyscall (where it saved the goroutine's pc and sp)
	L_ENTERSYSCALL=$(grep -n '^	entersyscall()$' "$("$GO" env GOROOT 2>/dev/null)/src/runtime/cgocall.go" |
		head -1 | cut -d: -f1)
	L_ENTERSYSCALL=${L_ENTERSYSCALL:-[0-9]+}
	total=$(samples "$f" wl_go_cgo)
	check_ge "wl_go_cgo: samples" "$total" 100
	in_c=$(samples "$f" wl_go_cgo ';c_outer(@[^;]*)?;c_inner(@[^;]*)?(;[^@]*)*$')
	whole=$(samples "$f" wl_go_cgo \
		"^wl_go_cgo;$ROOT;main\\.main@[^;]*;main\\.cgoLoop@wl_go_cgo\\.go:$L_CGO;main\\._Cfunc_c_outer@[^;]*;runtime\\.cgocall@cgocall\\.go:$L_ENTERSYSCALL;runtime\\.asmcgocall@[^;]*;_cgo_[^;]*;c_outer;c_inner(;[^@]*)*\$")
	check_pct "wl_go_cgo: samples in C (c_outer;c_inner)" "$in_c" "$total" 70 ||
		show_stacks "$f"
	check_pct "wl_go_cgo: of those, whole: cgoLoop:$L_CGO;_Cfunc_c_outer;cgocall:$L_ENTERSYSCALL;asmcgocall;C" \
		"$whole" "$in_c" 95 || show_stacks "$f"
else
	skip_setup "wl_go_cgo: not built (go or gcc missing when the fixtures were built)"
fi

# (regexes: "[[]" and "[]]" are literal brackets, "[.]" a literal dot)
LB='[[]label: ' RB='[]]'
FAST="${LB}route=/api/fast${RB};${LB}worker=1${RB}"
SLOW="${LB}route=/api/slow${RB};${LB}worker=2${RB}"
GL='wl_go_labels[.]go'
L_WORK=$(line "$DATA/wl_go_labels.go" WORK_LOOP)

# check_labels WHAT BINARY: a recording of wl_go_labels (BINARY) whose main.work samples carry
# their goroutine's labels, main.unlabeled's none. Leaves the recording in $TMP/WHAT.pb.gz.
check_labels()
{
	local what=$1 bin=$2 f=$TMP/$1.stacks fast slow exact in_work in_unl
	local work="runtime[.]goexit@[^;]*;([^;]*;)*main[.]work@$GL:[0-9]+(;|\$)"

	record "$TMP/$what.err" -F $HZ -o "$TMP/$what.pb.gz" -o "$TMP/$what.folded" -- \
		"$bin" 2 >/dev/null
	check_eq "$what: exit status" $? 0
	$STACKS --comm --labels "$TMP/$what.pb.gz" >"$f"
	in_work=$(samples "$f" wl_go_labels ';main[.]work@')
	check_ge "$what: samples in main.work" "$in_work" 100
	fast=$(samples "$f" wl_go_labels "^wl_go_labels;$FAST;$work")
	slow=$(samples "$f" wl_go_labels "^wl_go_labels;$SLOW;$work")
	check_pct "$what: main.work samples with their goroutine's labels (fast or slow)" \
		"$((fast + slow))" "$in_work" 99 || grep 'main\.work@' "$f" | head -3 | cut -c1-300
	# both goroutines burn the same loop: each gets a fair share, whatever the box's load
	check_pct "$what: route=/api/fast of them" "$fast" "$in_work" 20
	check_pct "$what: route=/api/slow of them" "$slow" "$in_work" 20
	exact=$(samples "$f" wl_go_labels \
		"^wl_go_labels;($FAST|$SLOW);runtime[.]goexit@[^;]*;([^;]*;)*main[.]work@$GL:($((L_WORK - 1))|$L_WORK)\$")
	check_pct "$what: [labels];goexit;...;main.work:$L_WORK (the loop's line)" \
		"$exact" "$in_work" 50
	in_unl=$(samples "$f" wl_go_labels ';main[.]unlabeled@')
	check_ge "$what: samples in main.unlabeled" "$in_unl" 50
	check_eq "$what: main.unlabeled samples with labels" \
		"$(samples "$f" wl_go_labels "$LB[^;]*;([^;]*;)*main[.]unlabeled@")" 0
}

if [[ -x $FIX/wl_go_labels ]]; then
	check_labels wl_go_labels "$FIX/wl_go_labels"
	# the folded output (of the same recording) carries the same annotations
	f=$TMP/wl_go_labels.folded
	in_work=$(samples "$f" wl_go_labels ';main[.]work(;|$)')
	labeled=$(samples "$f" wl_go_labels \
		"^wl_go_labels;($FAST|$SLOW);runtime[.]goexit;([^;]*;)*main[.]work(;|\$)")
	check_pct "wl_go_labels (folded): main.work samples starting [label: route=...];[label: worker=...]" \
		"$labeled" "$in_work" 99 || grep 'main\.work' "$f" | head -3 | cut -c1-300
	# a PIE reads g's TLS slot through another instruction form: the same labels
	if [[ -x $FIX/wl_go_labels.pie ]]; then
		record "$TMP/wl_go_labels_pie.err" -F $HZ -o "$TMP/wl_go_labels_pie.folded" -- \
			"$FIX/wl_go_labels.pie" 1 >/dev/null
		f=$TMP/wl_go_labels_pie.folded
		in_work=$(samples "$f" wl_go_labels.pi ';main[.]work(;|$)')
		labeled=$(samples "$f" wl_go_labels.pi \
			"^wl_go_labels[.]pi;($FAST|$SLOW);runtime[.]goexit;([^;]*;)*main[.]work(;|\$)")
		check_ge "wl_go_labels.pie: samples in main.work" "$in_work" 50
		check_pct "wl_go_labels.pie: main.work samples with their labels" "$labeled" "$in_work" 99 ||
			grep 'main\.work' "$f" | head -3 | cut -c1-300
	else
		skip_setup "wl_go_labels.pie: not built"
	fi
else
	skip_setup "wl_go_labels: not built (go missing when the fixtures were built)"
fi

if [[ -x $FIX/wl_go_g0 ]]; then
	record_stacks wl_go_g0 "$FIX/wl_go_g0" 1.5
	f=$TMP/wl_go_g0.stacks
	G0='wl_go_g0[.]go'
	marks "$DATA/wl_go_g0.go" L_DEEP=DEEP_CALLS_DEEP L_GO=GROW_GO
	in_newstack=$(samples "$f" wl_go_g0 ';runtime[.]morestack@[^;]*;runtime[.]newstack@')
	check_ge "wl_go_g0: samples in runtime.newstack (on g0 under morestack)" "$in_newstack" 30
	# the goroutine's callers, down to its root (a few are preemptions through morestack in
	# other functions, and a rare one ran the scheduler after the goroutine was dropped).
	# Preemptions that went on into the scheduler (gopreempt_m, preemptPark) run on g0 for
	# no goroutine any more (Go's own profiles show them without one): not counted.
	PREEMPT=';runtime[.]newstack@[^;]*;runtime[.](gopreempt_m|preemptPark)@'
	preempted=$(samples "$f" wl_go_g0 "$PREEMPT")
	whole=$(samples "$f" wl_go_g0 \
		'^wl_go_g0;runtime[.]goexit@[^;]*;([^;]*;)*runtime[.]morestack@[^;]*;runtime[.]newstack@')
	whole_pre=$(samples "$f" wl_go_g0 \
		"^wl_go_g0;runtime[.]goexit@[^;]*;([^;]*;)*runtime[.]morestack@[^;]*$PREEMPT")
	check_pct "wl_go_g0: of those not in the scheduler after a preemption, complete from runtime.goexit" \
		$((whole - whole_pre)) $((in_newstack - preempted)) 90 ||
		grep 'runtime\.newstack@' "$f" | grep -v '^wl_go_g0;runtime\.goexit' | head -3 | cut -c1-400
	# deep calling deep at its line, the one that grew its stack at its entry line
	deep=$(samples "$f" wl_go_g0 \
		"^wl_go_g0;runtime[.]goexit@[^;]*;main[.]grow[.]func1@$G0:$L_GO;(main[.]deep@$G0:$L_DEEP;)+main[.]deep@$G0:[0-9]+;runtime[.]morestack@[^;]*;runtime[.]newstack@")
	check_pct "wl_go_g0: of those, goexit;grow.func1:$L_GO;deep:$L_DEEP...;deep;morestack;newstack" \
		"$deep" "$in_newstack" 75 || grep 'runtime\.newstack@' "$f" | head -3 | cut -c1-400
	in_mark=$(samples "$f" wl_go_g0 \
		';runtime[.]systemstack@[^;]*;runtime[.]gcBgMarkWorker[.]func[0-9]+@')
	check_ge "wl_go_g0: samples of the GC mark worker on g0 (under systemstack)" "$in_mark" 10
	whole=$(samples "$f" wl_go_g0 \
		'^wl_go_g0;runtime[.]goexit@[^;]*;runtime[.]gcBgMarkWorker@[^;]*;runtime[.]systemstack_switch@[^;]*;runtime[.]systemstack@[^;]*;runtime[.]gcBgMarkWorker[.]func[0-9]+@')
	check_pct "wl_go_g0: of those, goexit;gcBgMarkWorker;systemstack_switch;systemstack;..." \
		"$whole" "$in_mark" 95 || grep 'gcBgMarkWorker' "$f" | head -3 | cut -c1-400
else
	skip_setup "wl_go_g0: not built (go missing when the fixtures were built)"
fi

# esbuild from npm, binaries nobody here built: the newest (@esbuild/linux-x64, Go 1.26: the
# Go 1.20+ table), and esbuild-linux-64 0.11.23 and 0.12.29 (Go 1.16.3 and 1.17.1: the table
# format of Go 1.16-1.17, which no Go on this machine writes). Each bundles the same
# generated project in a loop for 3 s (each run ~0.8 s of CPU over its threads).
proj=$TMP/esproj
mkdir -p "$proj"
for ((i = 0; i < 2000; i++)); do
	printf 'export function f%d(x) {\n  return [x, %d, "s%d"].map((v) => String(v) + x).join(",").length;\n}\nexport class C%d { m(y) { return f%d(y) * 2; } }\n' \
		$i $i $i $i $i >"$proj/m$i.js"
	echo "import { f$i, C$i } from './m$i.js';" >>"$proj/imports.js"
	echo "s += f$i(1) + new C$i().m(2);" >>"$proj/uses.js"
done
{ cat "$proj/imports.js"; echo "let s = 0;"; cat "$proj/uses.js"; echo "console.log(s);"; } \
	>"$proj/entry.js"
for es in esbuild esbuild-go116 esbuild-go117; do
	if [[ ! -x $FIX/$es ]]; then
		skip "$es: not fetched by 'make fixtures' (npm registry unreachable? see $FIX/$es.unavailable)"
		continue
	fi
	record_stacks "$es" bash -c "cd $proj && end=\$((SECONDS + 3)); while ((SECONDS < end)); do
		$FIX/$es entry.js --bundle --minify --outfile=$TMP/out.js --log-level=warning; done"
	f=$TMP/$es.stacks
	total=$(samples "$f" "$es")
	check_ge "$es: samples" "$total" 100
	# samples whose user frames are all Go frames with a file and a line (kernel frames and
	# pseudo-frames have no '@'; an unnamed frame would be "esbuild+0x...")
	named=$(samples "$f" "$es" "^$es;runtime\\.[a-z0-9_]+@[^;]*:[0-9]+(;[^;]+@[^;]+:[0-9]+)*(;[^@;]+)*\$")
	# of the samples with user frames: a Go frame (named: '@', unnamed: "esbuild+0x...") or a
	# user stack cut short ("[unwind: ...]"); the others are the kernel's (exit, page faults
	# of a process whose user stack is gone)
	with_user=$(samples "$f" "$es" '@|[+]0x|[[]unwind: ')
	check_pct "$es: samples with only named Go frames (file:line), from a runtime root" \
		"$named" "$with_user" 99 || grep -v "^$es;runtime\.[a-z0-9_]*@" "$f" | head -3 | cut -c1-300
	inl=$(samples "$f" "$es" 'github\.com/evanw/esbuild/[^;]*@[^;]*:[0-9]+;')
	check_pct "$es: samples in esbuild's own packages" "$inl" "$total" 30
done

# ---- other Go versions: the toolchains of the runtime matrix's Debian roots (scripts/
# runtime_root.sh's cache; a root not built is skipped, never built here) and the `go` on PATH
# when it is not the fixtures' Go (this machine's /usr/local/go). Each builds, on the host,
# the pclntab unit test's fixtures (wl_go stripped and unstripped, its objdump and addr2line)
# wl_go_labels and (with gcc) wl_go_cgo; then test_gopclntab runs on those fixtures (every
# instruction's function, file and line against that Go's own objdump: Go 1.15 is the "go1.2"
# table format), the labels are checked as above, and the cgo chain whole down to C.
RM_ROOTS=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots
# go_run GO ARGS...: GO (a root's runs on the host: its GOROOT pointed at the root's copy, the C
# library the host's), no network, GOPATH under $FIX/go-versions, the build cache GO_BUILD_CACHE
# (lib.sh).
go_run()
{
	local go=$1 goroot
	shift
	goroot=$(dirname "$(dirname "$go")")
	env GOENV=off GOROOT="$goroot" GOCACHE="$GO_BUILD_CACHE" \
		GOPATH="$FIX/go-versions/path" GO111MODULE=off GOFLAGS= GOPROXY=off \
		GOTOOLCHAIN=local CGO_ENABLED="${GO_CGO:-0}" "$go" "$@"
}

# go_version GO: "go1.15.15" (`go env GOVERSION` is 1.16's)
go_version() { go_run "$1" version 2>/dev/null | awk '{ print $3 }'; }

PREEMPT=';runtime[.]newstack@[^;]*;runtime[.](gopreempt_m|preemptPark)@'
toolchains=()
for suite in bullseye bookworm trixie sid; do
	for g in "$RM_ROOTS/$suite"/usr/lib/go-1.*/bin/go; do
		[[ -x $g && -f $RM_ROOTS/$suite/.stackscope-root ]] && toolchains+=("$suite:$g")
	done
done
host_go=$(command -v go || true)
if [[ -n $host_go && $(go_version "$host_go") != "$(go_version "$GO")" ]]; then
	toolchains+=("host:$host_go")
fi
((${#toolchains[@]})) || skip "other Go versions: no runtime matrix root built, no other go on PATH"

for tc in "${toolchains[@]}"; do
	suite=${tc%%:*} go=${tc#*:}
	ver=$(go_version "$go")
	if [[ -z $ver ]]; then
		fail "$suite's $go: does not run on this host"
		continue
	fi
	[[ $ver != "$(go_version "$GO")" ]] || continue # the fixtures' Go: checked above
	d=$TMP/$ver/fixtures
	mkdir -p "$d"
	if ! go_run "$go" build -ldflags='-s -w' -o "$d/wl_go" "$DATA/wl_go.go" ||
		! go_run "$go" build -o "$d/wl_go.full" "$DATA/wl_go.go" ||
		! go_run "$go" build -ldflags='-s -w' -o "$d/wl_go_labels" \
			"$DATA/wl_go_labels.go" ||
		! go_run "$go" tool objdump "$d/wl_go.full" >"$d/wl_go.objdump"; then
		fail "$ver ($suite): building the fixtures"
		continue
	fi
	# go.mk's wl_go.addr2line: each function's first and last instruction
	awk '/^TEXT /{ if (last) print last; first = 1; next }
	     NF < 3 { next } first { print $2; first = 0 } { last = $2 } END { if (last) print last }' \
		"$d/wl_go.objdump" | sort -u >"$d/addrs"
	go_run "$go" tool addr2line "$d/wl_go" <"$d/addrs" | paste - - >"$d/a2l"
	paste "$d/addrs" "$d/a2l" >"$d/wl_go.addr2line"
	ln -s "$FIX/wl_chain_fp" "$d/wl_chain_fp" # test_gopclntab's non-Go binary
	# its arm64 check reads the host-built arm64 fixture (go.mk), whatever Go is checked here
	ln -s "$FIX/arm64_wl_go" "$d/arm64_wl_go"
	ln -s "$FIX/arm64_wl_go.objdump" "$d/arm64_wl_go.objdump"
	out=$(cd "$SS_ROOT" && BUILD=$TMP/$ver "$BUILD/tests/test_gopclntab" 2>&1)
	if grep -qE '^[0-9]+ passed, 0 failed' <<<"$out" && ! grep -q '^SKIP objdump' <<<"$out"; then
		ok "$ver ($suite): test_gopclntab on its wl_go ($(grep -m1 -o '[0-9]* instructions of [0-9]* functions, [0-9]* mismatches' <<<"$out"))"
	else
		fail "$ver ($suite): test_gopclntab on its wl_go"
		grep -E 'FAIL|fail|SKIP' <<<"$out" | head -10
	fi
	check_labels "wl_go_labels-$ver" "$d/wl_go_labels"
	# g0: under morestack and systemstack, on into the goroutine that switched (Go 1.15's
	# switches are known by their funcIDs: the 1.2 table has no funcFlags)
	if go_run "$go" build -ldflags='-s -w' -o "$d/wl_go_g0" "$DATA/wl_go_g0.go"; then
		record_stacks wl_go_g0 "$d/wl_go_g0" 1.5
		f=$TMP/wl_go_g0.stacks
		SW=';runtime[.](morestack|systemstack)@[^;]*;'
		# (less those of the scheduler's own: g0 from its root, mstart or rt0_go)
		in_sw=$(($(samples "$f" wl_go_g0 "$SW") - $(samples "$f" wl_go_g0 \
			"^wl_go_g0;runtime[.](mstart|rt0_go)@[^;]*;([^;]*;)*${SW#;}")))
		preempted=$(samples "$f" wl_go_g0 "$PREEMPT")
		whole=$(samples "$f" wl_go_g0 "^wl_go_g0;runtime[.]goexit@[^;]*;([^;]*;)*${SW#;}")
		whole_pre=$(samples "$f" wl_go_g0 "^wl_go_g0;runtime[.]goexit@[^;]*;([^;]*;)*runtime[.]morestack@[^;]*$PREEMPT")
		check_ge "wl_go_g0-$ver: samples on g0 under morestack or systemstack" "$in_sw" 30
		check_pct "wl_go_g0-$ver: of those not in the scheduler after a preemption, complete from runtime.goexit" \
			$((whole - whole_pre)) $((in_sw - preempted)) 90 || show_stacks "$f"
	else
		fail "wl_go_g0-$ver: build"
	fi
	# cgo: Go -> C and back (an external link: Go 1.26+'s table has textStart 0 and .text
	# starts with C code; newer Go strips the C symbols too: C frames named or file+0x...)
	if command -v gcc >/dev/null &&
		GO_CGO=1 go_run "$go" build -ldflags='-s -w' -o "$d/wl_go_cgo" "$DATA/wl_go_cgo.go"; then
		record_stacks wl_go_cgo "$d/wl_go_cgo" 1.5
		f=$TMP/wl_go_cgo.stacks
		C=';[^@;]+;[^@;]+;[^@;]+(;[^@]*)*$' # the cgo wrapper, c_outer, c_inner, then kernel frames
		in_c=$(samples "$f" wl_go_cgo ";runtime[.]asmcgocall@[^;]*$C")
		whole=$(samples "$f" wl_go_cgo \
			"^wl_go_cgo;$ROOT;main\\.main@[^;]*;main\\.cgoLoop@wl_go_cgo\\.go:$(line "$DATA/wl_go_cgo.go" CGO_CALL);main\\._Cfunc_c_outer@[^;]*;runtime\\.cgocall@[^;]*;runtime\\.asmcgocall@[^;]*$C")
		check_ge "wl_go_cgo-$ver: samples in C under runtime.asmcgocall" "$in_c" 100
		check_pct "wl_go_cgo-$ver: of those, whole from runtime.goexit: cgoLoop;_Cfunc_c_outer;cgocall;asmcgocall;C" \
			"$whole" "$in_c" 95 || show_stacks "$f"
	else
		skip "wl_go_cgo-$ver: no gcc, or the cgo build failed"
	fi
done

finish
