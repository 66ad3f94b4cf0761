"""Reliability under kills: `lifelong run` killed with SIGKILL at random moments and resumed gives the numbers of an
uninterrupted run; `lifelong bench import` and `add-model` killed at random moments leave a consistent store, and
the finished store equals one built without kills; two runs into one folder: the second is refused. Prints the
counts, and exits 1 naming every check that failed.

Run: python benchmarks/reliability.py [--quick] [--kills 20] [--stream mini] [--work DIR] [--seed 0] [--skip-runs]
     [--skip-bench]
Each part compares against a baseline made in the same run (an uninterrupted run; a store built without kills).
--quick: 2 kills per part (unless --kills), runs of the learner at 1 epoch on 16 px images, a 40 x 1,000 matrix.
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

from lifelong.sortsearch.store import BenchStore

LIFELONG = [sys.executable, "-m", "lifelong.cli"]
QUICK_RUN_OPTIONS = ["-o", "epochs=1", "-o", "resolution=16"]


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


def wait_for_record(out: Path, child: subprocess.Popen, limit_s: float = 600.0) -> None:
    """Wait until a run under `out` has written its first event record (exit 1 if the child ends first)."""
    deadline = time.monotonic() + limit_s
    while not any(p.stat().st_size for p in out.glob("*/events.jsonl")):
        if child.poll() is not None or time.monotonic() > deadline:
            why = "ending" if child.poll() is not None else f"{limit_s:.0f} s"
            sys.exit(f"reliability: the run into {out} wrote no record before {why}")
        time.sleep(0.05)


def runs_part(work: Path, stream: str, kills: int, rng: random.Random, options: list[str]) -> dict:
    """`kills` SIGKILL/--resume cycles of one run against an uninterrupted run of the same spec (+ `options`)."""
    start = time.perf_counter()
    lifelong("run", "--stream", stream, "--out", "reference", "--no-predictions", *options, cwd=work)
    reference_seconds = time.perf_counter() - start
    (reference,) = [p for p in (work / "reference").iterdir() if (p / "events.jsonl").is_file()]
    expected = comparable(reference / "events.jsonl")
    killed, finished_early = 0, 0
    args = ["run", "--stream", stream, "--out", "killed", "--no-predictions", *options]
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
    # two runs into one folder: a second (--resume) is refused at once while the first holds the run's lock
    twice = ["run", "--stream", stream, "--out", "twice", "--no-predictions", *options]
    first = subprocess.Popen([*LIFELONG, *twice], cwd=work)
    try:  # once the first has written a record it holds the run's lock; stopped there, it cannot finish meanwhile
        wait_for_record(work / "twice", first)
        first.send_signal(signal.SIGSTOP)
        second = lifelong(*twice, "--resume", cwd=work, check=False)  # would continue it, were it not held
    finally:
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


def store_contents(path: Path) -> dict[str, object]:
    """Everything a store holds (cells, observed mask, registry, sorts, estimates) but creation times and file names."""
    with BenchStore.open(path) as store:
        ids = store.model_ids()
        return {
            "size": store.size(),
            "models": [(r.id, r.name, r.metadata) for r in store.model_records()],
            "samples": store.sample_hashes(),
            "correct": store.read_rows(ids),
            "observed": store.read_observed(ids),
            "sorts": [(r.version, r.n_samples, r.n_models, r.ranking_models) for r in store.sorts()],
            "orders": [store.load_sort(r.version) for r in store.sorts()],
            "estimates": {
                i: (e.threshold, e.n_samples, e.sort_version, e.method, e.budget, e.interval)
                for i, e in store.estimates().items()
            },
        }


def store_differences(path: Path, reference: Path) -> list[str]:
    """The parts of the store at `path` that differ from the one at `reference` (empty: the same store)."""
    got, expected = store_contents(path), store_contents(reference)
    return [key for key in expected if not _same_value(got[key], expected[key])]


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def has_model(path: Path, name: str) -> bool:
    with BenchStore.open(path) as store:
        return any(r.name == name for r in store.model_records())


def bench_part(work: Path, kills: int, rng: random.Random, shape: tuple[int, int]) -> dict:
    """Kill `bench import` and `bench add-model` at random moments; after each kill the store must check ok (or not
    exist yet), and the finished store must equal one built without kills."""
    matrix, samples = _matrix(work, *shape, 0)
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
    add_consistent = add_killed = add_tries = 0
    for _ in range(kills):
        code = kill_after(added, work, rng.uniform(0.05, max(0.2, add_seconds)))
        add_killed += code is None
        add_tries += 1
        if lifelong("bench", "check", "store", cwd=work, check=False).returncode == 0:
            add_consistent += 1
        if code == 0:
            break
    if not has_model(work / "store", "new"):  # every try was killed before its commit: finish it
        lifelong(*added, cwd=work)
    status = lifelong("bench", "status", "store", cwd=work, check=False)
    return {
        "import_kills": killed,
        "import_tries": kills,
        "import_consistent_after_kill": consistent,
        "add_model_kills": add_killed,
        "add_model_tries": add_tries,
        "add_model_consistent_after_kill": add_consistent,
        "add_model_probe_ok": probe.returncode == 0,
        "status_after": status.returncode,
        "differs_from_store_without_kills": store_differences(work / "store", work / "clean"),
        "import_seconds": round(import_seconds, 2),
    }


def failures(results: dict) -> list[str]:
    """Every check of `results` that failed, in words (empty: all passed)."""
    found = []
    run, bench = results.get("run"), results.get("bench")
    if run is not None:
        if not run["identical_to_uninterrupted"]:
            found.append("the killed and resumed run's records differ from the uninterrupted run's")
        if not run["second_writer_refused"]:
            found.append("a second run into the folder of a running one was not refused")
    if bench is not None:
        for step in ("import", "add_model"):
            if bench[f"{step}_consistent_after_kill"] != bench[f"{step}_tries"]:
                found.append(f"bench {step.replace('_', '-')}: the store failed `bench check` after a kill")
        if not bench["add_model_probe_ok"]:
            found.append("bench add-model failed on the store built without kills")
        if bench["status_after"] != 0:
            found.append("bench status failed on the killed store")
        if bench["differs_from_store_without_kills"]:
            parts = ", ".join(bench["differs_from_store_without_kills"])
            found.append(f"the killed store differs from the one built without kills in: {parts}")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 kills, 1-epoch runs on 16 px, a 40 x 1,000 matrix")
    parser.add_argument("--kills", type=int, help="kills per part (default 20; quick 2)")
    parser.add_argument("--stream", default="mini")
    parser.add_argument(
        "--work", type=Path, default=None, help="working folder (default: a temporary one, removed if all pass)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    parser.add_argument("--skip-runs", action="store_true")
    parser.add_argument("--skip-bench", action="store_true")
    args = parser.parse_args(argv)
    kills = args.kills or (2 if args.quick else 20)
    work = args.work or Path(tempfile.mkdtemp(prefix="lifelong-reliability-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    results = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "kills_asked": kills, "quick": args.quick}
    if not args.skip_runs:
        (work / "runs").mkdir()
        options = QUICK_RUN_OPTIONS if args.quick else []
        results["run"] = runs_part(work / "runs", args.stream, kills, rng, options)
    if not args.skip_bench:
        (work / "bench").mkdir(exist_ok=True)
        results["bench"] = bench_part(work / "bench", kills, rng, (40, 1_000) if args.quick else (120, 20_000))
    print(json.dumps(results, indent=2, default=str))
    found = failures(results)
    if found:
        raise SystemExit("reliability FAILED:\n- " + "\n- ".join(found))
    print("reliability: every check passed")
    if args.work is None:
        shutil.rmtree(work)  # kept on failure, for a look


if __name__ == "__main__":
    main()
