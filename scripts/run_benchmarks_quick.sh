#!/usr/bin/env bash
# Run every benchmark (benchmarks/*.py; helpers shared by them are named _*.py and skipped) with --quick: small sizes,
# the same code paths, comparisons and checks. Prints a header and the wall time per script; exits 1 if any failed.
# PYTHON: the interpreter (default .venv/bin/python). BENCHMARK_TIMEOUT: seconds per script (default 180, 0: none).
# Arguments: the scripts to run instead of all of them (each may carry its own arguments: "script.py --only x").
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-.venv/bin/python}
limit=${BENCHMARK_TIMEOUT:-180}
export PYTHONUNBUFFERED=1 # the scripts' lines in order with the headers

now_ms() {
  local t=${EPOCHREALTIME/[.,]/}
  echo $((t / 1000))
}

seconds_since() { # "12.3" from a now_ms value
  local ms=$(($(now_ms) - $1))
  echo "$((ms / 1000)).$(((ms % 1000) / 100))"
}

# reproduce.py's sections beyond its default set get a second call of their own (each call within the limit).
if [ $# -gt 0 ]; then scripts=("$@"); else
  scripts=(benchmarks/[!_]*.py "benchmarks/reproduce.py --only nevis-full,facts,sortsearch,clear-table"
    "benchmarks/reproduce.py --only nevis-baselines")
fi
failed=()
all_start=$(now_ms)
for script in "${scripts[@]}"; do
  read -r -a command <<<"$script"
  echo "=== $script --quick"
  start=$(now_ms)
  status=0
  timeout --kill-after=10 "$limit" "$python" "${command[@]}" --quick || status=$?
  if [ "$status" = 0 ]; then
    echo "=== $script: ok in $(seconds_since "$start") s"
  else
    [ "$status" = 124 ] && why="timed out after $limit s" || why="exit $status"
    echo "=== $script: FAILED ($why) in $(seconds_since "$start") s"
    failed+=("$script")
  fi
done
echo "=== ${#scripts[@]} benchmarks in $(seconds_since "$all_start") s; ${#failed[@]} failed${failed:+: ${failed[*]}}"
[ ${#failed[@]} = 0 ]
