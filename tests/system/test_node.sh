#!/bin/bash
# JavaScript frames of Node.js 20 (V8) interleaved with native frames (bpf/interp/v8/walk.h,
# src/interp/v8/): Debian's nodejs (scripts/setup.sh installs it: missing under CI is a
# failure), no agent, no flag that helps profilers (but in ifns). tests/data/node_chain.js and
# node_shapes.js are copied into $TMP under one name per case, so the stacks of each case are
# told apart by script name; their lines are marked (// HOT, // CALL_ALPHA...) and looked up
# here, so the checks name exact lines.
#
# One recording runs every case at once but ifns, osr and osri, which a second one runs (all
# started after their recording began; they live until it has read every sample, so their
# heap is there to name frames):
#  - int (--no-opt --no-sparkplug: Ignition, the interpreter): the top-level code -> alpha ->
#    beta -> gamma, each at its call line, gamma at a line of its loop;
#  - ifns (int's flags and --interpreted-frames-native-stack, as perf's users run node): each
#    interpreted function runs its own copy of the interpreter's entry, in V8's code space:
#    the same chain at the same lines (before: none had a line);
#  - base (--always-sparkplug --no-opt: baseline code): the same chain at the same lines,
#    also under a builtin its baseline code called without a frame (>= 95 %);
#  - int and base: the columns of the calls (pprof Line.column, --columns of
#    pprof_stacks.py) are those of the callees' names in the script's text; in int, gamma's
#    most sampled position is the column of its hot line's %, and node's own module
#    loader's frames (node:internal/..., external strings) are at the lines and columns of
#    V8's own stack trace (from a run of int.js of its own);
#  - opt (default flags: TurboFan compiles gamma's loop on stack, then gamma): the same chain,
#    gamma at its lines from its optimised code's source positions;
#  - inl (default flags, tests/data/node_inline.js): TurboFan inlines mid and leaf into
#    outer's optimised code: outer -> mid -> leaf, each its own frame at its line;
#  - pre (default flags, started before the recording, recorded with -p): the same chain;
#  - churn (default flags, --expose-gc): scripts defined, run and collected round after round
#    (tests/data/node_churn.js): no frame carries another function's name;
#  - addon (default flags, tests/data/node_addon.{c,js}, the addon built here with gcc
#    against Debian's node headers): viaAddon -> the addon's C (call_back, addon_call_js,
#    napi_call_function) -> V8's entry -> work, JS frames at their lines around the C ones;
#  - worker (default flags, tests/data/node_worker.js): a worker thread (its own isolate)
#    runs inWorker -> burn, while the main thread's async tick, resumed by the microtask
#    queue after awaiting a timer, calls spin: both chains at their lines;
#  - osr (default flags, tests/data/node_osr.js): main_loop, called once, loops until the end
#    calling alpha -> beta -> gamma, so it runs in the code TurboFan compiled for the loop on
#    the stack (OSR) with the three inlined, in the frame Sparkplug's code had: the whole
#    chain at its lines, alpha, beta and gamma expanded from the OSR code;
#  - osri (--no-sparkplug): the same, the OSR code entered from the interpreter's own frame
#    (as when TurboFan compiles the loop before Sparkplug has: in a large program, or where
#    Sparkplug is off), whose BytecodeArray and bytecode offset stay in their slots: the
#    frame is told by the code its pc is in (before, by its slots: main_loop alone at its
#    loop's line, an interpreted frame, in 99.6 % of the samples, no inlined frame);
#  - shapes (interpreted): a class method (named Class.method), an arrow function, an
#    anonymous function (named <anonymous>:LINE:COLUMN, where V8 says it starts) and a
#    comparator called back by Array.prototype.sort (through V8's sort builtins
#    [v8] ArrayTimSort, [v8] SortCompareUserFn: node's Builtins_* symbols as V8 names its
#    builtins), each under its caller at its lines; a regular expression's compiled code
#    (irregexp, in V8's code space, a frame of no JS function) named [v8] RegExp code by its
#    frame type (v8dbg_frametype_IrregexpFrame), under node's C++ that runs it;
# and over all cases: a sample in a case's hot code shows the case's whole chain, JS frames
# under node's native entry ([v8] JSEntry), and no "[v8: stale]" frame appears.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SECS=14     # the recording; the scripts run until it ends (RUN_SECS bounds them if it fails)
JIT_SECS=6  # the second one (ifns, osr, osri)
RUN_SECS=30
NODE=/usr/bin/node
CHAIN_SRC=$SS_ROOT/tests/data/node_chain.js
SHAPES_SRC=$SS_ROOT/tests/data/node_shapes.js
INLINE_SRC=$SS_ROOT/tests/data/node_inline.js
ADDON_SRC=$SS_ROOT/tests/data/node_addon.js
WORKER_SRC=$SS_ROOT/tests/data/node_worker.js
OSR_SRC=$SS_ROOT/tests/data/node_osr.js

