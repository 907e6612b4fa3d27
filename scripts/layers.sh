#!/bin/bash
# `make layers`: the folders of src/ and bpf/ form layers, checked over every `#include "..."`.
# Each folder may include only the folders listed for it below (and itself); any other include
# is printed as FILE:LINE and the check fails. docs/ARCHITECTURE.md ("Layers") explains them.
#
#   base <- formats <- proc <- { unwind | interp | symbolize } <- pipeline <- cli
#           profile <- export <- store <- serve;  profile <- top;  proc <- sampler
#
# Names on the right-hand side:
#   abi       the layouts userspace and eBPF share: bpf/abi.h, bpf/arch/, bpf/interp/**/ abi
#             headers (any bpf/ header whose name ends in abi.h, and bpf/arch/*), the counter
#             lists (bpf/counter_list.h)
#   bpf_code  the eBPF walks themselves (bpf/native_unwind.h ...): only the userspace replay
#             of the native walk (unwind/stack_replay.c) compiles them outside eBPF
#   skel      build/*.skel.h, the generated skeleton: the sampler loads the programs
#   rt        interp/<runtime>/: its own folder, never another runtime's
# For bpf/: a runtime's folder (bpf/interp/<rt>/) includes bpf/interp/common.h, the ABI and its
# own folder only; its walk (walk.h) is included by the dispatcher (bpf/interp/dispatch.h) and
# nothing else of bpf/ (its other headers, as Go's labels read per sample, by the programs too);
# the tests under tests/ may include anything.
# Usage: scripts/layers.sh [ROOT (the repository)]; exit 0 clean, 1 a forbidden include.
set -uo pipefail
set -f # the allow lists hold "*"
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# One awk pass: first every file of src/ and bpf/ (to resolve includes as the compiler does:
# the including file's folder, then -Isrc, then -Ibpf), then every include line.
files=$(find src bpf -name '*.[ch]' | sort)
{
	printf 'F %s\n' $files
	grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files | sed 's/^/I /'
} | awk '
BEGIN {
	# folder -> the folders it may include besides itself ("rt": a runtime folder
	# src/interp/<rt>/, which may include its own folder and no other runtime"s)
	allow["base"] = ""
	allow["formats"] = "base"
	allow["profile"] = "base"
	allow["proc"] = "base formats abi"
	allow["sampler"] = "base formats proc abi skel"
	allow["unwind"] = "base formats proc abi bpf_code"
	allow["interp"] = "base formats proc abi interp"
	allow["interp/common"] = "base formats proc abi interp"
	allow["rt"] = "base formats proc abi interp interp/common"
	allow["symbolize"] = "base formats proc abi"
	allow["export"] = "base formats profile"
	allow["store"] = "base formats profile export"
	allow["serve"] = "base formats profile export store"
	allow["top"] = "base profile"
	allow["pipeline"] = "base formats proc abi profile sampler unwind interp interp/common rt symbolize export store skel"
	allow["cli"] = "*"
	bad = 0
}
# the layer of a path; for a runtime folder, rt[] gets its name
function layer(p,   a, n) {
	n = split(p, a, "/")
	if (p ~ /^src\/interp\/common\//) return "interp/common"
	if (p ~ /^src\/interp\/[^\/]+\//) { rtname = a[3]; return "rt" }
	if (p ~ /^src\/[^\/]+\//) return a[2]
	if (p ~ /^bpf\/arch\// || p ~ /^bpf\/.*abi\.h$/ || p == "bpf/counter_list.h") return "abi"
	if (p ~ /\.skel\.h$/) return "skel"
	if (p ~ /^bpf\//) return "bpf_code"
	return "?"
}
function resolve(file, inc,   d) {
	d = file; sub(/\/[^\/]*$/, "", d)
	if ((d "/" inc) in exists) return d "/" inc
	if (("src/" inc) in exists) return "src/" inc
	if (("bpf/" inc) in exists) return "bpf/" inc
	if (inc ~ /\.skel\.h$/) return "build/" inc
	return "?/" inc
}
function allowed(from, to,   a, n, i) {
	n = split(allow[from], a, " ")
	for (i = 1; i <= n; i++)
		if (a[i] == "*" || a[i] == to) return 1
	return 0
}
function refuse(file, line, inc, why) {
	print file ":" line ": includes " inc ": " why
	bad = 1
}
$1 == "F" { exists[$2] = 1; next }
$1 == "I" {
	rest = substr($0, 3)
	i = index(rest, ":"); file = substr(rest, 1, i - 1); rest = substr(rest, i + 1)
	i = index(rest, ":"); line = substr(rest, 1, i - 1); rest = substr(rest, i + 1)
	inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
	target = resolve(file, inc)
	if (file ~ /^src\//) {
		rtname = ""; from = layer(file); rt_from = rtname
		rtname = ""; to = layer(target); rt_to = rtname
		if (from == "rt" && to == "rt") {
			if (rt_from != rt_to) refuse(file, line, inc, "another runtime\x27s folder")
			next
		}
		if (to == from) next
		if (!allowed(from, to))
			refuse(file, line, inc, "(" to ") " from " may include only: " \
			       (allow[from] == "" ? "itself" : allow[from]))
		next
	}
	# bpf/: the runtimes\x27 walks (bpf/interp/<rt>/walk.h) are included by the dispatcher only;
	# a runtime folder includes common.h, the ABI and its own folder
	if (target ~ /^bpf\/interp\/[^\/]+\//) {
		owner = target; sub(/^bpf\/interp\//, "", owner); sub(/\/.*/, "", owner)
		if (file ~ /^bpf\/interp\/[^\/]+\//) {
			mine = file; sub(/^bpf\/interp\//, "", mine); sub(/\/.*/, "", mine)
			if (mine != owner) refuse(file, line, inc, "another runtime\x27s folder")
		} else if (file != "bpf/interp/dispatch.h" && target ~ /\/walk\.h$/)
			refuse(file, line, inc, "a runtime\x27s walk outside bpf/interp/dispatch.h")
	} else if (file ~ /^bpf\/interp\/[^\/]+\// && target ~ /^bpf\// &&
		   target != "bpf/interp/common.h" && layer(target) != "abi")
		refuse(file, line, inc, "a runtime\x27s walk includes only bpf/interp/common.h and the ABI")
}
END {
	if (bad) {
		print "layers: forbidden includes above (scripts/layers.sh says which folder may include what)"
		exit 1
	}
}' || exit 1
echo "layers: ok ($(printf '%s\n' $files | wc -l) files)"
