#!/bin/bash
# `stackscope top` in a terminal (tmux) and in batch mode, with the known-chain workload
# (main -> chain_a -> chain_b -> chain_c -> hot_leaf) and another one (wl_recurse:
# recurse_leaf) beside it:
#  - hot_leaf is on the first screen within 3 s of the first frame, with nothing filtered;
#  - the process filter: typed (/) to the workload's name, hot_leaf is the first row; typed
#    to the other workload's pid, hot_leaf is gone and recurse_leaf is there; with
#    -p A,B, p cycles A, B (in the order of their samples), then all;
#  - Enter on hot_leaf shows its callers chain_c, then chain_b one level deeper;
#  - q quits with status 0, the main screen back and the tty's mode restored (stty);
#    SIGTERM, Ctrl-C and a crash (SIGSEGV) restore the terminal too; Ctrl-Z gives it back
#    to the shell while stopped, fg takes it again;
#  - batch (-b, and stdout not a tty): text snapshots with the chain, no escape sequences,
#    -p keeps only the pids given; mixed stacks: py_chain.py's c is a CPython frame among
#    libpython's native ones, its callers b <- a <- <module>.
# Every wait polls with a deadline (a loaded 2-core box starts slowly); no fixed sleeps.
source "$(dirname "$0")/lib.sh"
need_root
have_fixture wl_chain_nofp || finish
have_fixture wl_recurse || finish
if ! command -v tmux >/dev/null; then
	skip_setup "tmux missing"
	finish
fi

# bad arguments: a non-zero exit within 2 s with one line on stderr, before any sampling
for args in "-F 0" "-d 0.1" "-w 61" "-p abc" "-s cpu" "-n 0" "extra" "-p 999999999"; do
	start=$(date +%s%N)
	# shellcheck disable=SC2086
	timeout 10 "$SS" top -b $args >"$TMP/bad.out" 2>"$TMP/bad.err" </dev/null
	rc=$? ms=$((($(date +%s%N) - start) / 1000000))
	if [[ $rc -ne 0 && $rc -ne 124 && $ms -lt 2000 && $(grep -c . "$TMP/bad.err") == 1 &&
		! -s $TMP/bad.out ]]; then
		ok "top $args: exit $rc in $ms ms: $(cat "$TMP/bad.err")"
	else
		fail "top $args: exit $rc in $ms ms: $(head -c 300 "$TMP/bad.err")"
	fi
done

spawn WPID "$FIX/wl_chain_nofp" 60
spawn OPID "$FIX/wl_recurse" 60
SOCK=stackscope-top-$$
tmx() { tmux -L "$SOCK" "$@"; }
trap 'tmx kill-server 2>/dev/null; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"; cleanup' EXIT

# start_top NAME ARGS...: top in a 150x40 tmux session NAME; when it ends, its exit status
# goes to $TMP/NAME.rc and the tty's mode (stty -a) to $TMP/NAME.stty.
start_top()
{
	local name=$1
	shift
	tmx new-session -d -x 150 -y 40 -s "$name" \
		"$SS top $*; echo \$? >$TMP/$name.rc.tmp; stty -a >$TMP/$name.stty 2>&1; mv $TMP/$name.rc.tmp $TMP/$name.rc; sleep 120"
}

screen() { tmx capture-pane -p -t "$1"; }

# wait_screen NAME SECONDS ERE: polls the pane until a line matches; 1 at the deadline.
wait_screen()
{
	local end=$(($(date +%s%N) + $2 * 1000000000))
	while [[ $(date +%s%N) -lt $end ]]; do
		screen "$1" | grep -Eq -- "$3" && return 0
		sleep 0.1
	done
	return 1
}

wait_file()
{
	local end=$((SECONDS + $2))
	until [[ -s $1 ]]; do
		[[ $SECONDS -ge $end ]] && return 1
		sleep 0.1
	done
}

# the first function rows (after the title, key line and column names)
rows() { screen "$1" | sed -n '4,$p'; }

