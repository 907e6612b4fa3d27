#!/bin/bash
# Runs a command the way a container runtime runs it, for the runtime matrix
# (scripts/runtime_matrix.sh) and by hand: in a cgroup named as Docker names its containers'
# (…/docker-ID.scope: stackscope reads the container id from it), in its own PID and mount
# namespaces, with ROOT (a Debian root from scripts/runtime_root.sh) as its / and a /proc of
# its own, and a clean environment. The command's exit status is this script's.
# Usage: scripts/in_container.sh ROOT ID COMMAND [ARGS...]   (ID: 64 hex digits)
# Example: scripts/in_container.sh "$(scripts/runtime_root.sh sid)" \
#            "$(echo demo | sha256sum | cut -c1-64)" python3.14 -c 'print(1)'
set -euo pipefail

ROOT=${1:?usage: in_container.sh ROOT ID COMMAND [ARGS...]}
ID=${2:?usage: in_container.sh ROOT ID COMMAND [ARGS...]}
shift 2
(($#)) || {
	echo "in_container: no command" >&2
	exit 2
}
[[ $ID =~ ^[0-9a-f]{64}$ ]] || {
	echo "in_container: ID must be 64 hex digits" >&2
	exit 2
}
[[ -x $ROOT/bin/sh ]] || {
	echo "in_container: $ROOT is not a root (no /bin/sh)" >&2
	exit 2
}

# The cgroup: on the unified hierarchy (cgroup v2, alone or beside v1's), else in v1's pids
# hierarchy. Left behind empty when the command ends (rmdir below, best effort).
cgroup=
for base in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [[ -e $base/cgroup.controllers ]]; then
		cgroup=$base/stackscope.slice/docker-$ID.scope
		break
	fi
done
[[ -n $cgroup ]] || cgroup=/sys/fs/cgroup/pids/stackscope/docker-$ID.scope
mkdir -p "$cgroup"
echo $$ >"$cgroup/cgroup.procs"

status=0
# unshare: new PID namespace (the command is its pid 1's child... it is pid 1 itself, with
# --fork) and a private mount namespace, where ROOT/proc gets a proc of that PID namespace
unshare --pid --mount --fork --kill-child -- /bin/sh -c \
	'mount -t proc proc "$0/proc" && exec chroot "$0" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 TMPDIR=/tmp "$@"' "$ROOT" "$@" || status=$?
# this shell leaves the cgroup so it can go
echo $$ >"$(dirname "$(dirname "$cgroup")")/cgroup.procs" 2>/dev/null || true
rmdir "$cgroup" 2>/dev/null || true
exit $status
