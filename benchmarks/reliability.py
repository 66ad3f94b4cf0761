"""Reliability under kills: `lifelong run` killed with SIGKILL at random moments and resumed gives the numbers of an
uninterrupted run; `lifelong bench import` and `add-model` killed at random moments leave a consistent store, and
the finished store equals one built without kills; two runs into one folder: the second is refused. Prints the
counts, the tries and kills of each part, and exits 1 naming every check that failed.

Every kill lands while the command writes: each try's files are watched (a run's folder; the store, and the import's
STORE.work), and it is SIGKILLed right after the k-th change seen, k drawn from the changes its uninterrupted baseline
made (bench import, add-model: a random step of its writing, whatever the machine's speed), or at a random moment in
the first quarter of the baseline's writing time after its first write (run). A try that ends first counts as a try,
not a kill; a part that killed nothing fails a run without --quick.

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
from collections.abc import Sequence
from dataclasses import dataclass
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


POLL_S = 0.003  # how often a watched command's files are looked at (each change seen is one of its write steps)


def files_state(paths: Sequence[Path]) -> frozenset[tuple[str, int, int]]:
    """(path, size, mtime) of everything under `paths` (and of the paths themselves): what was written so far."""
    found = set()
    for root in paths:
        for folder, dirs, names in os.walk(root):
            for name in [".", *dirs, *names]:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except FileNotFoundError:  # removed while looked at
                    continue
                found.add((path, info.st_size, info.st_mtime_ns))
    return frozenset(found)


@dataclass(frozen=True)
class Watched:
    """How a watched command went: its exit code (None: killed), when its files changed, when it ended."""

    code: int | None
    changes: tuple[float, ...]  # seconds from its start to each change seen under the watched paths: its write steps
    seconds: float  # from its start to its end or its kill
    stderr: str

    @property
    def wrote_at(self) -> float | None:
        """Seconds to its first write (None: it wrote nothing)."""
        return self.changes[0] if self.changes else None

    @property
    def writing_seconds(self) -> float:
        """From its first write to its last."""
        return self.changes[-1] - self.changes[0] if self.changes else 0.0


def watched(
    args: list[str], cwd: Path, watch: Sequence[Path], *, kill_after: float | None = None, kill_at: int | None = None
) -> Watched:
    """Run `lifelong args`, looking at the files under `watch` until it ends; each change seen is a step of its
    writing. SIGKILL it `kill_after` seconds after its first write, or as soon as its `kill_at`-th change is seen
    (a named point of its work), unless it ends first (code None: killed)."""
    seen = files_state(watch)
    with tempfile.TemporaryFile("w+") as errors:
        start = time.perf_counter()
        child = subprocess.Popen([*LIFELONG, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors, text=True)
        changes: list[float] = []
        killed = False
        while child.poll() is None:
            now = time.perf_counter() - start
            due = changes and kill_after is not None and now >= changes[0] + kill_after
            if due or (kill_at is not None and len(changes) >= kill_at):
                child.send_signal(signal.SIGKILL)
                killed = True
                break
            state = files_state(watch)
            if state != seen:
                seen = state
                changes.append(now)
            else:
                time.sleep(POLL_S)
        child.wait()
        seconds = time.perf_counter() - start
        if not killed and files_state(watch) != seen:  # wrote between the last look and its end
            changes.append(seconds)
        errors.seek(0)
        return Watched(None if killed else child.returncode, tuple(changes), seconds, errors.read())


def baseline(args: list[str], cwd: Path, watch: Sequence[Path]) -> Watched:
    """An uninterrupted watched run of `lifelong args` that must succeed and write: where the kills are drawn."""
    done = watched(args, cwd, watch)
    if done.code != 0 or not done.changes:
        why = f"failed ({done.code})" if done.code else "wrote nothing under " + ", ".join(map(str, watch))
        raise RuntimeError(f"lifelong {' '.join(args)} {why}: {done.stderr[-2000:]}")
    return done


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
    reference = ["run", "--stream", stream, "--out", "reference", "--no-predictions", *options]
    ran = baseline(reference, work, [work / "reference"])
    (folder,) = [p for p in (work / "reference").iterdir() if (p / "events.jsonl").is_file()]
    expected = comparable(folder / "events.jsonl")
    killed, tries, finished_early, errors = 0, 0, 0, []
    args = ["run", "--stream", stream, "--out", "killed", "--no-predictions", *options]
    for cycle in range(kills):  # each kill a random moment in the first quarter of the writing time
        after = rng.uniform(0, ran.writing_seconds / 4)
        done = watched(args + (["--resume"] if cycle else []), work, [work / "killed"], kill_after=after)
        tries += 1
        if done.code is None:
            killed += 1
        else:
            finished_early += 1
            errors += [done.stderr[-500:]] if done.code else []
            break  # a finished run cannot be killed again
    lifelong(*args, "--resume", cwd=work)  # finish
    got = comparable(work / "killed" / folder.name / "events.jsonl")
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
        "tries": tries,
        "finished_before_a_kill": finished_early,
        "errors": errors,
        "records": len(got),
        "identical_to_uninterrupted": identical,
        "second_writer_refused": second.returncode == 2 and "being written by" in second.stderr,
        "reference_seconds": round(ran.seconds, 1),
        "reference_first_write_s": round(ran.wrote_at or 0.0, 2),
        "reference_writing_s": round(ran.writing_seconds, 2),
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


def _on(args: list[str], store: str) -> list[str]:
    """The same command on another store."""
    return [a if a != "store" else store for a in args]


def _checks(work: Path) -> bool:
    """The store at work/store is consistent: absent (a killed build leaves none) or `bench check` passes."""
    return not (work / "store").exists() or lifelong("bench", "check", "store", cwd=work, check=False).returncode == 0


def bench_part(work: Path, kills: int, rng: random.Random, shape: tuple[int, int]) -> dict:
    """Kill `bench import` and `bench add-model` at random moments while they write; after each kill the store must
    check ok (or not exist yet), and the store finished from what the kills left must equal one built without kills.
    A killed import is continued by the next try (`--resume`); a try killed after its model was committed is undone
    (the store as before that try) so that every try has the model to add."""
    matrix, samples = _matrix(work, *shape, 0)
    imported = ["bench", "import", "store", "--matrix", str(matrix), "--samples", str(samples)]
    building = [work / "store", work / "store.work"]  # the import builds in store.work, renamed to store at the end
    clean = baseline(_on(imported, "clean"), work, [work / "clean", work / "clean.work"])
    consistent = killed = mid_build = resumed = 0
    import_errors: list[str] = []
    left = len(clean.changes)  # the write steps left to the build (a resume does what its killed try did not)
    for _ in range(kills):
        if (work / "store").exists():  # the last try finished (or was killed after its rename): start anew
            shutil.rmtree(work / "store")
        resume = ["--resume"] if (work / "store.work").exists() else []
        resumed += bool(resume)
        left = left if resume else len(clean.changes)
        at = rng.randint(1, max(1, left))
        done = watched(imported + resume, work, building, kill_at=at)
        left -= at
        killed += done.code is None
        mid_build += done.code is None and not (work / "store").exists()
        consistent += _checks(work)
        if done.code:  # a try that failed (a resume refused what a kill left): noted, and the next one starts anew
            import_errors.append(done.stderr[-500:])
            shutil.rmtree(work / "store.work", ignore_errors=True)
    if not (work / "store").exists():
        finish = lifelong(*imported, "--resume", cwd=work, check=False)  # finish what the last kill left
        if finish.returncode:
            import_errors.append(finish.stderr[-500:])
            lifelong(*imported, "--overwrite", cwd=work)  # so that the checks below still run
    lifelong("bench", "sort", "store", cwd=work)
    lifelong("bench", "sort", "clean", cwd=work)
    plan = lifelong("bench", "plan-model", "store", "--budget", "256", cwd=work).stdout.split()
    lifelong("bench", "plan-model", "clean", "--budget", "256", cwd=work)  # its plan cached too: the same work to do
    truth = np.load(matrix)[0]
    with open(work / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sample_id", "correct"])
        writer.writerows((sid, int(truth[int(sid)])) for sid in plan)
    added = ["bench", "add-model", "store", "--name", "new", "--results", "results.csv", "--budget", "256"]
    probe = watched(_on(added, "clean"), work, [work / "clean"])
    add_consistent = add_killed = before_commit = 0
    add_errors: list[str] = []
    before = work / "store.before-try"
    for _ in range(kills):
        shutil.copytree(work / "store", before)
        done = watched(added, work, [work / "store"], kill_at=rng.randint(1, max(1, len(probe.changes))))
        add_killed += done.code is None
        add_errors += [done.stderr[-500:]] if done.code else []
        add_consistent += _checks(work)
        committed = has_model(work / "store", "new")
        before_commit += done.code is None and not committed
        if committed:  # finished, or killed after its commit: the next try starts from before it
            shutil.rmtree(work / "store")
            before.rename(work / "store")
        shutil.rmtree(before, ignore_errors=True)
    lifelong(*added, cwd=work)  # finish what the last kill left
    status = lifelong("bench", "status", "store", cwd=work, check=False)
    return {
        "import_kills": killed,
        "import_tries": kills,
        "import_consistent_after_kill": consistent,
        "import_kills_before_the_store_was_in_place": mid_build,
        "import_tries_resuming_a_killed_one": resumed,
        "import_errors": import_errors,
        "add_model_kills": add_killed,
        "add_model_tries": kills,
        "add_model_consistent_after_kill": add_consistent,
        "add_model_kills_before_its_commit": before_commit,
        "add_model_errors": add_errors,
        "add_model_probe_ok": probe.code == 0,
        "status_after": status.returncode,
        "differs_from_store_without_kills": store_differences(work / "store", work / "clean"),
        "import_seconds": round(clean.seconds, 2),
        "import_first_write_s": round(clean.wrote_at or 0.0, 2),
        "import_writing_s": round(clean.writing_seconds, 3),
        "import_write_steps_seen": len(clean.changes),
        "add_model_seconds": round(probe.seconds, 2),
        "add_model_first_write_s": round(probe.wrote_at or 0.0, 2),
        "add_model_writing_s": round(probe.writing_seconds, 3),
        "add_model_write_steps_seen": len(probe.changes),
    }


def kills_per_part(results: dict) -> dict[str, tuple[int, int]]:
    """Part -> (kills, tries) for the parts that ran."""
    run, bench = results.get("run"), results.get("bench")
    parts = {"run": (run["kills"], run["tries"])} if run is not None else {}
    for step in ("import", "add_model") if bench is not None else ():
        parts[step.replace("_", "-")] = (bench[f"{step}_kills"], bench[f"{step}_tries"])
    return parts


def failures(results: dict) -> list[str]:
    """Every check of `results` that failed, in words (empty: all passed)."""
    found = []
    run, bench = results.get("run"), results.get("bench")
    for part, (killed, tries) in kills_per_part(results).items():
        if killed == 0 and not results["quick"]:
            found.append(f"{part}: none of its {tries} tries was killed while it ran (each ended first)")
    if run is not None:
        if run["errors"]:
            found.append(f"a killed run failed to resume: {run['errors'][0]}")
        if not run["identical_to_uninterrupted"]:
            found.append("the killed and resumed run's records differ from the uninterrupted run's")
        if not run["second_writer_refused"]:
            found.append("a second run into the folder of a running one was not refused")
    if bench is not None:
        for step in ("import", "add_model"):
            if bench[f"{step}_consistent_after_kill"] != bench[f"{step}_tries"]:
                found.append(f"bench {step.replace('_', '-')}: the store failed `bench check` after a kill")
            if bench[f"{step}_errors"]:
                found.append(f"bench {step.replace('_', '-')}: a try after a kill failed: {bench[f'{step}_errors'][0]}")
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
    parts = kills_per_part(results)
    print("kills per part: " + ", ".join(f"{part} {k} of {n} tries" for part, (k, n) in parts.items()))
    found = failures(results)
    if found:
        raise SystemExit("reliability FAILED:\n- " + "\n- ".join(found))
    print("reliability: every check passed")
    if args.work is None:
        shutil.rmtree(work)  # kept on failure, for a look


if __name__ == "__main__":
    main()
