#!/bin/bash
# scripts/layers.sh (`make layers`) on this tree, and on copies of it with one forbidden include
# added each: the check must pass on the tree, fail on each copy naming the file and line, and
# pass on a copy with an include the layers allow. Prints the unit tests' closing line.
cd "$(dirname "$0")/../.." || exit 1
passed=0 failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

out=$(scripts/layers.sh 2>&1)
if [[ $? -eq 0 ]]; then ok "the tree keeps its layers"; else fail "the tree keeps its layers"; printf '%s\n' "$out"; fi

tmp=$(mktemp -d /tmp/stackscope-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# injected FILE INCLUDE WANT: a copy of src/ and bpf/ with `#include "INCLUDE"` added at the top
# of FILE; WANT fail: the check exits 1 and names FILE:1; WANT pass: it exits 0
injected()
{
	local file=$1 inc=$2 want=$3 rc
	rm -rf "$tmp/t" && mkdir -p "$tmp/t/scripts" && cp -r src bpf "$tmp/t/" &&
		cp scripts/layers.sh "$tmp/t/scripts/"
	{ printf '#include "%s"\n' "$inc"; cat "$file"; } >"$tmp/t/$file"
	out=$("$tmp/t/scripts/layers.sh" "$tmp/t" 2>&1)
	rc=$?
	if [[ $want == fail ]]; then
		if [[ $rc -eq 1 && $out == *"$file:1: includes $inc"* ]]; then
			ok "refused: $file includes $inc"
		else
			fail "refused: $file includes $inc (exit $rc)"
			printf '%s\n' "$out" | tail -3
		fi
	elif [[ $rc -eq 0 ]]; then
		ok "allowed: $file includes $inc"
	else
		fail "allowed: $file includes $inc (exit $rc)"
		printf '%s\n' "$out" | tail -3
	fi
}

injected src/proc/process.c unwind/unwind_maps.h fail     # identity below the unwinder
injected src/formats/dwarf.c proc/process.h fail          # parsers know no /proc
injected src/unwind/unwind_maps.c interp/interp.h fail    # siblings never include one another
injected src/interp/python/python.c interp/ruby/ruby_lines.h fail # nor runtimes
injected src/interp/registry.c interp/common/symbol_cache.h fail # the interface is below its helpers
injected src/base/log.c formats/elf_file.h fail      # base is the bottom
injected src/export/pprof.c pipeline/session.h fail       # a sink is above export
injected src/pipeline/session.c cli/option_value.h fail   # cli is the top
injected bpf/sampler.bpf.c interp/ruby/walk.h fail         # walks: through the dispatcher only
injected bpf/interp/ruby/walk.h interp/perl/bpf_abi.h fail # a walk knows no other runtime
injected bpf/interp/ruby/walk.h native_unwind.h fail       # nor the native unwinder
injected src/proc/process.c formats/elf_file.h pass       # a layer below
injected src/interp/python/python.c interp/common/interp_elf.h pass
injected bpf/interp/ruby/walk.h counter_list.h pass

echo "$passed passed, $failed failed, 0 skipped"
((failed == 0))