if [[ ! -x $NODE ]]; then
	skip_setup "Node.js ($NODE) not installed"
	finish
fi

for c in int ifns base opt pre; do
	cp "$CHAIN_SRC" "$TMP/$c.js"
done
cp "$SHAPES_SRC" "$TMP/shapes.js"
cp "$INLINE_SRC" "$TMP/inl.js"
cp "$ADDON_SRC" "$TMP/addon.js"
cp "$WORKER_SRC" "$TMP/worker.js"
cp "$OSR_SRC" "$TMP/osr.js"
cp "$OSR_SRC" "$TMP/osri.js"
# The N-API addon: Debian's nodejs ships node's headers; nothing is downloaded.
if ! gcc -shared -fPIC -O2 -fno-omit-frame-pointer -DNODE_GYP_MODULE_NAME=addon \
	-I/usr/include/node -o "$TMP/addon.node" "$SS_ROOT/tests/data/node_addon.c" 2>"$TMP/addon.err"; then
	cat "$TMP/addon.err"
	skip_setup "N-API addon: cannot build against /usr/include/node (nodejs's headers)"
	finish
fi
cp "$SS_ROOT/tests/data/node_churn.js" "$TMP/churn.js"

script="$NODE --no-opt --no-sparkplug $TMP/int.js $RUN_SECS & "
script+="$NODE --always-sparkplug --no-opt $TMP/base.js $RUN_SECS & "
script+="$NODE $TMP/opt.js $RUN_SECS & "
script+="$NODE $TMP/inl.js $RUN_SECS & "
script+="$NODE $TMP/addon.js $TMP/addon.node $RUN_SECS & "
script+="$NODE $TMP/worker.js $RUN_SECS & "
script+="$NODE --no-opt --no-sparkplug $TMP/shapes.js $RUN_SECS & "
script+="$NODE --expose-gc $TMP/churn.js $RUN_SECS & "
script="trap 'kill \$(jobs -p) 2>/dev/null; wait; exit 0' TERM; $script wait"
# The cases of JIT code running what the slots do not say (OSR code, copies of the
# interpreter's entry): a recording of their own after the first, so that the first's cases
# keep their share of the two cores.
jit="$NODE --interpreted-frames-native-stack --no-opt --no-sparkplug $TMP/ifns.js $RUN_SECS & "
jit+="$NODE $TMP/osr.js $RUN_SECS & "
jit+="$NODE --no-sparkplug $TMP/osri.js $RUN_SECS & "
jit="trap 'kill \$(jobs -p) 2>/dev/null; wait; exit 0' TERM; $jit wait"

# V8's own stack trace of int.js's top level, from a run of its own (0 s: the trace, then
# exit): formatting a trace makes V8 compute the line ends of every script in it, which the
# recorded process must read from the sources itself.
$NODE --no-opt --no-sparkplug "$TMP/int.js" 0 "$TMP/int.trace"

# A process that runs before the recording starts (attached from its maps, its JIT code
# already there), recorded on its own (-p) first.
spawn PRE $NODE $TMP/pre.js $RUN_SECS
sleep 2
record "$TMP/pre.err" -F $HZ -d 3 -p "$PRE" -o "$TMP/pre.pb.gz"
check_eq "record -p (a process started before): exit status" $? 0
kill "$PRE" 2>/dev/null

record "$TMP/node.err" -F $HZ -d $SECS -o "$TMP/node.pb.gz" -- /bin/bash -c "$script"
check_eq "record: exit status" $? 0
$STACKS "$TMP/node.pb.gz" >"$TMP/node.stacks"
$STACKS --columns "$TMP/node.pb.gz" >"$TMP/node.cstacks"
[[ -s $TMP/pre.pb.gz ]] && $STACKS "$TMP/pre.pb.gz" >>"$TMP/node.stacks"
record "$TMP/jit.err" -F $HZ -d $JIT_SECS -o "$TMP/jit.pb.gz" -- /bin/bash -c "$jit"
check_eq "record (ifns, osr, osri): exit status" $? 0
$STACKS "$TMP/jit.pb.gz" >>"$TMP/node.stacks"
$STACKS --mark-inlined "$TMP/jit.pb.gz" >"$TMP/node.istacks"

# show_case RE: the top stacks matching RE, for the log of a failing test
show_case()
{
	grep -E "$1" "$TMP/node.stacks" | sort -t' ' -k2 -rn | head -4 | sed 's/^.*\[v8\] JSEntry;/...JSEntry;/' |
		cut -c1-700 | sed 's/^/        /'
}

