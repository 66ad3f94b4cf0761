"""The cost of portable mode: the README's default run (`lifelong run`: mini, independent, seed 0, one torch thread)
in the default mode and with `--portable`, alternating, each in a fresh process, in the same run.

Prints each run's wall time and CPU time (user + system of the run's process: on a shared machine the steadier
measure), mean error and meta-test error, the mean times of each mode and the ratios portable / default (above 1:
portable mode is slower). Checks that the runs of one mode agree to the bit (the same machine,
command and seed give identical numbers in either mode; exit 1 if not) and says whether the two modes agree (they
need not: the modes use different kernels). Alternating the modes spreads a shared machine's load over both.

Run: python benchmarks/bench_portable.py [--repeats N] [--quick] [--json OUT]
  --repeats N  runs of each mode (default 3)
  --quick      one run of each mode with `-o epochs=1 -o resolution=16` (a smoke test: its numbers are not the
               README's)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUICK_OPTIONS = ["-o", "epochs=1", "-o", "resolution=16"]
MODES = ("default", "portable")
NUMBERS = ("mean_error", "meta_test_mean_error", "cumulative_train_flops")


def run_once(mode: str, out: Path, quick: bool) -> dict:
    """`lifelong run` (plus --portable) in a fresh process; its wall time and summary numbers."""
    command = [sys.executable, "-m", "lifelong.cli", "run", "--out", str(out)]
    command += QUICK_OPTIONS if quick else []
    command += ["--portable"] if mode == "portable" else []
    env = {key: value for key, value in os.environ.items() if key != "LIFELONG_PORTABLE"}  # the mode: the flag only
    env["COLUMNS"] = "120"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if done.returncode != 0:
        sys.exit(f"{mode} run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    (summary_file,) = out.glob("*/summary.json")
    summary = json.loads(summary_file.read_text())
    numerics = json.loads((summary_file.parent / "run.json").read_text())["numerics"]
    return {
        "mode": mode,
        "seconds": seconds,
        "cpu_seconds": cpu,
        **{k: summary[k] for k in NUMBERS},
        "numerics": numerics,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each mode (default 3)")
    parser.add_argument("--quick", action="store_true", help="one run of each mode, 1 epoch at 16 px: a smoke test")
    parser.add_argument("--json", type=Path, help="also write every run's numbers here")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    if repeats < 1:
        parser.error(f"--repeats must be >= 1, got {repeats}")
    work = Path(tempfile.mkdtemp(prefix="bench-portable-"))
    runs: list[dict] = []
    try:
        for index in range(repeats):
            for mode in MODES if index % 2 == 0 else MODES[::-1]:  # alternate which mode goes first
                found = run_once(mode, work / f"{mode}-{index}", args.quick)
                runs.append(found)
                kernels = found["numerics"]
                print(
                    f"{mode:8}  wall {found['seconds']:7.1f} s  CPU {found['cpu_seconds']:7.1f} s  "
                    f"mean error {found['mean_error']:.4f}  meta-test {found['meta_test_mean_error']:.4f}  "
                    f"(ATen {kernels['aten_cpu_capability']}, oneDNN {'on' if kernels['mkldnn_enabled'] else 'off'}, "
                    f"MKL_CBWR {kernels['mkl_cbwr']})",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(runs, args.json)


def report(runs: list[dict], json_out: Path | None) -> int:
    """Each mode's mean times and whether its runs agree, the ratios; 1 if one mode's runs disagree."""
    failed = False
    means: dict[str, dict[str, float]] = {}
    numbers = {mode: {tuple(r[k] for k in NUMBERS) for r in runs if r["mode"] == mode} for mode in MODES}
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        means[mode] = {key: statistics.mean(r[key] for r in mine) for key in ("seconds", "cpu_seconds")}
        failed |= len(numbers[mode]) != 1
        print(
            f"{mode}: wall {means[mode]['seconds']:.1f} s, CPU {means[mode]['cpu_seconds']:.1f} s, mean over "
            f"{len(mine)} run(s); numbers "
            + ("identical in every run" if len(numbers[mode]) == 1 else f"DIFFER between runs: {sorted(numbers[mode])}")
        )
    print(f"the two modes {'agree' if numbers['default'] == numbers['portable'] else 'differ (other kernels)'}")
    ratio = {key: means["portable"][key] / means["default"][key] for key in ("seconds", "cpu_seconds")}
    print(
        f"portable / default: wall time {ratio['seconds']:.2f}, CPU time {ratio['cpu_seconds']:.2f} (above 1: "
        f"portable is slower; the CPU offers {runs[0]['numerics']['cpu_offers']})"
    )
    if json_out:
        json_out.write_text(json.dumps({"runs": runs, "means": means, "ratios": ratio}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
