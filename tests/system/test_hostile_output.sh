#!/bin/bash
# Output paths that users point root at (src/base/output_file.h): -o /dev/null stays a device;
# symlinks planted at the temporary names or at the target make root overwrite nothing; a
# FIFO is written in place, once, when its reader is there, and never hangs option parsing;
# "-o -" is standard output; an unwritable folder is one error line before sampling; the same
# for `symbolize -o`; an unwind-table cache folder or an agent output folder planted as a
# symlink to a user's folder is refused (no file appears there).
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_fp || finish
BURN="$FIX/wl_chain_fp"
NOBODY=65534

# A folder any user may write to (sticky, like /tmp), and a file a user would like root to
# overwrite.
SHARED=$TMP/shared
mkdir "$SHARED" && chmod 1777 "$SHARED"
VICTIM=$TMP/victim
echo precious >"$VICTIM"

victim_intact()
{
	[[ -f $VICTIM && ! -L $VICTIM && $(cat "$VICTIM") == precious ]]
}

# plant LINK TARGET: a symlink owned by an ordinary user, as that user would leave it.
plant()
{
	ln -sfn "$2" "$1" && chown -h "$NOBODY:$NOBODY" "$1"
}

# in_private_dev COMMAND...: runs COMMAND with /dev/null bind-mounted onto itself in a private
# mount namespace, so that a broken build cannot rename a file over the machine's /dev/null
# (a mount point cannot be replaced: it fails instead).
in_private_dev()
{
	unshare -m --propagation private sh -c 'mount --bind /dev/null /dev/null && exec "$@"' \
		sh "$@"
}

# one_line_error DESCRIPTION RC ERRFILE PATTERN: a non-zero exit (not a timeout) with exactly
# one stderr line matching PATTERN and no "recording" banner.
one_line_error()
{
	local what=$1 rc=$2 err=$3 pat=$4 lines
	lines=$(grep -c . "$err")
	if [[ $rc -ne 0 && $rc -ne 124 && $lines -eq 1 ]] && grep -Eiq "$pat" "$err" &&
		! grep -qi recording "$err"; then
		ok "$what: exit $rc: $(cat "$err")"
	else
		fail "$what: exit $rc, $lines stderr lines: $(head -c 400 "$err" | tr '\n' '|')"
	fi
}

# folded_ok FILE COMM: FILE holds folded lines ("stack count"), with samples of COMM.
folded_ok()
{
	[[ -s $1 ]] && ! grep -Evq '^[^ ].* [0-9]+$' "$1" && [[ $(samples "$1" "$2") -gt 0 ]]
}

echo "# -o /dev/null"
in_private_dev timeout -k 5 "$SS_TIMEOUT" "$SS" record -d 1 -q -o /dev/null 2>"$TMP/null.err"
rc=$?
check_eq "record -d 1 -o /dev/null: exit status ($(head -c 200 "$TMP/null.err"))" "$rc" 0
check "record -o /dev/null: /dev/null is still a character device" test -c /dev/null
check "record -o /dev/null: no /dev/null.tmp left" test ! -e /dev/null.tmp

echo "# symlinks at the temporary names"
out=$SHARED/prof.folded
for name in "$out.tmp" "$out~" "$SHARED/.prof.folded.tmp"; do
	plant "$name" "$VICTIM"
done
record "$TMP/tmp.err" -q -o "$out" -- "$BURN" 1
check_eq "symlink at PATH.tmp: exit status ($(head -c 200 "$TMP/tmp.err"))" $? 0
check "symlink at PATH.tmp: the victim is unchanged" victim_intact
check "symlink at PATH.tmp: the output is a regular file with the profile" \
	folded_ok "$out" wl_chain_fp
check "symlink at PATH.tmp: the planted link is still a link" test -L "$out.tmp"
check_eq "symlink at PATH.tmp: no temporary of ours left" \
	"$(find "$SHARED" -name 'prof.folded.*.tmp' ! -type l | wc -l)" 0

# pprof and SVG too, both in one recording, each with a planted PATH.tmp
plant "$SHARED/p.pb.gz.tmp" "$VICTIM"
plant "$SHARED/p.svg.tmp" "$VICTIM"
record "$TMP/tmp2.err" -q -o "$SHARED/p.pb.gz" -o "$SHARED/p.svg" -- "$BURN" 1
check_eq "symlinks at pprof/svg PATH.tmp: exit status" $? 0
check "symlinks at pprof/svg PATH.tmp: the victim is unchanged" victim_intact
check "symlinks at pprof/svg PATH.tmp: a gzip pprof written" gzip -t "$SHARED/p.pb.gz"
check "symlinks at pprof/svg PATH.tmp: an SVG written" grep -q '</svg>' "$SHARED/p.svg"