# check_chain NAME HOT_RE CHAIN_RE WHAT: the case has at least 20 samples in its hot code
# (a stack with HOT_RE: ~1.5 s of CPU, ~700 samples, per process at 499 Hz on an idle box,
# four busy processes on two cores; a box loaded by other builds gave 25-110 in 5 s) and 90%
# (MIN_PCT when set) of those have the whole CHAIN_RE.
check_chain()
{
	local hot chain
	hot=$(samples "$TMP/node.stacks" "*" "$2")
	chain=$(samples "$TMP/node.stacks" "*" "$3")
	check_ge "$1: samples in its hot code" "$hot" 20 || show_case "$2"
	check_pct "$1: $4" "$chain" "$hot" "${MIN_PCT:-90}" || show_case "$2"
}

marks "$CHAIN_SRC" L_ALPHA=CALL_ALPHA L_BETA=CALL_BETA L_GAMMA=CALL_GAMMA
L_LOOP="$(line "$CHAIN_SRC" LOOP)|$(line "$CHAIN_SRC" HOT)"
# Native entry into JavaScript, then the script's top-level code (an anonymous function, as
# V8 names a CommonJS module's wrapper, starting at the script's first character) called by
# node's module loader.
ENTRY="\\[v8\\] JSEntry;\\[v8\\] JSEntryTrampoline;.*Module\\._compile@loader(:[0-9]+)*;"
TL="<anonymous>:1:1"

# chain CASE OPT: the chain of tests/data/node_chain.js in $TMP/CASE.js; OPT "?" makes the
# lines optional (baseline and optimised frames have none yet).
chain()
{
	local f="$1\\.js" o=${2:-}
	echo "$ENTRY$TL@$f(:($L_ALPHA))$o;alpha@$f(:($L_BETA))$o;beta@$f(:($L_GAMMA))$o;gamma@$f(:($L_LOOP))$o(;|\$)"
}

check_chain int ";gamma@int\\.js" "$(chain int)" \
	"top level -> alpha -> beta -> gamma at their lines, interpreted"
# Each function's own copy of the interpreter's entry trampoline (JIT code: its Code holds the
# pc, a kind neither baseline nor optimised), its SharedFunctionInfo's bytecode behind an
# InterpreterData.
MIN_PCT=95 check_chain ifns ";gamma@ifns\\.js" "$(chain ifns)" \
	"top level -> alpha -> beta -> gamma at their lines, interpreted through copies of the interpreter's entry"

# Columns (pprof Line.column, 1-based): a caller is at its call, whose position V8 puts at the
# callee's name (as in an Error's stack: "at beta (file:LINE:COLUMN)"), found here in the
# script's text; gamma's most sampled position is its hot line's `%` (a binary operation's
# position is its operator's). Interpreted and baseline code (their positions are the
# bytecode's).
# col MARK TEXT: the 1-based column of TEXT in the line of the chain script marked MARK
col()
{
	awk -v t="$2" '{ i = index($0, t); if (i) { print i; exit } }' <<<"$(grep "// $1\$" "$CHAIN_SRC")"
}
C_ALPHA=$(col CALL_ALPHA "alpha(")
C_BETA=$(col CALL_BETA "beta(")
C_GAMMA=$(col CALL_GAMMA "gamma(")
C_MOD=$(col HOT "% 7")
for c in int base; do
	f="$c\\.js"
	hot=$(samples "$TMP/node.cstacks" "*" ";gamma@$f:[0-9]+:[0-9]+(;|\$)")
	good=$(samples "$TMP/node.cstacks" "*" \
		"$ENTRY$TL@$f:$L_ALPHA:$C_ALPHA;alpha@$f:$L_BETA:$C_BETA;beta@$f:$L_GAMMA:$C_GAMMA;gamma@$f:($L_LOOP):[0-9]+(;|\$)")
	check_pct "$c: columns of the calls: alpha( at $L_ALPHA:$C_ALPHA, beta( at $L_BETA:$C_BETA, gamma( at $L_GAMMA:$C_GAMMA" \
		"$good" "$hot" 95 || grep -E ";gamma@$f" "$TMP/node.cstacks" | sort -t' ' -k2 -rn | head -3 |
		sed 's/^.*Module._compile@loader[:0-9]*;/        .../'
