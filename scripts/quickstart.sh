#!/bin/bash
# Sets up a fresh machine, builds stackscope, and records the whole system for 10 seconds
# into a flamegraph (stackscope.svg) and a pprof profile (stackscope.pb.gz).
# Usage: sudo scripts/quickstart.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
make -j"$(nproc)"
./stackscope record -d "${1:-10}" -o stackscope.svg -o stackscope.pb.gz
echo "open stackscope.svg in a browser; 'go tool pprof -top stackscope.pb.gz' for a table"