echo "# a symlink at the target itself"
plant "$SHARED/link.folded" "$VICTIM"
start=$(date +%s%N)
record "$TMP/link.err" -q -o "$SHARED/link.folded" -- "$BURN" 1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
one_line_error "-o a user's symlink to a root file: refused" $rc "$TMP/link.err" 'symbolic link'
check_le "-o a user's symlink: refused before sampling (ms)" "$ms" 2000
check "-o a user's symlink: the victim is unchanged" victim_intact
check "-o a user's symlink: the link is still there" test -L "$SHARED/link.folded"
# a dangling one, which a rename or O_CREAT would turn into a new root file
plant "$SHARED/dangling.folded" "$TMP/created-by-root"
record "$TMP/dangling.err" -q -o "$SHARED/dangling.folded" -- "$BURN" 1
one_line_error "-o a dangling symlink: refused" $? "$TMP/dangling.err" 'symbolic link'
check "-o a dangling symlink: nothing created at its target" test ! -e "$TMP/created-by-root"

echo "# FIFOs"
fifo=$TMP/fifo.folded
mkfifo "$fifo"
timeout 30 cat "$fifo" >"$TMP/fifo.out" &
reader=$!
_bg_pids+=($reader)
start=$(date +%s%N)
record "$TMP/fifo.err" -q -o "$fifo" -- "$BURN" 1
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
wait "$reader"
check_eq "-o FIFO (folded) with a reader: exit status ($(head -c 200 "$TMP/fifo.err"))" "$rc" 0
check_le "-o FIFO: no hang (ms)" "$ms" 15000
check "-o FIFO: still a FIFO" test -p "$fifo"
check "-o FIFO: the reader got the folded profile" folded_ok "$TMP/fifo.out" wl_chain_fp

fifo2=$TMP/fifo2
mkfifo "$fifo2"
timeout 30 cat "$fifo2" >"$TMP/fifo2.out" &
reader=$!
_bg_pids+=($reader)
record "$TMP/fifo2.err" -q -f pprof -o "$fifo2" -- "$BURN" 1
rc=$?
wait "$reader"
check_eq "-o FIFO (pprof) with a reader: exit status" "$rc" 0
check "-o FIFO (pprof): the reader got a gzip stream" gzip -t "$TMP/fifo2.out"
if [[ -x /usr/bin/python3 ]]; then
	/usr/bin/python3 "$SS_ROOT/tests/system/pprof_stacks.py" "$TMP/fifo2.out" \
		>"$TMP/fifo2.folded" 2>/dev/null
	check "-o FIFO (pprof): a readable profile with the burner's frames" \
		grep -q 'chain_c' "$TMP/fifo2.folded"
else
	skip_setup "-o FIFO (pprof): python3 not found to decode the profile"
fi

# no reader ever: option parsing must not block on the open (a bounded error at the end)
fifo3=$TMP/fifo3.folded
mkfifo "$fifo3"
start=$(date +%s%N)
SS_TIMEOUT=20 record "$TMP/fifo3.err" -q -o "$fifo3" -- "$BURN" 0.5
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "-o FIFO without a reader: no hang (exit $rc in $ms ms)" test $rc -ne 124 -a $ms -lt 15000
check "-o FIFO without a reader: says there is no reader" grep -qi 'reader' "$TMP/fifo3.err"

echo "# -o -"
(cd "$TMP" && timeout -k 5 30 "$SS" record -q -f folded -o - -- "$BURN" 1 \
	>"$TMP/stdout.folded" 2>"$TMP/stdout.err")
check_eq "-o -: exit status ($(head -c 200 "$TMP/stdout.err"))" $? 0
check "-o -: the folded profile on stdout" folded_ok "$TMP/stdout.folded" wl_chain_fp
check "-o -: no file named '-'" test ! -e "$TMP/-"

echo "# an unwritable folder"
mkdir "$TMP/ro"
if mount -t tmpfs -o ro,size=1m tmpfs "$TMP/ro" 2>/dev/null; then
	start=$(date +%s%N)
	record "$TMP/ro.err" -q -o "$TMP/ro/x.folded" -d 1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	umount "$TMP/ro"
	one_line_error "-o into a read-only folder" $rc "$TMP/ro.err" 'read-only|x\.folded'
	check_le "-o into a read-only folder: before sampling (ms)" "$ms" 2000
