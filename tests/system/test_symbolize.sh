#!/bin/bash
# `stackscope symbolize`: a recording made with --no-symbolize has only "basename+0x..." frames;
# symbolize turns them into the known forced-inline chain of tests/data/sym_inline.c
# (sym_leaf <- sym_middle <- sym_outer <- sym_entry, then sym_run <- main) with the source
# lines of the "call:" markers, equal to `addr2line -f -i` at the same addresses (return
# addresses minus one; not the user frame right below kernel frames), and sets the mapping's
# has_* flags. Then a stripped copy: nothing without its debug file, the chain with
# --debug-dir DIR (DIR/.build-id/xx/yyyy.debug), with a copy at DIR/<basename>, and not with
# another binary of that name. Bad input: exit 1 with a one-line error.
# Output is read with `go tool pprof -raw -symbolize=none` (pprof must not symbolize itself).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture sym_inline || finish
have_fixture sym_inline_stripped || finish

GO=${GO:-$( [[ -x /usr/lib/go/bin/go ]] && echo /usr/lib/go/bin/go || command -v go)}
if [[ ! -x $GO ]]; then
	skip_setup "symbolize: go not found (go tool pprof reads the profiles)"
	finish
fi
export HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local
SRC=$SS_ROOT/tests/data
marker() { grep -n "$2" "$SRC/$1" | head -1 | cut -d: -f1; }
L_MIDDLE=$(marker sym_inline.c 'call:sym_leaf')
L_OUTER=$(marker sym_inline.c 'call:sym_middle')
L_ENTRY=$(marker sym_inline.c 'call:sym_outer')
L_RUN=$(marker sym_inline.c 'call:sym_entry')
L_LEAF0=$(marker sym_inline.h 'sym_leaf: body start')
L_LEAF1=$(marker sym_inline.h 'sym_leaf: body end')
# the inline chain at the hot loop, innermost first, as "function@file:line;..."
CHAIN_RE="^sym_leaf@sym_inline\\.h:[0-9]+;sym_middle@sym_inline\\.c:$L_MIDDLE;"
CHAIN_RE+="sym_outer@sym_inline\\.c:$L_OUTER;sym_entry@sym_inline\\.c:$L_ENTRY\$"
RUN_RE="^sym_run@sym_inline\\.c:$L_RUN\$"

