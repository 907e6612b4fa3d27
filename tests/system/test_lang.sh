#!/bin/bash
# Other code the unwinder meets: C++ (std::sort with a comparator functor), Rust (a chain of
# #[inline(never)] fns; rustc-built, linked by rust-lld), and a library dlopen()ed after the
# recording started. C++/Rust names are not demangled yet: the checks match the stable parts
# of the (demangled) names (ItemCompare::operator(), sort_loop; rust_outer, rust_middle,
# rust_hot).
source "$(dirname "$0")/lib.sh"
need_root

HZ=499

# wl NAME ARGS...: records `NAME ARGS` into $TMP/NAME.folded; prints nothing, 0 on success.
wl()
{
	local name=$1
	shift
	record "$TMP/$name.err" -F $HZ -q -o "$TMP/$name.folded" -- "$FIX/$name" "$@"
	check_eq "$name: exit status" $? 0
}

if have_fixture wl_cxx; then
	wl wl_cxx 2
	f=$TMP/wl_cxx.folded
	total=$(samples "$f" wl_cxx)
	check_ge "wl_cxx: samples" "$total" 100
	# ItemCompare::operator()(int, int) const under main;sort_loop(double) and std::sort
	cmp=$(samples "$f" wl_cxx ';main;[^;]*sort_loop[^;]*;([^;]+;)*ItemCompare::operator\(\)[^;]*(;|$)')
	full=$(samples "$f" wl_cxx \
		"^wl_cxx;${START_RE}main;[^;]*sort_loop[^;]*;([^;]+;)*ItemCompare::operator\\(\\)[^;]*(;|\$)")
	check_pct "wl_cxx: samples in the comparator (ItemCompare::operator()) under main;sort_loop" \
		"$cmp" "$total" 50 || show "$f" wl_cxx
	check_pct "wl_cxx: of those, complete back to _start" "$full" "$cmp" 85
	intro=$(samples "$f" wl_cxx ';[^;]*sort_loop[^;]*;([^;]*;)?[^;]*std::__introsort_loop[^;]*;')
	check_pct "wl_cxx: samples through std::__introsort_loop" "$intro" "$total" 30
fi

if [[ ! -x $FIX/wl_rust ]]; then
	skip "wl_rust: rustc not found when the fixtures were built, Rust not tested"
else
	wl wl_rust 2
	f=$TMP/wl_rust.folded
	total=$(samples "$f" wl_rust)
	check_ge "wl_rust: samples" "$total" 100
	# legacy mangling: _ZN7wl_rust8rust_hot17h<hash>E, or demangled wl_rust::rust_hot
	R='[^;]*rust_outer[^;]*;[^;]*rust_middle[^;]*;[^;]*rust_hot[^;]*'
	chain=$(samples "$f" wl_rust ";$R(;|\$)")
	full=$(samples "$f" wl_rust "^wl_rust;${START_RE}([^;]+;)*[^;]*main[^;]*;$R(;|\$)")
	check_pct "wl_rust: samples in rust_outer;rust_middle;rust_hot" "$chain" "$total" 80 ||
		show "$f" wl_rust
	check_pct "wl_rust: samples complete from _start through main to rust_hot" "$full" \
		"$total" 80
fi

# the same C chain as wl_chain_nofp, linked by lld: text at p_vaddr = p_offset + 0x1000
if [[ ! -x $FIX/wl_chain_lld ]]; then
	skip_setup "wl_chain_lld: ld.lld not found when the fixtures were built"
else
	wl wl_chain_lld 2
	f=$TMP/wl_chain_lld.folded
	total=$(samples "$f" wl_chain_lld)
	full=$(samples "$f" wl_chain_lld \
		"^wl_chain_lld;${START_RE}main;chain_a;chain_b;chain_c;hot_leaf(;|\$)")
	check_ge "wl_chain_lld: samples" "$total" 100
	check_pct "wl_chain_lld: samples with the complete chain" "$full" "$total" 85 ||
		show "$f" wl_chain_lld
fi

if have_fixture wl_dlopen && have_fixture wl_plugin.so; then
	# the plugin is mapped 0.5 s into the recording
	wl wl_dlopen 2
	f=$TMP/wl_dlopen.folded
	total=$(samples "$f" wl_dlopen ';plugin_hot(;|$)')
	full=$(samples "$f" wl_dlopen "^wl_dlopen;${START_RE}main;plugin_entry;plugin_hot(;|\$)")
	check_ge "wl_dlopen: samples in plugin_hot" "$total" 100
	check_pct "wl_dlopen: of those, complete main;plugin_entry;plugin_hot back to _start" \
		"$full" "$total" 85 || show "$f" wl_dlopen
	check_eq "wl_dlopen: dominant stack" "$(dominant "$f" wl_dlopen | sed 's/.*;main;/main;/')" \
		"main;plugin_entry;plugin_hot"
fi

finish