else
	skip "-o into a read-only folder: cannot mount a read-only tmpfs"
fi

echo "# symbolize -o"
in=$TMP/sym_in.pb.gz
record "$TMP/sym_in.err" -q --no-symbolize -o "$in" -- "$BURN" 0.5
check_eq "symbolize: input recorded" $? 0
in_private_dev timeout 20 "$SS" symbolize "$in" -o /dev/null --no-debuginfod 2>"$TMP/sn.err"
check_eq "symbolize -o /dev/null: exit status" $? 0
check "symbolize -o /dev/null: still a character device" test -c /dev/null
plant "$SHARED/s.pb.gz.tmp" "$VICTIM"
timeout 20 "$SS" symbolize "$in" -o "$SHARED/s.pb.gz" --no-debuginfod 2>"$TMP/st.err"
check_eq "symbolize, symlink at PATH.tmp: exit status" $? 0
check "symbolize, symlink at PATH.tmp: the victim is unchanged" victim_intact
check "symbolize, symlink at PATH.tmp: a gzip profile written" gzip -t "$SHARED/s.pb.gz"
plant "$SHARED/slink.pb.gz" "$VICTIM"
timeout 20 "$SS" symbolize "$in" -o "$SHARED/slink.pb.gz" --no-debuginfod 2>"$TMP/sl.err"
one_line_error "symbolize -o a user's symlink: refused" $? "$TMP/sl.err" 'symbolic link'
check "symbolize -o a user's symlink: the victim is unchanged" victim_intact
timeout 20 "$SS" symbolize "$in" -o "$TMP/s2.pb.gz" --debug-dir "$TMP/no-such-dir" \
	2>"$TMP/sd.err"
one_line_error "symbolize --debug-dir missing" $? "$TMP/sd.err" 'no-such-dir.*no such file'
record "$TMP/rd.err" -q -o "$TMP/rd.folded" --debug-dir "$TMP/no-such-dir" -d 1
one_line_error "record --debug-dir missing" $? "$TMP/rd.err" 'no-such-dir.*no such file'
record "$TMP/rf.err" -q -o "$TMP/rf.folded" -d 1 -F
one_line_error "record -F without a value" $? "$TMP/rf.err" "'-F' needs a value"

echo "# the unwind-table cache folder planted as a symlink"
userdir=$TMP/usercache
mkdir "$userdir" && chown "$NOBODY:$NOBODY" "$userdir"
plant "$SHARED/cache" "$userdir"
record "$TMP/cache.err" -q -o "$TMP/cache.folded" --cache-dir "$SHARED/cache" -- "$BURN" 1
check_eq "cache folder a symlink: the recording works ($(head -c 200 "$TMP/cache.err"))" $? 0
check "cache folder a symlink: refused with a warning" grep -qi 'cache.*unusable' "$TMP/cache.err"
check_eq "cache folder a symlink: files written into the user's folder" \
	"$(find "$userdir" -mindepth 1 | wc -l)" 0
check "cache folder a symlink: the link is still a link" test -L "$SHARED/cache"
# and a real folder of the user's
record "$TMP/cache2.err" -q -o "$TMP/cache2.folded" --cache-dir "$userdir" -- "$BURN" 1
check_eq "cache folder of another user: the recording works" $? 0
check_eq "cache folder of another user: files written into it" \
	"$(find "$userdir" -mindepth 1 | wc -l)" 0

echo "# the agent's pprof folder planted as a symlink"
useroutdir=$TMP/userout
mkdir "$useroutdir" && chown "$NOBODY:$NOBODY" "$useroutdir"
plant "$SHARED/agentout" "$useroutdir"
timeout -k 2 10 "$SS" agent --output-dir "$SHARED/agentout" --interval 0.5 2>"$TMP/agent.err" \
	</dev/null
rc=$?
check "agent --output-dir a user's symlink: exits non-zero at once (got $rc: $(head -c 200 \
	"$TMP/agent.err" | tr '\n' '|'))" test $rc -ne 0 -a $rc -ne 124
check_eq "agent --output-dir a user's symlink: files written into the user's folder" \
	"$(find "$useroutdir" -mindepth 1 | wc -l)" 0

finish
