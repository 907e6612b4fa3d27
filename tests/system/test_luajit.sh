#!/bin/bash
# LuaJIT 2.1 frames interleaved with native frames (bpf/interp/luajit/walk.h,
# src/interp/luajit/), on the LuaJIT of a runtime-matrix root (LUAJIT_SUITE, default bookworm:
# Debian's luajit, GC64; trixie and sid hold OpenResty's builds), run as a container runs it
# (scripts/in_container.sh): the standalone luajit with its JIT on (gamma's loop is a trace)
# and off (-joff), and an embedded LuaJIT (tests/data/lua_embed.c, built here against the
# root's libluajit-5.1.so.2: lua_pcall from C, as nginx/OpenResty), JIT on and off.
# Lines of tests/data/lua_chain.lua are marked "-- HOT", "-- CALL_BETA"... and looked up here.
# Checks, for each: the chain <main> -> alpha -> obj:beta -> M.gamma (functions named as
# LuaJIT's traceback names them, by the caller's call instruction: a global, a method, a
# field), each caller at its call line, right above lua_pcall's VM frame (lj_vm), in >= 95 % of
# gamma's samples; gamma at its hot line in >= 95 %; the stacks
# through the VM complete from _start in >= 95 % (exact unwinding through the VM's helpers and
# trace code); no LuaJIT marker frame beyond 1 %; and the walk's counters (traces unwound with
# the JIT on, leaf helpers with it off).
# And tests/data/lua_cont.lua (standalone, JIT on and off): frames below a pcall and a
# metamethod, each at its caller's line: <main> at its pcall, the pcall'd function (no name: its
# caller is pcall) at the table read that ran __index, __index at its hot line, in >= 95 % of
# __index's samples.
# The other roots' luajit are the runtime matrix's rows (luajit, luajit_joff).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
SUITE=${LUAJIT_SUITE:-bookworm}
root=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/$SUITE
lib=$root/usr/lib/x86_64-linux-gnu/libluajit-5.1.so.2
if [[ ! -f $root/.stackscope-root || ! -x $root/usr/bin/luajit || ! -f $lib ]]; then
	skip_setup "the $SUITE root with luajit (scripts/runtime_root.sh $SUITE, run by scripts/test.sh)"
	finish
fi
ID=$(echo "stackscope-luajit-$$" | sha256sum | cut -c1-64)
WORK=/tmp/stackscope-luajit.$$
mkdir -p "$root$WORK"
trap 'rm -rf "${root:?}$WORK"; cleanup' EXIT
cp "$SS_ROOT/tests/data/lua_chain.lua" "$SS_ROOT/tests/data/lua_cont.lua" "$root$WORK/"
embedded=1
if ! gcc -O2 -g -o "$root$WORK/lua_embed" "$SS_ROOT/tests/data/lua_embed.c" "$lib" 2>"$TMP/cc.err" ||
	! chroot "$root" "$WORK/lua_embed" "$WORK/lua_chain.lua" 0 >/dev/null 2>&1; then
	skip "embedded LuaJIT: lua_embed does not build or run in the $SUITE root: $(head -2 "$TMP/cc.err")"
	embedded=0
fi

lua_line() { grep -nE -- "-- $2\$" "$1" | cut -d: -f1 | paste -sd'|'; }
F=$SS_ROOT/tests/data/lua_chain.lua
C=lua_chain\\.lua
GAMMA="M\\.gamma@$C"
L_HOT=$(lua_line "$F" HOT)
N='[^;@]*;' # one native frame
CHAIN="lua_pcall;lj_vm;<main>@$C:$(lua_line "$F" CALL_ALPHA);alpha@$C:$(lua_line "$F" CALL_BETA);obj:beta@$C:$(lua_line "$F" CALL_GAMMA);$GAMMA:[0-9]+(;[^;@]*)*\$"

# case NAME COMMAND...: the checks above on COMMAND run in the root for 1.5 s of CPU
case_run()
{
	local name=$1 f inc chain hot whole total markers frames
	shift
	record_stacks "$name" "$SS_ROOT/scripts/in_container.sh" "$root" "$ID" "$@"
	f=$TMP/$name.stacks
	total=$(samples "$f" "*" ";lj_vm;")
	inc=$(samples "$f" "*" ";$GAMMA:")
	check_ge "$name: samples in gamma" "$inc" 300
	chain=$(samples "$f" "*" ";$CHAIN")
	check_pct "$name: lua_pcall;lj_vm;<main>;alpha;obj:beta;M.gamma at their call lines" "$chain" "$inc" 95 ||
		show_stacks "$f"
	hot=$(samples "$f" "*" ";$GAMMA:$L_HOT(;|\$)")
	check_pct "$name: gamma at its hot line $L_HOT" "$hot" "$inc" 95 || show_stacks "$f" "$GAMMA"
	whole=$(samples "$f" "*" "^x;_start;__libc_start_main(_impl)?;($N)*main;([^;]*;)*lj_vm;")
	check_pct "$name: stacks through the VM complete from _start" "$whole" "$total" 95 ||
		show_stacks "$f"
	frames=$(grep -o '^luajit .*frames [0-9]* symbolized' "$TMP/$name.err" | grep -o '[0-9]* symbolized' | cut -d' ' -f1)
	markers=$(grep -o '^luajit .* [0-9]* markers' "$TMP/$name.err" | grep -o '[0-9]* markers' | cut -d' ' -f1)
	check_le "$name: LuaJIT marker frames, per thousand frames" \
		"$((${markers:-1000} * 1000 / (${frames:-0} + 1)))" 10
}

# cont_run NAME COMMAND...: lua_cont.lua's chain, run as case_run runs lua_chain.lua
cont_run()
{
	local name=$1 f c=lua_cont\\.lua g=$SS_ROOT/tests/data/lua_cont.lua inc chain mm
	shift
	record_stacks "$name" "$SS_ROOT/scripts/in_container.sh" "$root" "$ID" "$@"
	f=$TMP/$name.stacks
	mm="__index@$c:$(lua_line "$g" HOT)(;[^;@]*)*\$"
	inc=$(samples "$f" "*" ";__index@$c:")
	check_ge "$name: samples in __index" "$inc" 300
	chain=$(samples "$f" "*" ";lua_pcall;lj_vm;<main>@$c:$(lua_line "$g" CALL_PCALL);<$c:$(lua_line "$g" DEF_OUTER)>@$c:$(lua_line "$g" CALL_INDEX);$mm")
	check_pct "$name: <main> at its pcall, the pcall'd function at its table read, __index at its hot line" \
		"$chain" "$inc" 95 || show_stacks "$f"
}

case_run jit luajit "$WORK/lua_chain.lua" 1.5
check_summary "$TMP/jit.err" luajit 200 "JIT traces" "Lua frames"
case_run joff luajit -joff "$WORK/lua_chain.lua" 1.5
check_summary "$TMP/joff.err" luajit 100 "leaf helpers" "Lua frames"
if ((embedded)); then
	case_run embedded "$WORK/lua_embed" "$WORK/lua_chain.lua" 1.5
	check_summary "$TMP/embedded.err" luajit 200 "JIT traces"
	case_run embedded_joff "$WORK/lua_embed" "$WORK/lua_chain.lua" 1.5 off
fi
cont_run cont_jit luajit "$WORK/lua_cont.lua" 1.5
cont_run cont_joff luajit -joff "$WORK/lua_cont.lua" 1.5

finish
