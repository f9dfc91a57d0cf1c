#!/usr/bin/env bash
# Run the tests that start real processes on a plan's clock while every core runs a busy loop.
#
#   scripts/test_under_load.sh [ROUNDS] [PYTEST ARGS...]     (make test-load: 2 rounds)
#
# A test that races a few milliseconds of wall time fails here; tests must wait on events,
# use an injected clock (gensolver.executor.ManualClock) or windows wide enough to be a timeout.
# The load: `stress-ng --cpu N` when installed, else N Python busy loops (N = the number of
# cores); both end with this script (trap) and never outlive a bounded time (--timeout / timeout).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
shift || true
PY=${PY:-.venv/bin/python}
files=(tests/cli/test_run_cmd.py tests/executor tests/bench/test_runner.py)
cores=$(nproc 2>/dev/null || echo 2)
limit=$(( rounds * 600 ))   # seconds: the load never outlives a stuck run by long
loaders=()
cleanup() { for pid in "${loaders[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
if command -v stress-ng >/dev/null 2>&1; then
  stress-ng --cpu "$cores" --timeout "${limit}s" --quiet &
  loaders+=($!)
else
  for _ in $(seq "$cores"); do
    timeout "$limit" "$PY" -c 'while True: pass' &
    loaders+=($!)
  done
fi
sleep 1
echo "load: $cores busy loop(s); $(uptime)"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds"
  "$PY" -m pytest -q -p no:randomly -p no:cacheprovider "${files[@]}" "$@"
done
echo "passed $rounds round(s) under load; $(uptime)"