done
# node's own modules (their sources external strings, characters in node's binary): the
# loader's frames above the top level at the lines and columns of V8's own stack trace of
# it (written by a run of int.js of its own, above), all of them in that order, in 90 % of
# the samples (none had a line before: external strings were not read).
read -r total good want < <(python3 - "$TMP/node.cstacks" "$TMP/int.trace" <<'EOP'
import os, re, sys
want = []
for raw in open(sys.argv[2]) if os.path.exists(sys.argv[2]) else []:
    m = re.search(r"\(?node:internal/(\S+):(\d+):(\d+)\)?$", raw.strip())
    if m:  # innermost first, as V8 prints them
        want.append("%s:%s:%s" % (os.path.basename(m.group(1)), m.group(2), m.group(3)))
want.reverse()
total = good = 0
for raw in open(sys.argv[1]):
    stack, _, n = raw.rstrip("\n").rpartition(" ")
    if ";gamma@int.js" not in stack or "JSEntryTrampoline;" not in stack:
        continue
    above = stack.split("JSEntryTrampoline;", 1)[1].split(";<anonymous>:1:1@int.js")[0]
    got = [f.rsplit("@", 1)[1] for f in above.split(";") if "@" in f]
    total += int(n)
    good += int(n) if got == want and want else 0
print(total, good, " ".join(want) or "-")
EOP
)
check_pct "int: node's loader frames at V8's own lines and columns ($want)" "$good" "$total" 90 ||
	grep -E ";gamma@int\\.js" "$TMP/node.cstacks" | sed 's/^.*JSEntryTrampoline;/        .../' | cut -c1-400 | head -3
# gamma's positions in the interpreted case, most sampled first
top=$(grep -oE ";gamma@int\\.js:[0-9]+:[0-9]+ [0-9]+\$" "$TMP/node.cstacks" | tr -d ';' |
	awk '{ n[$1] += $2 } END { for (k in n) print n[k], k }' | sort -rn)
check_eq "int: gamma's most sampled position is the % of its hot line" \
	"$(head -1 <<<"$top" | cut -d' ' -f2)" "gamma@int.js:$(line "$CHAIN_SRC" HOT):$C_MOD" || sed 's/^/        /' <<<"$top"
# Baseline code: every frame at its line, also when gamma is interrupted in one of V8's
# builtins that its baseline code called without a frame (Builtins_ModulusSmi_Baseline...:
# the builtin, then gamma at the line of the call), and before the process's maps were
# first read (V8's code space not known yet: 74-84 % of the samples complete before), and
# when such a builtin went on into the runtime through CEntry (Multiply_Baseline ->
# Runtime_AllocateInYoungGeneration: the GC's slow path). A run once had 11 % of its samples
# without lines here (20-52 % of a case in other runs, every tier): not the CEntry path but
# the script's source read while a GC was moving it (a forwarding map word), 4 reads at
# once, then none for 512 lookups; the move is followed now (v8_heap.c) and such a script
# read again 20 ms later.
MIN_PCT=95 check_chain base ";gamma@base\\.js" "$(chain base)" \
	"top level -> alpha -> beta -> gamma, baseline, every frame at its line"

# Default flags: TurboFan may inline beta and gamma into alpha (then they are missing: never
# another function, never out of order); gamma's loop is compiled on stack while it runs.
f=opt\\.js
OPT_HOT=";(alpha|beta|gamma)@$f[^;]*(;[^@;]*)*( |$)"
OPT_CHAIN="$ENTRY$TL@$f(:($L_ALPHA))?;alpha@$f(:($L_BETA))?(;beta@$f(:($L_GAMMA))?)?"
OPT_CHAIN+="(;gamma@$f(:($L_LOOP))?)?(;[^@;]*)*$"
hot=$(samples "$TMP/node.stacks" "*" ";alpha@$f")
good=$(samples "$TMP/node.stacks" "*" "$OPT_CHAIN")
check_ge "opt: samples in alpha and its callees" "$hot" 20 || show_case ";alpha@$f"
check_pct "opt: top level -> alpha (-> beta) (-> gamma), default flags, nothing out of order" \
	"$good" "$hot" 90 || show_case ";alpha@$f"
gamma=$(samples "$TMP/node.stacks" "*" ";gamma@$f")
check_pct "opt: gamma on its own frame (compiled on stack, not inlined)" "$gamma" "$hot" 50 ||
	show_case ";alpha@$f"

lined=$(samples "$TMP/node.stacks" "*" "$ENTRY$TL@$f:($L_ALPHA);alpha@$f:($L_BETA);beta@$f:($L_GAMMA);gamma@$f:($L_LOOP)(;|\$)")
check_pct "opt: gamma at a line of its loop (optimised code's source positions)" "$lined" "$gamma" 95 ||
	show_case ";gamma@$f"

