#!/bin/bash
# Frames that merge and runtime internals folded (issue 38), with Debian's stripped
# interpreters of the host: ruby3.1 (libruby stripped to .dynsym), php8.2 and perl.
#  - every native frame between two script frames is named by its function (a symbol, or the
#    file and the start of its .eh_frame FDE: "libruby-3.1.so.3.1.2+0x24ebd0"), so one VM
#    function is one frame: fold_check.py places each such location in its FDE with readelf's
#    view of the file and counts functions shown under two names ("split") or under a "+0x"
#    name that is not their start ("misnamed"); both must be 0. The pprof of a --fold runtime
#    recording still has those frames (pprof keeps every frame).
#  - `record --fold runtime`'s folded output: the known chain's script frames are adjacent (no
#    VM frame between them) and form one column: one stack prefix down to the chain's end
#    holds (nearly) all of the samples that reach it.
#  - `store query --fold runtime` folds a stored profile the same way.
# Workloads: tests/data/{rb,php,perl}_{chain,mixed}.*, 1.5-2 s each at 499 Hz.
source "$(dirname "$0")/lib.sh"
need_root

HZ=499
DATA=$SS_ROOT/tests/data
CHECK=$SS_ROOT/tests/system/fold_check.py

# fold_record NAME COMMAND...: records COMMAND into $TMP/NAME.pb.gz and, folded by runtime,
# $TMP/NAME.folded
fold_record()
{
	local name=$1
	shift
	record "$TMP/$name.err" -q -F $HZ -o "$TMP/$name.pb.gz" -o "$TMP/$name.folded" \
		--fold runtime -- "$@" >/dev/null
	check_eq "$name: exit status" $? 0
}

# vm_frames NAME MIN_FUNCTIONS: fold_check.py's counts for NAME's pprof
vm_frames()
{
	local out fn split mis
	out=$(python3 "$CHECK" "$TMP/$1.pb.gz")
	echo "    $1: $out"
	fn=$(sed -E 's/.*functions=([0-9]+).*/\1/' <<<"$out")
	split=$(sed -E 's/.*split=([0-9]+).*/\1/' <<<"$out")
	mis=$(sed -E 's/.*misnamed=([0-9]+).*/\1/' <<<"$out")
	check_ge "$1: pprof keeps the VM functions between script frames" "${fn:-0}" "$2"
	check_eq "$1: VM functions shown under more than one frame" "${split:-x}" 0
	check_eq "$1: '+0x' frames not at their function's start" "${mis:-x}" 0
}

# column NAME COMM CHAIN: (CHAIN is literal text, not a regex) of COMM's folded samples that have the ';'-joined CHAIN, the share of
# the most common stack prefix down to CHAIN's end (percent), and how many samples have it
column()
{
	awk -v comm="$2" -v chain=";$3" '
		{
			n = $NF; stack = $0; sub(/ [0-9]+$/, "", stack)
			c = stack; sub(/;.*/, "", c)
			if (c != comm) next
			s = stack ";"
			i = index(s, chain ";")
			if (!i) next
			p = substr(s, 1, i + length(chain))
			by[p] += n; all += n
		}
		END {
			for (p in by) if (by[p] > best) best = by[p]
			printf "%d %d\n", all ? best * 100 / all : 0, all + 0
		}' "$TMP/$1.folded"
}

# chain_checks NAME COMM CHAIN
chain_checks()
{
	local pct n
	read -r pct n < <(column "$1" "$2" "$3")
	check_ge "$1: samples through the adjacent chain '$3'" "$n" 100 ||
		show "$TMP/$1.folded" "$2"
	check_ge "$1: share of them in one column (%)" "$pct" 90 || show "$TMP/$1.folded" "$2"
}

if [[ -x /usr/bin/ruby3.1 ]]; then
	fold_record rb_chain /usr/bin/ruby3.1 --disable-gems "$DATA/rb_chain.rb" 1.5
	chain_checks rb_chain ruby3.1 '<main>;Worker#alpha;Worker#beta;Worker#gamma'
	vm_frames rb_chain 0
	fold_record rb_mixed /usr/bin/ruby3.1 --disable-gems "$DATA/rb_mixed.rb" 2
	vm_frames rb_mixed 3
else
	skip_setup "ruby3.1 not installed (scripts/setup.sh): its checks"
fi

if [[ -x /usr/bin/php8.2 ]]; then
	fold_record php_chain /usr/bin/php8.2 "$DATA/php_chain.php" 1.5
	chain_checks php_chain php8.2 '{main};Worker::run;alpha;beta;gamma'
	vm_frames php_chain 0
	fold_record php_mixed /usr/bin/php8.2 "$DATA/php_mixed.php" 2
	vm_frames php_mixed 3
else
	skip_setup "php8.2 not installed (scripts/setup.sh): its checks"
fi

if [[ -x /usr/bin/perl ]]; then
	fold_record pl_chain /usr/bin/perl "$DATA/perl_chain.pl" 1.5
	chain_checks pl_chain perl 'main;main::alpha;main::beta;main::gamma'
	vm_frames pl_chain 0
	fold_record pl_mixed /usr/bin/perl "$DATA/perl_mixed.pl" 2
	vm_frames pl_mixed 3
else
	skip_setup "perl not installed: its checks"
fi

# the store folds a stored profile the same way; its pprof keeps every frame
if [[ -s $TMP/php_mixed.pb.gz ]]; then
	"$SS" store import --store "$TMP/s.db" "$TMP/php_mixed.pb.gz" >/dev/null 2>&1
	"$SS" store query --store "$TMP/s.db" --fold runtime -o "$TMP/q.folded" 2>/dev/null
	"$SS" store query --store "$TMP/s.db" -o "$TMP/q_raw.folded" 2>/dev/null
	check_eq "store query --fold runtime: no VM frame between array_map and md5" \
		"$(samples "$TMP/q.folded" php8.2 ';array_map;[^;]*;zend_call_function;md5')" 0
	check_ge "store query: unfolded, the VM frames are there" \
		"$(samples "$TMP/q_raw.folded" php8.2 ';array_map;[^;]*;zend_call_function;md5')" 1
	check_ge "store query --fold runtime: array_map;md5 adjacent" \
		"$(samples "$TMP/q.folded" php8.2 ';array_map;md5(;|$)')" 1
	check_eq "store query --fold runtime: as many samples as unfolded" \
		"$(samples "$TMP/q.folded" '*')" "$(samples "$TMP/q_raw.folded" '*')"
fi

finish