# restored NAME: the pane left the alternate screen and the tty is back in canonical mode
# with echo
restored()
{
	[[ $(tmx display-message -p -t "$1" '#{alternate_on}') == 0 ]] &&
		grep -Eq '(^| )icanon( |$)' "$TMP/$1.stty" && grep -Eq '(^| )echo( |$)' "$TMP/$1.stty"
}

# batch runs, in the background while the terminal is driven
timeout -k 5 90 "$SS" top -b -n 3 -r 8 -e hot_leaf -f wl_chain_nofp >"$TMP/batch.out" \
	2>"$TMP/batch.err" &
BATCH=$!
# mixed stacks: CPython frames between libpython's native ones
PY=$(command -v python3 || true)
if [[ -n $PY ]]; then
	spawn PYPID "$PY" "$SS_ROOT/tests/data/py_chain.py" 60
	timeout -k 5 90 "$SS" top -b -n 3 -p "$PYPID" -e c -r 40 >"$TMP/py.out" 2>"$TMP/py.err" &
	PYTOP=$!
fi
timeout -k 5 90 "$SS" top -n 2 -p "$OPID" -r 50 2>"$TMP/pipe.err" | cat >"$TMP/pipe.out" &
PIPE=$!

start_top main
if wait_screen main 60 '^stackscope top - '; then
	ok "top draws its first screen"
	t0=$(date +%s%N)
	if wait_screen main 3 '%  wl_chain_nofp +hot_leaf$'; then
		ok "hot_leaf on the screen $((($(date +%s%N) - t0) / 1000000)) ms after the first frame"
	else
		fail "hot_leaf not on the screen within 3 s"
		screen main | head -20 | sed 's/^/        /'
	fi
else
	fail "top drew nothing within 60 s"
	screen main | head -20 | sed 's/^/        /'
fi
check "top runs in the alternate screen" \
	test "$(tmx display-message -p -t main '#{alternate_on}')" == 1

# a resized terminal gets frames of its new size (SIGWINCH): the title cut at 100 columns
# (150-column lines would wrap into the next one), function rows down to line 20
resized_frame()
{
	local s
	s=$(screen main)
	[[ $(sed -n 1p <<<"$s" | awk '{ print length }') == 100 ]] &&
		sed -n 2p <<<"$s" | grep -q '^q quit' && sed -n 20p <<<"$s" | grep -Eq '%  '
}
tmx resize-window -t main -x 100 -y 20
end=$((SECONDS + 5))
until resized_frame || [[ $SECONDS -ge $end ]]; do sleep 0.1; done
if resized_frame; then
	ok "resized to 100x20: frames of 20 lines of at most 100 columns"
else
	fail "resized to 100x20: wrong frame"
	screen main | sed 's/^/        /'
fi

# typed filter: the workload's name
tmx send-keys -t main /
tmx send-keys -t main -l wl_chain_nofp
tmx send-keys -t main Enter
if wait_screen main 5 "filter: 'wl_chain_nofp'" &&
	wait_screen main 3 '^ *[0-9.]+% +[0-9.]+% +wl_chain_nofp +hot_leaf$' &&
	rows main | head -1 | grep -q 'hot_leaf$'; then
	ok "typed filter wl_chain_nofp: hot_leaf is the first row"
else
	fail "typed filter wl_chain_nofp: hot_leaf is not the first row"
	screen main | head -12 | sed 's/^/        /'
fi

# expand hot_leaf (the first row, selected): chain_c, then chain_b one level deeper
tmx send-keys -t main Enter
if wait_screen main 5 '<- chain_c$' &&
	screen main | grep -A1 -E '^ +[0-9.]+% +<- chain_c$' |
	grep -Eq '^ +[0-9.]+% +  <- chain_b$'; then
	ok "Enter on hot_leaf: its callers chain_c <- chain_b"
else
	fail "Enter on hot_leaf: no chain_c <- chain_b under it"
	screen main | head -14 | sed 's/^/        /'
fi
tmx send-keys -t main Left

# typed filter: the other workload's pid; hot_leaf gone, recurse_leaf there
tmx send-keys -t main /
tmx send-keys -t main BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace \
	BSpace BSpace BSpace BSpace