# Default flags, inlining: outer's optimised code runs mid and leaf inlined; each is its own
# frame at its line (before outer is optimised they are frames of their own anyway: the
# summary's count of inlined frames below shows the optimised ones were expanded).
f=inl\\.js
line_i()
{
	line "$INLINE_SRC" "$1"
}
INL_CHAIN="$ENTRY$TL@$f:($(line_i CALL_OUTER));outer@$f:($(line_i CALL_MID))"
INL_CHAIN+=";mid@$f:($(line_i CALL_LEAF));leaf@$f:($(line_i LEAF_HOT))(;|\$)"
check_chain inl ";leaf@$f" "$INL_CHAIN" "top level -> outer -> mid -> leaf (inlined) at their lines"
hot=$(samples "$TMP/node.stacks" "*" ";outer@$f")
leaf=$(samples "$TMP/node.stacks" "*" ";leaf@$f")
check_pct "inl: leaf (inlined into outer) shown in outer's samples" "$leaf" "$hot" 40 ||
	show_case ";outer@$f"

# On-stack replacement: main_loop's loop runs in OSR code, which is not main_loop's Code (in
# osri its frame still looks interpreted): found by its pc (its InstructionStream), its
# deoptimisation data naming main_loop and the three functions inlined into it, each at its
# line. Over all the samples of the process's JavaScript (also those before the OSR code
# ran), 95 % have the whole chain with gamma at its loop's lines, and 75 % have alpha, beta
# and gamma as frames inlined into main_loop's code (--mark-inlined; the samples before the
# OSR code runs have them as frames of their own: 3-10 %, more on a loaded box, where a
# case gets fewer samples, the OSR compile the same CPU). osri before: 0.4 % and 0 %.
line_o()
{
	line "$OSR_SRC" "$1"
}
OSR_G="$(line_o G_LOOP)|$(line_o G_HOT)"
for c in osr osri; do
	f="$c\\.js"
	all=$(samples "$TMP/node.stacks" "*" "@$f")
	MIN_PCT=95 check_chain $c ";gamma@$f" \
		"$ENTRY$TL@$f:($(line_o CALL_MAIN));main_loop@$f:($(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA));beta@$f:($(line_o CALL_GAMMA));gamma@$f:($OSR_G)(;|\$)" \
		"top level -> main_loop (OSR code) -> alpha -> beta -> gamma at their lines"
	good=$(samples "$TMP/node.stacks" "*" \
		";main_loop@$f:($(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA));beta@$f:($(line_o CALL_GAMMA));gamma@$f:($OSR_G)(;|\$)")
	check_pct "$c: the whole chain at its lines over all the process's JavaScript samples" "$good" "$all" 95 ||
		show_case "@$f"
	good=$(samples "$TMP/node.istacks" "*" \
		";main_loop@$f:($(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA))\\+inlined;beta@$f:($(line_o CALL_GAMMA))\\+inlined;gamma@$f:($OSR_G)\\+inlined(;|\$)")
	check_pct "$c: alpha, beta and gamma inlined into main_loop's OSR code" "$good" "$all" 75 ||
		grep -E "@$f" "$TMP/node.istacks" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
		sed 's/^.*Module._compile@loader[:0-9]*;/        .../'
done

# N-API: JavaScript -> the addon's C -> V8's entry -> JavaScript, every frame in its place.
A=addon\\.js
L_CB="$(line "$ADDON_SRC" CB_LOOP)|$(line "$ADDON_SRC" CB_HOT)"
ADDON_CHAIN="$ENTRY$TL@$A:($(line "$ADDON_SRC" CALL_VIA));viaAddon@$A:($(line "$ADDON_SRC" CALL_ADDON))"
ADDON_CHAIN+=";([^;]*;)*call_back;addon_call_js;napi_call_function;([^;]*;)*"
ADDON_CHAIN+="\\[v8\\] JSEntry;\\[v8\\] JSEntryTrampoline;work@$A:($L_CB)(;|\$)"
check_chain addon ";work@$A" "$ADDON_CHAIN" \
	"JS viaAddon -> addon C (call_back, addon_call_js) -> napi_call_function -> JS work at their lines"

# A worker thread's isolate, and an async function resumed after awaiting a timer.
W=worker\\.js
line_w()
{
	line "$WORKER_SRC" "$1"
}
check_chain worker ";burn@$W" \
	"$TL@$W:($(line_w CALL_WORKER));inWorker@$W:($(line_w CALL_BURN));burn@$W:($(line_w W_LOOP)|$(line_w W_HOT))(;|\$)" \
	"worker thread: its top level -> inWorker -> burn at their lines"
check_chain async ";spin@$W" \
	"\\[v8\\] RunMicrotasks;([^;@]*;)*tick@$W:($(line_w CALL_SPIN));spin@$W:($(line_w A_LOOP)|$(line_w A_HOT))(;|\$)" \
	"async: tick resumed by the microtask queue after its await -> spin at their lines"

