"""Reliability under kills: `lifelong run` killed with SIGKILL at random moments and resumed gives the numbers of an
uninterrupted run; `lifelong bench import` and `add-model` killed at random moments leave a consistent store; two
runs into one folder: the second is refused. Prints the counts.

Run: python benchmarks/reliability.py [--kills 20] [--stream mini] [--work DIR] [--seed 0] [--skip-runs] [--skip-bench]
Each part compares against a baseline made in the same run (an uninterrupted run; a store built without kills).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LIFELONG = [sys.executable, "-m", "lifelong.cli"]


def lifelong(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*LIFELONG, *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"lifelong {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done


def comparable(events: Path) -> list[dict]:
    rows = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def kill_after(args: list[str], cwd: Path, seconds: float) -> int | None:
    """Start `lifelong args`, SIGKILL it after `seconds`; its exit code if it finished first, else None."""
    child = subprocess.Popen([*LIFELONG, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGKILL)
        child.wait()
        return None


def runs_part(work: Path, stream: str, kills: int, rng: random.Random) -> dict:
    """`kills` SIGKILL/--resume cycles of one run against an uninterrupted run of the same spec."""
    start = time.perf_counter()
    lifelong("run", "--stream", stream, "--out", "reference", "--no-predictions", cwd=work)
    reference_seconds = time.perf_counter() - start
    (reference,) = [p for p in (work / "reference").iterdir() if (p / "events.jsonl").is_file()]
    expected = comparable(reference / "events.jsonl")
    killed, finished_early = 0, 0
    args = ["run", "--stream", stream, "--out", "killed", "--no-predictions"]
    for cycle in range(kills):
        code = kill_after(
            args + (["--resume"] if cycle else []), work, rng.uniform(3.0, max(4.0, reference_seconds / 6))
        )
        if code is None:
            killed += 1
        else:
            finished_early += 1
            break
    lifelong(*args, "--resume", cwd=work)  # finish
    got = comparable(work / "killed" / reference.name / "events.jsonl")
    identical = got == expected
    # two runs into one folder: the second is refused at once while the first holds it
    first = subprocess.Popen([*LIFELONG, "run", "--stream", stream, "--out", "twice", "--no-predictions"], cwd=work)
    time.sleep(3.0)
    second = lifelong("run", "--stream", stream, "--out", "twice", "--no-predictions", cwd=work, check=False)
    first.send_signal(signal.SIGKILL)
    first.wait()
    return {
        "kills": killed,
        "finished_before_a_kill": finished_early,
        "records": len(got),
        "identical_to_uninterrupted": identical,
        "second_writer_refused": second.returncode == 2 and "being written by" in second.stderr,
        "reference_seconds": round(reference_seconds, 1),
    }


def _matrix(work: Path, models: int, samples: int, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(models, 1))
    difficulty = rng.normal(size=(1, samples))
    matrix = (rng.random((models, samples)) < 1 / (1 + np.exp(difficulty - ability))).astype(np.uint8)
    np.save(work / "matrix.npy", matrix)
    with open(work / "samples.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        for j in range(samples):
            writer.writerow(["synthetic", f"d{j % 4}", j % 10, f"{j:016x}"])
    return work / "matrix.npy", work / "samples.csv"


def bench_part(work: Path, kills: int, rng: random.Random) -> dict:
    """Kill `bench import` and `bench add-model` at random moments; after each kill the store must check ok (or not
    exist yet), and the finished store must equal one built without kills."""
    matrix, samples = _matrix(work, 120, 20_000, 0)
    imported = ["bench", "import", "store", "--matrix", str(matrix), "--samples", str(samples)]
    start = time.perf_counter()
    lifelong(*[a if a != "store" else "clean" for a in imported], cwd=work)
    import_seconds = time.perf_counter() - start
    consistent = killed = 0
    for _ in range(kills):
        shutil.rmtree(work / "store", ignore_errors=True)
        if kill_after(imported, work, rng.uniform(0.05, import_seconds)) is None:
            killed += 1
        if not (work / "store").exists() or lifelong("bench", "check", "store", cwd=work, check=False).returncode == 0:
            consistent += 1
    shutil.rmtree(work / "store", ignore_errors=True)
    lifelong(*imported, cwd=work)
    lifelong("bench", "sort", "store", cwd=work)
    lifelong("bench", "sort", "clean", cwd=work)
    plan = lifelong("bench", "plan-model", "store", "--budget", "256", cwd=work).stdout.split()
    truth = np.load(matrix)[0]
    with open(work / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sample_id", "correct"])
        writer.writerows((sid, int(truth[int(sid)])) for sid in plan)
    added = ["bench", "add-model", "store", "--name", "new", "--results", "results.csv", "--budget", "256"]
    start = time.perf_counter()
    probe = lifelong(*[a if a != "store" else "clean" for a in added], cwd=work, check=False)
    add_seconds = time.perf_counter() - start
    add_consistent = add_killed = 0
    for _ in range(kills):
        code = kill_after(added, work, rng.uniform(0.05, max(0.2, add_seconds)))
        add_killed += code is None
        if lifelong("bench", "check", "store", cwd=work, check=False).returncode == 0:
            add_consistent += 1
        if code == 0:
            break
    status = lifelong("bench", "status", "store", cwd=work, check=False)
    return {
        "import_kills": killed,
        "import_consistent_after_kill": consistent,
        "add_model_kills": add_killed,
        "add_model_consistent_after_kill": add_consistent,
        "add_model_probe_ok": probe.returncode == 0,
        "status_after": status.returncode,
        "import_seconds": round(import_seconds, 2),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--stream", default="mini")
    parser.add_argument("--work", type=Path, default=None, help="working folder (default: a temporary one)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    parser.add_argument("--skip-runs", action="store_true")
    parser.add_argument("--skip-bench", action="store_true")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="lifelong-reliability-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    results = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "kills_asked": args.kills}
    if not args.skip_runs:
        results["run"] = (
            runs_part(work / "runs", args.stream, args.kills, rng) if (work / "runs").mkdir() is None else {}
        )
    if not args.skip_bench:
        (work / "bench").mkdir(exist_ok=True)
        results["bench"] = bench_part(work / "bench", args.kills, rng)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