tmx send-keys -t main -l "$OPID"
tmx send-keys -t main Enter
if wait_screen main 5 "filter: '$OPID'" && wait_screen main 3 '%  wl_recurse +recurse_leaf$' &&
	! screen main | grep -q hot_leaf; then
	ok "typed filter $OPID (wl_recurse): recurse_leaf shown, hot_leaf not"
else
	fail "typed filter $OPID (wl_recurse): wrong rows"
	screen main | head -12 | sed 's/^/        /'
fi

# q: status 0, the terminal restored
tmx send-keys -t main q
if wait_file "$TMP/main.rc" 10; then
	check_eq "q: exit status" "$(cat "$TMP/main.rc")" 0
	check "q: the main screen back, icanon and echo on again" restored main
	check "q: nothing of top left on the screen" bash -c "! tmux -L $SOCK capture-pane -p -t main | grep -q 'stackscope top'"
else
	fail "q: top did not exit within 10 s"
fi

# p cycles through the processes of -p (by samples), then back to all: the workload's view
# has hot_leaf and not recurse_leaf; then SIGTERM. A crash (SIGSEGV) restores the terminal too.
start_top term -p "$WPID,$OPID"
start_top crash
# under an interactive shell with job control (Ctrl-Z does not stop an orphaned process group)
tmx new-session -d -x 150 -y 40 -s int "env PS1='$ ' bash --norc --noprofile -i"
tmx send-keys -t int -l "$SS top"
tmx send-keys -t int Enter
shown() { screen term | grep -Eo 'filter: (pid [0-9]+|all)' | head -1; }
if wait_screen term 60 '^stackscope top - ' && wait_screen term 5 'recurse_leaf$' &&
	wait_screen term 5 'hot_leaf$'; then
	seen=()
	for i in 1 2 3; do
		before=$(shown)
		tmx send-keys -t term p
		end=$((SECONDS + 5))
		until [[ $(shown) != "$before" || $SECONDS -ge $end ]]; do sleep 0.05; done
		seen+=("$(shown)")
		if [[ $(shown) == "filter: pid $WPID" ]]; then
			if wait_screen term 3 '%  wl_chain_nofp +hot_leaf$' &&
				! screen term | grep -q recurse_leaf; then
				ok "p to pid $WPID: hot_leaf shown, recurse_leaf not"
			else
				fail "p to pid $WPID: wrong rows"
				screen term | head -12 | sed 's/^/        /'
			fi
		fi
	done
	check_eq "p cycles through the two processes, then all" \
		"$(printf '%s\n' "${seen[@]}" | sort | tr '\n' ' ')" \
		"$(printf '%s\n' "filter: all" "filter: pid $WPID" "filter: pid $OPID" | sort | tr '\n' ' ')"
else
	fail "top -p $WPID,$OPID: no screen with both workloads within 70 s"
fi
for name in term crash; do
	if ! wait_screen $name 60 '^stackscope top - '; then
		fail "$name: top drew nothing within 60 s"
		continue
	fi
	pid=$(tmx display-message -p -t $name '#{pane_pid}')
	top_pid=$(pgrep -P "$pid" -f 'stackscope top' | head -1)
	if [[ $name == term ]]; then
		kill -TERM "$top_pid"
		want=0
	else
		kill -SEGV "$top_pid"
		want=139
	fi
	if wait_file "$TMP/$name.rc" 10; then
		check_eq "$name: exit status" "$(cat "$TMP/$name.rc")" $want
		check "$name: the main screen back, icanon and echo on again" restored $name
	else
		fail "$name: top did not exit within 10 s"
	fi
done