# Default flags, started before the recording: gamma compiled long before.
f=pre\\.js
hot=$(samples "$TMP/node.stacks" "*" ";alpha@$f")
good=$(samples "$TMP/node.stacks" "*" "${OPT_CHAIN//opt/pre}")
check_ge "pre: samples in alpha and its callees" "$hot" 20 || show_case ";alpha@$f"
check_pct "pre: started before the recording: top level -> alpha (-> beta) (-> gamma)" \
	"$good" "$hot" 90 || show_case ";alpha@$f"

S=shapes\\.js
line_s()
{
	line "$SHAPES_SRC" "$1"
}
TOP="$ENTRY$TL@$S:($(line_s CALLS))"
check_chain method ";[^;]*area@$S" \
	"$TOP;viaMethod@$S:($(line_s CALL_AREA));Shape\\.area@$S:($(line_s AREA_LOOP)|$(line_s AREA_HOT))(;|\$)" \
	"class method: viaMethod -> Shape.area at their lines"
# V8 places a function where its parameter list starts (1-based line and column).
L_ANON=$(line_s ANON_DEF)
C_ANON=$(awk -v l="$L_ANON" 'NR == l { print index($0, "function (") + 9 }' "$SHAPES_SRC")
check_chain anon ";[^;]*@$S:($(line_s ANON_LOOP)|$(line_s ANON_HOT))(;|\$)" \
	"$TOP;viaAnon@$S:($(line_s CALL_ANON));<anonymous>:$L_ANON:$C_ANON@$S:($(line_s ANON_LOOP)|$(line_s ANON_HOT))(;|\$)" \
	"anonymous function: viaAnon -> <anonymous>:$L_ANON:$C_ANON (where it starts) at their lines"
check_chain arrow ";spin@$S" \
	"$TOP;viaArrow@$S:($(line_s CALL_SPIN));spin@$S:($(line_s SPIN_LOOP)|$(line_s SPIN_HOT))(;|\$)" \
	"arrow function: viaArrow -> spin (named by V8 after its binding) at their lines"
check_chain sort ";compare@$S" \
	"$TOP;viaSort@$S:($(line_s CALL_SORT));sort;\\[v8\\] ArrayTimSort;\\[v8\\] SortCompareUserFn;compare@$S:($(line_s CMP_LOOP)|$(line_s CMP_HOT))(;|\$)" \
	"comparator: viaSort -> sort -> [v8] ArrayTimSort -> [v8] SortCompareUserFn -> compare at their lines"

# A compiled regular expression: its frames (called by the test builtin, or by node's C++,
# NativeRegExpMacroAssembler::Execute, once optimised) named by their frame type, not
# [v8: stub] (every one of them before). Out of the count: the samples in C++ (compiling it)
# and builtins; in: those in code of no JS function ([unknown]: V8's code space before the
# process's maps were read, one or two per run).
hot=$(samples "$TMP/node.stacks" "*" \
	";viaRegExp@$S:$(line_s CALL_TEST);test;([^@]*;)?(\\[v8\\] RegExp code|\\[unknown\\]|\\[v8: stub\\])(;|\$)")
good=$(samples "$TMP/node.stacks" "*" ";viaRegExp@$S:$(line_s CALL_TEST);test;([^@]*;)?\\[v8\\] RegExp code(;|\$)")
check_ge "regexp: samples in its compiled code" "$hot" 20 || show_case ";viaRegExp@$S"
check_pct "regexp: viaRegExp -> test -> ... -> [v8] RegExp code (its frame type)" "$good" "$hot" 85 ||
	show_case ";viaRegExp@$S"
stub=$(samples "$TMP/node.stacks" "*" "\\[v8: stub\\]")
check_eq "no frame left as [v8: stub]" "$stub" 0 || show_case "\\[v8: stub\\]"

