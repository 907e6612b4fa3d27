#!/bin/bash
# Sets up a fresh machine, builds stackscope, and records the whole system for 10 seconds
# into a flamegraph (stackscope.svg) and a pprof profile (stackscope.pb.gz).
# With --ui, it then keeps profiling into a store (stackscope.db, the recording imported
# first) and serves the web UI on http://127.0.0.1:7434/ until Ctrl-C.
# Usage: sudo scripts/quickstart.sh [SECONDS] [--ui]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=10 ui=
for a in "$@"; do
	case $a in
	--ui) ui=1 ;;
	*) secs=$a ;;
	esac
done
scripts/setup.sh
make -j"$(nproc)"
./stackscope record -d "$secs" -o stackscope.svg -o stackscope.pb.gz
echo "open stackscope.svg in a browser; 'go tool pprof -top stackscope.pb.gz' for a table"
if [[ -n $ui ]]; then
	./stackscope store import --store stackscope.db stackscope.pb.gz
	echo "web UI: open http://127.0.0.1:7434/ (the agent keeps profiling into stackscope.db; Ctrl-C stops)"
	exec ./stackscope agent --store stackscope.db --ui 127.0.0.1:7434
fi