# Ctrl-Z gives the shell its terminal back (main screen) and fg brings top back, redrawn;
# then Ctrl-C (SIGINT) quits with status 0 and the main screen back (top is the shell's job
# alone: bash would run the rest of a list at once after Ctrl-Z)
if wait_screen int 60 '^stackscope top - '; then
	tmx send-keys -t int C-z
	if wait_screen int 10 'Stopped +.*stackscope top' &&
		[[ $(tmx display-message -p -t int '#{alternate_on}') == 0 ]]; then
		ok "Ctrl-Z: stopped, the shell's screen back"
	else
		fail "Ctrl-Z: top not stopped or still in the alternate screen"
		screen int | grep -v '^$' | head -5 | sed 's/^/        /'
	fi
	tmx send-keys -t int -l fg
	tmx send-keys -t int Enter
	if wait_screen int 10 '^stackscope top - .* samples in' &&
		[[ $(tmx display-message -p -t int '#{alternate_on}') == 1 ]]; then
		ok "fg: top takes the terminal again and redraws"
	else
		fail "fg: no redraw in the alternate screen"
	fi
	tmx send-keys -t int C-c
	end=$((SECONDS + 10))
	until [[ $(tmx display-message -p -t int '#{alternate_on}') == 0 || $SECONDS -ge $end ]]; do
		sleep 0.1
	done
	tmx send-keys -t int -l "echo \$? >$TMP/int.rc.tmp; mv $TMP/int.rc.tmp $TMP/int.rc"
	tmx send-keys -t int Enter
	if wait_file "$TMP/int.rc" 10; then
		check_eq "Ctrl-C: exit status" "$(cat "$TMP/int.rc")" 0
		check "Ctrl-C: the main screen back" \
			test "$(tmx display-message -p -t int '#{alternate_on}')" == 0
	else
		fail "Ctrl-C: top did not exit within 10 s"
	fi
else
	fail "int: top drew nothing within 60 s"
fi

# batch
wait $BATCH
rc=$?
check_eq "batch: exit status" $rc 0
check_eq "batch: 3 snapshots" "$(grep -c '^stackscope top ' "$TMP/batch.out")" 3
last=$(awk '/^stackscope top /{n++} n == 3' "$TMP/batch.out")
first_row=$(sed -n 3p <<<"$last")
if [[ $first_row =~ ^\ *([0-9]+)\.[0-9]+%\ .*\ hot_leaf$ ]] && [[ ${BASH_REMATCH[1]} -ge 50 ]]; then
	ok "batch: hot_leaf is the first row of wl_chain_nofp's functions ($first_row)"
else
	fail "batch: first row '$first_row'"
	sed 's/^/        /' "$TMP/batch.out" | head -30
fi
if grep -A2 -E '^callers of hot_leaf \([0-9]+ samples\):$' <<<"$last" |
	tr '\n' '|' | grep -Eq '\|[^|]* <- chain_c\|[^|]*   <- chain_b\|$'; then
	ok "batch -e hot_leaf: chain_c, then chain_b"
else
	fail "batch -e hot_leaf: no chain_c <- chain_b"
	sed 's/^/        /' <<<"$last"
fi

wait $PIPE
check_eq "stdout a pipe: 2 snapshots" "$(grep -c '^stackscope top ' "$TMP/pipe.out")" 2
check "stdout a pipe: no escape sequences" bash -c "! grep -q $'\x1b' '$TMP/pipe.out'"
check "-p $OPID: recurse_leaf" grep -Eq ' recurse_leaf$' "$TMP/pipe.out"
check "-p $OPID: no hot_leaf, no other process" bash -c \
	"! grep -q hot_leaf '$TMP/pipe.out' && grep -q ', 1 process |' '$TMP/pipe.out'"

if [[ -z $PY ]]; then
	skip_setup "python3 missing: no mixed-stack check"
else
	wait $PYTOP
	last=$(awk '/^stackscope top /{n++} n == 3' "$TMP/py.out")
	check "python: c is a CPython frame with a total share of 90 % or more" \
		grep -Eq '^ +[0-9.]+% +(9[0-9]|100)\.[0-9]+% +cpython +c$' <<<"$last"
	check "python: libpython's native frames beside them" \
		grep -Eq '% +libpython[^ ]* +_?Py' <<<"$last"
	if grep -A3 -E '^callers of c \([0-9]+ samples\):$' <<<"$last" | tr '\n' '|' |
		grep -Eq '\|[^|]* <- b\|[^|]*   <- a\|[^|]*     <- <module>\|$'; then
		ok "python -e c: b, a, <module>"
	else
		fail "python -e c: no b <- a <- <module>"
		sed 's/^/        /' <<<"$last"
	fi
fi
finish