# Churn: a frame named f<k> comes from churn_<k>.js (the script that defined it), under the
# top level of churn.js at its call line (no line once TurboFan compiled that loop; a frame
# whose script was collected before it was read has no file: not counted); a stale frame shows as a [v8: ...] marker, which
# is not wrong. Anything else was read from reused memory.
read -r total good < <(python3 - "$TMP/node.stacks" "$(line "$SS_ROOT/tests/data/node_churn.js" CALL_F)" <<'EOP'
import re, sys
total = good = 0
call = re.compile(r"<anonymous>:1:1@churn\.js(:%s)?$" % sys.argv[2])  # optimised: no line
for raw in open(sys.argv[1]):
    stack, _, n = raw.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    idx = [i for i, f in enumerate(frames) if re.match(r"f[0-9]+@", f)]
    if not idx:
        continue
    total += int(n)
    # the caller: churn.js's call, or JIT code before the process's code space was known
    ok = len(idx) == 1 and idx[0] > 0 and (call.match(frames[idx[0] - 1]) or
                                           frames[idx[0] - 1] == "[unknown]")
    m = re.match(r"f([0-9]+)@churn_([0-9]+)\.js(:[0-9]+)?$", frames[idx[0]])
    ok = ok and m and m.group(1) == m.group(2)
    good += int(n) if ok else 0
    if not ok and total - good <= 3 * int(n):  # the first few, for the log of a failure
        print("        not as expected: ...;" + ";".join(frames[max(0, idx[0] - 2):idx[0] + 2]),
              file=sys.stderr)
print(total, good)
EOP
)
check_ge "churn: samples in the churned functions" "$total" 20 || show_case "@churn_"
check_eq "churn: every f<k> from churn_<k>.js, under churn.js's call" "$good" "$total" ||
	show_case "@churn_"

stale=$(samples "$TMP/node.stacks" "*" "\\[v8: stale\\]")
check_eq "no frame of a moved or reused function (counted [v8: stale])" "$stale" 0

# The frame kinds the walk emitted, over all cases (record's summary line "v8 ..."); JIT
# frames by pc: the OSR code of osr and osri (the second recording).
check_summary "$TMP/node.err" v8 100 "interpreted frames" "baseline frames" "optimised frames"
check_summary "$TMP/jit.err" v8 100 "JIT frames by pc"
summary=$(grep '^v8 ' "$TMP/node.err")
# Frames TurboFan inlined, shown as their own (userspace count of the symbolizations).
n=$(sed -n "s/.*inlined frames \\([0-9]*\\).*/\\1/p" <<<"$summary")
check_ge "inlined frames expanded from optimised code" "${n:-0}" 10 || echo "        $summary"

# Maglev: Node 20's and Node 22's release builds leave V8's Maglev out (v8_enable_maglev 0:
# V8 answers --maglev's %OptimizeMaglevOnNextCall with "Maglev is not enabled"); Node 24's
# (V8 13.6) has it on by default. NODE_MAGLEV, default the npm registry's Node 24 as
# scripts/node_npm.sh 24 caches it, runs tests/data/node_osr.js with --max-opt=2 (nothing
# above Maglev): alpha, beta and gamma are Maglev code, main_loop's loop Maglev's OSR code;
# recorded on its own, the same chain at its lines in 95 % of its JavaScript samples, and
# Maglev code read (CodeKind MAGLEV, v8dbg_CodeKindBaseline + 1). A V8 this build cannot
# read yet (record's summary: its file unsupported, and no JavaScript frame) skips the case,
# saying so. main_loop's line: V8 13.6's Maglev OSR code records alpha's call in the loop
# it compiled (the copy the samples run in; its first iteration has its own copy, at the
# call's line) at the loop's `for` (its inlining positions, read from the process: script
# offsets of the `for` and of the call), so main_loop is at OSR_LOOP or CALL_ALPHA, as V8's
# own source positions say; alpha, beta and gamma are at their exact lines.
NODE_MAGLEV=${NODE_MAGLEV:-$(ls -d /var/cache/stackscope/node-npm/24.*/node 2>/dev/null | sort -V | tail -1)}
if [[ -z $NODE_MAGLEV || ! -x $NODE_MAGLEV ]]; then
	skip_setup "maglev: no node built with Maglev (scripts/node_npm.sh 24 fetches Node 24 into its cache)"
else
	cp "$OSR_SRC" "$TMP/maglev.js"
	record "$TMP/maglev.err" -F $HZ -o "$TMP/maglev.pb.gz" -- "$NODE_MAGLEV" --max-opt=2 "$TMP/maglev.js" 6
	check_eq "maglev: record: exit status" $? 0
	$STACKS "$TMP/maglev.pb.gz" >"$TMP/maglev.stacks"
	f=maglev\\.js
	v8ver=$("$NODE_MAGLEV" -p process.versions.v8)
	# record's summary: "v8  N files (M unsupported), ..."
	unsupported=$(sed -n 's/^v8 .* files (\([0-9]*\) unsupported).*/\1/p' "$TMP/maglev.err")
	if [[ ${unsupported:-0} -gt 0 && $(samples "$TMP/maglev.stacks" "*" "@$f") -eq 0 ]]; then
		skip "maglev: this build does not support $NODE_MAGLEV's V8 $v8ver yet (record: its file unsupported, no JavaScript frame)"
	else
		all=$(samples "$TMP/maglev.stacks" "*" "@$f|\\[v8: ")
		good=$(samples "$TMP/maglev.stacks" "*" \
			";main_loop@$f:($(line_o OSR_LOOP)|$(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA));beta@$f:($(line_o CALL_GAMMA));gamma@$f:($OSR_G)(;|\$)")
		check_ge "maglev: samples of its JavaScript (V8 $v8ver)" "$all" 200
		check_pct "maglev: main_loop -> alpha -> beta -> gamma at their lines, Maglev code" "$good" "$all" 95 ||
			grep -E "@$f|\\[v8: " "$TMP/maglev.stacks" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
			sed 's/^.*Module._compile@loader[:0-9]*;/        .../'
		check_summary "$TMP/maglev.err" v8 1 "Maglev code read"
	fi
