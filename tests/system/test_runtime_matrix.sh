#!/bin/bash
# timeout: 900
# The runtime matrix (scripts/runtime_matrix.sh): every runtime's call-chain workload in the
# Debian roots of bullseye, bookworm, trixie and sid, run as containers (own PID and mount
# namespaces, the root as /, a Docker-named cgroup) under one `stackscope agent` per suite,
# each row's profile read back from the agent's store by its container id. Checks:
#  - the matrix exits 0: every row its table marks supported has the whole known chain with
#    exact call lines in >= 95 % of the workload's samples and the hot line in >= 95 % of the
#    hot function's, with at least 200 samples (one check per supported row, below);
#  - one row per suite and runtime, none missing;
#  - the container id came through: each row's samples were found by it (a supported row's
#    sample count is that of its container's query).
# Rows of versions not supported yet are printed as the matrix prints them, not counted.
# The roots come from scripts/runtime_root.sh (scripts/test.sh builds them, cached under
# /var/cache/stackscope/runtime-matrix).
source "$(dirname "$0")/lib.sh"
need_root
for suite in bullseye bookworm trixie sid; do
	root=${RM_CACHE:-/var/cache/stackscope/runtime-matrix}/roots/$suite
	[[ -f $root/.stackscope-root ]] || {
		skip_setup "the $suite root (scripts/runtime_root.sh $suite, run by scripts/test.sh)"
		finish
	}
done

RM_OUT=$TMP/matrix STACKSCOPE=$SS "$SS_ROOT/scripts/runtime_matrix.sh" \
	>"$TMP/rows" 2>"$TMP/err"
status=$?
sed 's/^/    /' "$TMP/rows"
check_eq "runtime_matrix.sh exit status (every supported row passes)" $status 0 ||
	sed 's/^/        /' "$TMP/err"
# one row per suite and runtime the script declares (ALL_RUNTIMES), none missing, none more
read -ra runtimes < <(sed -n 's/^ALL_RUNTIMES=(\(.*\))$/\1/p' "$SS_ROOT/scripts/runtime_matrix.sh")
check_ge "runtimes the matrix declares" "${#runtimes[@]}" 12
missing=()
for suite in bullseye bookworm trixie sid; do
	for rt in "${runtimes[@]}"; do
		grep -qE "^$suite +$rt " "$TMP/rows" || missing+=("$suite $rt")
	done
done
check_eq "rows missing (of 4 suites x ${#runtimes[@]} runtimes)" "${missing[*]:-none}" none
check_eq "rows: 4 suites x ${#runtimes[@]} runtimes" \
	"$(grep -cE '^(bullseye|bookworm|trixie|sid) ' "$TMP/rows")" $((4 * ${#runtimes[@]}))
# a row: SUITE RUNTIME VERSION (may hold spaces: "8.2.32 JIT", "18.20.4 V8 10.2") SAMPLES
# CHAIN% HOT% EXPECT RESULT [MARKER]; a supported row in another form ("FAIL: no root") fails
row_re='^([a-z]+) +([a-z_]+) +(.*[^ ]) +([0-9]+) +([0-9.]+)% +([0-9.]+)% +(yes|no) +(.*)$'
while IFS= read -r row; do
	if [[ $row =~ $row_re ]]; then
		[[ ${BASH_REMATCH[7]} == yes ]] || continue
		check_eq "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}: ${BASH_REMATCH[4]} samples, chain ${BASH_REMATCH[5]}%, hot line ${BASH_REMATCH[6]}%" \
			"${BASH_REMATCH[8]%% *}" ok
	elif [[ $row == *" yes "* ]]; then
		check_eq "supported row: $row" "${row##* yes }" ok
	fi
done < <(grep -E '^(bullseye|bookworm|trixie|sid) ' "$TMP/rows")
finish