# raw FILE: `go tool pprof -raw` as lines "MAP id file flags", then "LOC id address mapping
# chain" (chain: "function@file:line;...", innermost first), then "SAMPLE count id..." (ids
# leaf first), so that one pass of awk sees mappings before locations before samples.
raw()
{
	"$GO" tool pprof -raw -symbolize=none "$1" 2>"$TMP/pprof.err" | awk '
		function flush() {
			if (id != "") locs[++nl] = "LOC " id " " addr " " map " " chain
			id = ""
		}
		function add(fn, pos) {
			sub(/ s=[0-9]+$/, "", pos); n = split(pos, parts, "/"); pos = parts[n]
			chain = chain (chain == "" ? "" : ";") fn "@" pos
		}
		/^Samples:/ { sec = "s"; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { flush(); sec = "m"; next }
		sec == "s" && /^ *[0-9]+ +[0-9]+: / {
			line = $0; sub(/^ *[0-9]+ +[0-9]+: /, "", line)
			samples[++ns] = "SAMPLE " $1 " " line
		}
		sec == "l" && /^ *[0-9]+: 0x/ {
			flush(); id = $1; sub(/:$/, "", id)
			addr = $2; map = $3; sub(/^M=/, "", map)
			chain = ""; add($4, $5); next
		}
		sec == "l" && /^ +[^ ]/ { add($1, $2) }
		sec == "m" && /^[0-9]+: / {
			f = ""; for (i = 3; i <= NF; i++) if ($i ~ /^\[/) f = f $i
			mid = $1; sub(/:$/, "", mid); print "MAP", mid, $3, f
		}
		END {
			flush()
			for (i = 1; i <= nl; i++) print locs[i]
			for (i = 1; i <= ns; i++) print samples[i]
		}'
}

# chain_samples RAWFILE: samples whose stack holds the chain, then sym_run, then main.
chain_samples()
{
	awk -v chain_re="$CHAIN_RE" -v run_re="$RUN_RE" '
		$1 == "LOC" { c[$2] = $5 }
		$1 == "SAMPLE" {
			for (i = 3; i + 2 <= NF; i++)
				if (c[$i] ~ chain_re && c[$(i + 1)] ~ run_re &&
				    c[$(i + 2)] ~ /^main@sym_inline\.c:[0-9]+$/) { n += $2; break }
		}
		END { print n + 0 }' "$1"
}

total_samples() { awk '$1 == "SAMPLE" { n += $2 } END { print n + 0 }' "$1"; }

# named RAWFILE: locations of the workload's mapping (file $2) named after a sym_ function.
named() { awk -v f="$2" '$1 == "MAP" && $3 ~ f { m[$2] = 1 }
	$1 == "LOC" && m[$4] && $5 ~ /(^|;)sym_[a-z]+@/ { n++ } END { print n + 0 }' "$1"; }

# placeholders RAWFILE FILE: locations of FILE's mapping named "basename+0xADDR".
placeholders()
{
	awk -v f="$2" -v base="${2##*/}" '$1 == "MAP" && $3 ~ f { m[$2] = 1 }
		$1 == "LOC" && m[$4] && index($5, base "+0x") == 1 { n++ } END { print n + 0 }' "$1"
}

# leaf_lines_ok RAWFILE: every sym_leaf line lies inside sym_leaf's body.
leaf_lines_bad()
{
	awk -v lo="$L_LEAF0" -v hi="$L_LEAF1" '$1 == "LOC" && $5 ~ /^sym_leaf@/ {
		l = $5; sub(/;.*/, "", l); sub(/.*:/, "", l); if (l + 0 < lo || l + 0 > hi) bad++
		} END { print bad + 0 }' "$1"
}

# addr2line_mismatches RAWFILE BINARY: symbolized locations of BINARY whose chain differs
# from `addr2line -f -i` at the address (minus one for a caller).
addr2line_mismatches()
{
	local raw=$1 bin=$2 id addr chain want a bad=0 checked=0
	while read -r id addr chain; do
		a=$((addr))
		# a return address: below a frame that is not kernel code
		awk -v id="$id" '$1 == "MAP" && $3 == "[kernel.kallsyms]" { km[$2] = 1 }
			$1 == "LOC" && km[$4] { k[$2] = 1 }
			$1 == "SAMPLE" {
				for (i = 4; i <= NF; i++) if ($i == id && !k[$(i - 1)]) f = 1
			}
			END { exit !f }' "$raw" && a=$((a - 1))
		want=$(addr2line -f -i -e "$bin" "$(printf '0x%x' "$a")" | awk '
			NR % 2 == 1 { fn = $1; next }
			{ p = $1; n = split(p, parts, "/"); p = parts[n]
			  s = s (s == "" ? "" : ";") fn "@" p }
			END { print s }')
		checked=$((checked + 1))
		if [[ $want != "$chain" ]]; then
			bad=$((bad + 1))
			echo "        $addr: got '$chain', addr2line '$want'" >&2
		fi
	done < <(awk -v f="$bin" '$1 == "MAP" && $3 == f { m[$2] = 1 }
		$1 == "LOC" && m[$4] && $5 ~ /^(sym_|main@)/ { print $2, $3, $5 }' "$raw")
	echo "$bad $checked"
}

# ---- an unstripped -O2 -g workload, recorded without symbolization ----
spawn pid "$FIX/sym_inline" 6
sleep 0.3
record "$TMP/r.err" -F 499 -d 1.5 -q -p "$pid" --no-symbolize -o "$TMP/in.pb.gz"
check_eq "record --no-symbolize: exit status" $? 0
raw "$TMP/in.pb.gz" >"$TMP/in.raw"
total=$(total_samples "$TMP/in.raw")
check_ge "input: samples" "$total" 100
check_eq "input: no sym_* function names" "$(named "$TMP/in.raw" "$FIX/sym_inline")" 0
check_ge "input: sym_inline+0x... locations" "$(placeholders "$TMP/in.raw" "$FIX/sym_inline")" 3
check_eq "input: the mapping says it has no functions" \
	"$(awk -v f="$FIX/sym_inline" '$1 == "MAP" && $3 == f { print $4 "-" }' "$TMP/in.raw")" "-"

s=$SECONDS
timeout 20 "$SS" symbolize "$TMP/in.pb.gz" -o "$TMP/out.pb.gz" --no-debuginfod 2>"$TMP/s.err"
check_eq "symbolize: exit status" $? 0
check_le "symbolize: seconds" $((SECONDS - s)) 10
check "symbolize: summary counts symbolized locations" \
	grep -Eq '^locations +[1-9][0-9]* symbolized \([1-9][0-9]* with source lines' "$TMP/s.err"
raw "$TMP/out.pb.gz" >"$TMP/out.raw"
check_eq "output: same sample total" "$(total_samples "$TMP/out.raw")" "$total"
n=$(chain_samples "$TMP/out.raw")
chain="sym_leaf<-sym_middle:$L_MIDDLE<-sym_outer:$L_OUTER<-sym_entry:$L_ENTRY<-sym_run:$L_RUN"
check_pct "output: samples in $chain<-main" \
	"$n" "$total" 80
check_eq "output: sym_leaf lines inside its body ($L_LEAF0-$L_LEAF1)" \
	"$(leaf_lines_bad "$TMP/out.raw")" 0
check_eq "output: sym_inline+0x... locations left" \
	"$(placeholders "$TMP/out.raw" "$FIX/sym_inline")" 0
flags=$(awk -v f="$FIX/sym_inline" '$1 == "MAP" && $3 == f { print $4 }' "$TMP/out.raw")
check "output: mapping flags [FN] and [IN] (got '$flags')" \
	test "${flags#*\[FN\]}" != "$flags" -a "${flags#*\[IN\]}" != "$flags"
read -r bad checked < <(addr2line_mismatches "$TMP/out.raw" "$FIX/sym_inline")
check_ge "output: locations compared with addr2line -f -i" "$checked" 3
check_eq "output: chains that differ from addr2line -f -i" "$bad" 0
check "output: labels kept" grep -q "comm:\[sym_inline\]" \
	<("$GO" tool pprof -raw -symbolize=none "$TMP/out.pb.gz" 2>/dev/null)

# ---- a stripped copy: its debug file only in a .build-id tree ----
spawn pid2 "$FIX/sym_inline_stripped" 6
sleep 0.3
record "$TMP/r2.err" -F 499 -d 1.5 -q -p "$pid2" --no-symbolize -o "$TMP/in2.pb.gz"
check_eq "stripped: record exit status" $? 0
total2=$(total_samples <(raw "$TMP/in2.pb.gz"))
check_ge "stripped: samples" "$total2" 100

"$SS" symbolize "$TMP/in2.pb.gz" -o "$TMP/none.pb.gz" --no-debuginfod 2>"$TMP/s2.err"
check_eq "stripped, no --debug-dir: exit status" $? 0
raw "$TMP/none.pb.gz" >"$TMP/none.raw"
check_eq "stripped, no --debug-dir: no sym_* names" \
	"$(named "$TMP/none.raw" "$FIX/sym_inline_stripped")" 0
check_ge "stripped, no --debug-dir: sym_inline_stripped+0x... locations kept" \
	"$(placeholders "$TMP/none.raw" "$FIX/sym_inline_stripped")" 3
check "stripped, no --debug-dir: summary counts addresses left" \
	grep -Eq '^left as addresses +[1-9]' "$TMP/s2.err"

"$SS" symbolize "$TMP/in2.pb.gz" -o "$TMP/dd.pb.gz" --no-debuginfod \
	--debug-dir "$FIX/sym_debugroot" 2>"$TMP/s3.err"
check_eq "stripped, --debug-dir .build-id tree: exit status" $? 0
raw "$TMP/dd.pb.gz" >"$TMP/dd.raw"
check_pct "stripped, --debug-dir .build-id tree: samples in the chain" \
	"$(chain_samples "$TMP/dd.raw")" "$total2" 80
# addr2line on the stripped binary knows nothing: compare with the unstripped one instead
sed "s#$FIX/sym_inline_stripped#$FIX/sym_inline#" "$TMP/dd.raw" >"$TMP/dd2.raw"
read -r bad checked < <(addr2line_mismatches "$TMP/dd2.raw" "$FIX/sym_inline")
check_ge "stripped: locations compared with addr2line" "$checked" 3
check_eq "stripped: chains that differ from addr2line -f -i" "$bad" 0

mkdir -p "$TMP/byname" "$TMP/wrong"
cp "$FIX/sym_inline" "$TMP/byname/sym_inline_stripped"
"$SS" symbolize "$TMP/in2.pb.gz" -o "$TMP/bn.pb.gz" --no-debuginfod --debug-dir "$TMP/byname" \
	2>"$TMP/s4.err"
check_eq "stripped, --debug-dir DIR/<basename>: exit status" $? 0
check_pct "stripped, --debug-dir DIR/<basename>: samples in the chain" \
	"$(chain_samples <(raw "$TMP/bn.pb.gz"))" "$total2" 80
cp "$FIX/wl_chain_nofp" "$TMP/wrong/sym_inline_stripped" 2>/dev/null ||
	cp /bin/true "$TMP/wrong/sym_inline_stripped"
"$SS" symbolize "$TMP/in2.pb.gz" -o "$TMP/wr.pb.gz" --no-debuginfod --debug-dir "$TMP/wrong" \
	2>"$TMP/s5.err"
check_eq "stripped, another build at DIR/<basename>: exit status" $? 0
raw "$TMP/wr.pb.gz" >"$TMP/wr.raw"
check_eq "stripped, another build at DIR/<basename>: not used" \
	"$(named "$TMP/wr.raw" "$FIX/sym_inline_stripped")" 0
check_ge "stripped, another build at DIR/<basename>: addresses kept" \
	"$(placeholders "$TMP/wr.raw" "$FIX/sym_inline_stripped")" 3
check "stripped, another build at DIR/<basename>: summary says why" \
	grep -q "only files of another build" "$TMP/s5.err"

# ---- bad input ----
head -c 300 "$TMP/in.pb.gz" >"$TMP/cut.pb.gz"
"$SS" symbolize "$TMP/cut.pb.gz" -o "$TMP/x.pb.gz" 2>"$TMP/e1.err"
check_eq "truncated input: exit status" $? 1
check_eq "truncated input: one line of error" "$(wc -l <"$TMP/e1.err")" 1
check "truncated input: the error names the file" grep -q "cut.pb.gz" "$TMP/e1.err"
check "truncated input: no output file" test ! -e "$TMP/x.pb.gz"
"$SS" symbolize "$TMP/missing.pb.gz" -o "$TMP/x.pb.gz" 2>"$TMP/e2.err"
check_eq "missing input: exit status" $? 1
check "missing input: says so" grep -q "No such file" "$TMP/e2.err"
"$SS" symbolize "$TMP/in.pb.gz" 2>"$TMP/e3.err"
check_eq "no -o: usage error" $? 2

finish