fi

# Node 22 (V8 12.4: trusted Code and BytecodeArray, the metadata's Tagged_T_ names), the npm
# registry's as scripts/node_npm.sh 22 caches it (NODE_22), default flags, recorded on its
# own: n22chain (tests/data/node_chain.js: the top level -> alpha -> beta -> gamma, gamma's
# loop compiled on the stack by TurboFan) and n22osr (tests/data/node_osr.js: main_loop's
# loop in TurboFan's OSR code, alpha, beta and gamma inlined): each chain at its lines in
# 95 % of the case's JavaScript samples, and 75 % of n22osr's with the three as frames
# inlined into main_loop's code.
NODE_22=${NODE_22:-$(ls -d /var/cache/stackscope/node-npm/22.*/node 2>/dev/null | sort -V | tail -1)}
if [[ -z $NODE_22 || ! -x $NODE_22 ]]; then
	skip_setup "node22: no Node 22 (scripts/node_npm.sh 22 fetches it into its cache)"
else
	cp "$CHAIN_SRC" "$TMP/n22chain.js"
	cp "$OSR_SRC" "$TMP/n22osr.js"
	n22="$NODE_22 $TMP/n22chain.js $RUN_SECS & $NODE_22 $TMP/n22osr.js $RUN_SECS & "
	n22="trap 'kill \$(jobs -p) 2>/dev/null; wait; exit 0' TERM; $n22 wait"
	record "$TMP/n22.err" -F $HZ -d $JIT_SECS -o "$TMP/n22.pb.gz" -- /bin/bash -c "$n22"
	check_eq "node22: record: exit status" $? 0
	$STACKS "$TMP/n22.pb.gz" >"$TMP/n22.stacks"
	$STACKS --mark-inlined "$TMP/n22.pb.gz" >"$TMP/n22.istacks"
	v8ver=$("$NODE_22" -p process.versions.v8)
	f=n22chain\\.js
	all=$(samples "$TMP/n22.stacks" "*" "@$f|\\[v8: ")
	good=$(samples "$TMP/n22.stacks" "*" \
		"$TL@$f:($(line "$CHAIN_SRC" CALL_ALPHA));alpha@$f:($(line "$CHAIN_SRC" CALL_BETA));beta@$f:($(line "$CHAIN_SRC" CALL_GAMMA));gamma@$f:($(line "$CHAIN_SRC" LOOP)|$(line "$CHAIN_SRC" HOT))(;|\$)")
	check_ge "node22: n22chain: samples of its JavaScript (V8 $v8ver)" "$all" 200
	check_pct "node22: n22chain: top level -> alpha -> beta -> gamma at their lines" "$good" "$all" 95 ||
		grep -E "@$f|\\[v8: " "$TMP/n22.stacks" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
		sed 's/^.*Module._compile@loader[:0-9]*;/        .../'
	f=n22osr\\.js
	all=$(samples "$TMP/n22.stacks" "*" "@$f|\\[v8: ")
	good=$(samples "$TMP/n22.stacks" "*" \
		";main_loop@$f:($(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA));beta@$f:($(line_o CALL_GAMMA));gamma@$f:($OSR_G)(;|\$)")
	check_ge "node22: n22osr: samples of its JavaScript" "$all" 200
	check_pct "node22: n22osr: main_loop (OSR code) -> alpha -> beta -> gamma at their lines" "$good" "$all" 95 ||
		grep -E "@$f|\\[v8: " "$TMP/n22.stacks" | sort -t' ' -k2 -rn | head -4 | cut -c1-700 |
		sed 's/^.*Module._compile@loader[:0-9]*;/        .../'
	good=$(samples "$TMP/n22.istacks" "*" \
		";main_loop@$f:($(line_o CALL_ALPHA));alpha@$f:($(line_o CALL_BETA))\\+inlined;beta@$f:($(line_o CALL_GAMMA))\\+inlined;gamma@$f:($OSR_G)\\+inlined(;|\$)")
	check_pct "node22: n22osr: alpha, beta and gamma inlined into main_loop's OSR code" "$good" "$all" 75
fi
finish
