"""`lifelong bench plan-samples` / `add-samples` (insert_D) on a planted matrix: the round trip, the estimated
difficulty against the truth, refused results, and an interrupted add completed by a rerun."""

import csv
import json
import signal
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from lifelong.cli import app

runner = CliRunner()
OLD, NEW = 300, 60  # samples in the store, samples added


def invoke(*args):
    return runner.invoke(app, ["bench", *[str(a) for a in args]], catch_exceptions=False)


def planted(m=40, n=OLD + NEW, seed=0):
    """A step-shaped 0/1 matrix (model skill > sample difficulty) with 2% of its cells flipped."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(m)[:, None] > rng.random(n)[None, :]).astype(np.uint8)
    return np.where(rng.random((m, n)) < 0.02, 1 - truth, truth).astype(np.uint8)


def write_samples(path, first, count):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        writer.writerows([["planted", "clean", j % 10, f"hash{j}"] for j in range(first, first + count)])


def write_results(path, names, outcomes):
    """A results CSV model,sample_id,correct: `outcomes` [models, new samples], models named by `names`."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "sample_id", "correct"])
        writer.writerows([[name, j, int(outcomes[i, j])] for i, name in enumerate(names) for j in range(NEW)])


@pytest.fixture
def store(tmp_path):
    """A store of the planted matrix's 40 models (fully observed) on its first 300 samples; the whole truth."""
    truth = planted()
    np.save(tmp_path / "matrix.npy", truth[:, :OLD])
    write_samples(tmp_path / "samples.csv", 0, OLD)
    (tmp_path / "models.csv").write_text("name\n" + "".join(f"model-{i:02d}\n" for i in range(truth.shape[0])))
    write_samples(tmp_path / "new.csv", OLD, NEW)
    path = tmp_path / "store"
    args = (
        "--matrix",
        tmp_path / "matrix.npy",
        "--samples",
        tmp_path / "samples.csv",
        "--models",
        tmp_path / "models.csv",
    )
    assert invoke("import", path, *args).exit_code == 0
    return path, truth


def plan(store_path, tmp_path, budget=10):
    """plan-samples --out: the plan file's planned names; they match what plan-samples prints."""
    out = tmp_path / "plan.json"
    result = invoke("plan-samples", store_path, "--budget", budget, "--out", out)
    assert result.exit_code == 0, result.output
    names = json.loads(out.read_text())["models"]
    assert invoke("plan-samples", store_path, "--budget", budget).output.split() == names
    return out, names


def rows(names):
    return [int(name.split("-")[1]) for name in names]


def new_columns(store_path):
    """The stored cells [models, new samples] and the observed mask, read back from the store."""
    from lifelong.sortsearch.store import BenchStore

    with BenchStore.open(store_path) as bench:
        n, m = bench.size()
        cells = np.unpackbits(bench.read_rows(np.arange(m)), axis=1, count=n)[:, OLD:]
        seen = np.unpackbits(bench.read_observed(np.arange(m)), axis=1, count=n)[:, OLD:]
    return cells, seen


def test_plan_then_add_estimates_each_new_samples_difficulty(store, tmp_path):
    path, truth = store
    plan_file, names = plan(path, tmp_path)
    accuracy = truth[rows(names), :OLD].mean(axis=1)
    assert len(set(names)) == 10 and (np.diff(accuracy) <= 0).all()  # spread over the ranking, most accurate first
    write_results(tmp_path / "results.csv", names, truth[rows(names), OLD:])
    args = ("--samples", tmp_path / "new.csv", "--results", tmp_path / "results.csv")
    added = invoke("add-samples", path, *args, "--plan", plan_file)
    assert added.exit_code == 0, added.output
    assert "added 60 samples (ids 300-359)" in added.output and "observed on 10 of 40 models" in added.output
    cells, seen = new_columns(path)
    assert seen[rows(names)].all() and seen.sum() == 10 * NEW  # the planned cells are facts, the rest estimates
    assert np.array_equal(cells[rows(names)], truth[rows(names), OLD:])
    # difficulty = how many of the 40 models get a sample right; the estimate from 10 of them, against the truth
    error = np.abs(cells.sum(axis=0).astype(int) - truth[:, OLD:].sum(axis=0)) / truth.shape[0]
    assert error.mean() < 0.06, error.mean()  # 0.033; broken estimators: 0.08 (k +- 8) to 0.40 (k = 0)
    assert "estimated difficulty (models of 40 that get a sample right): mean" in added.output
    assert invoke("check", path).exit_code == 0
    status = json.loads(invoke("status", path, "--json").output)
    assert (status["n"], status["m"]) == (OLD + NEW, 40)
    again = invoke("add-samples", path, *args)
    assert again.exit_code == 2 and "was added before" in again.stderr and "line 2" in again.stderr


def test_npy_results_without_a_plan_file_plan_again(store, tmp_path):
    path, truth = store
    names = invoke("plan-samples", path, "--budget", 8, "--sampling", "random", "--seed", 3).output.split()
    np.save(tmp_path / "results.npy", truth[rows(names), OLD:])
    args = ("--samples", tmp_path / "new.csv", "--results", tmp_path / "results.npy")
    added = invoke("add-samples", path, *args, "--sampling", "random", "--seed", 3)
    assert added.exit_code == 0, added.output
    cells, seen = new_columns(path)
    assert seen[rows(names)].all() and np.array_equal(cells[rows(names)], truth[rows(names), OLD:])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("drop-model", "planned but missing: model-"),
        ("other-model", "not planned: model-"),
        ("drop-cell", "lacks model 'model-"),
        ("bad-sample", "sample_id 60 is not a row of --samples"),
        ("bad-value", "correct is '2'"),
        ("npy-rows", "holds 9 rows but the plan has 10 models"),
        ("npy-shape", "a 2-D array 10 x 59"),
    ],
)
def test_results_that_do_not_match_the_plan_are_refused_and_nothing_is_added(store, tmp_path, change, message):
    path, truth = store
    plan_file, names = plan(path, tmp_path)
    outcomes = truth[rows(names), OLD:]
    results = tmp_path / "results.csv"
    if change == "drop-model":
        write_results(results, names[:-1], outcomes[:-1])
    elif change == "other-model":
        other = next(f"model-{i:02d}" for i in range(40) if f"model-{i:02d}" not in names)
        write_results(results, [*names[:-1], other], outcomes)
    else:
        write_results(results, names, outcomes)
        lines = results.read_text().splitlines()
        if change == "drop-cell":
            lines.pop(5)
        elif change == "bad-sample":
            lines.append(f"{names[0]},60,1")
        elif change == "bad-value":
            lines[3] = lines[3].rsplit(",", 1)[0] + ",2"
        results.write_text("\n".join(lines) + "\n")
    if change.startswith("npy"):
        results = tmp_path / "results.npy"
        np.save(results, outcomes[:9] if change == "npy-rows" else outcomes[:, :59])
    result = invoke("add-samples", path, "--samples", tmp_path / "new.csv", "--results", results, "--plan", plan_file)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert json.loads(invoke("status", path, "--json").output)["n"] == OLD
    assert not list((path / "plans").glob("add-samples-*"))  # nothing left to resume


def test_plans_for_another_store_state_and_bad_budgets_are_refused(store, tmp_path):
    path, truth = store
    plan_file, names = plan(path, tmp_path)
    again = invoke("plan-samples", path, "--budget", 10, "--out", plan_file)
    assert again.exit_code == 2 and "--overwrite" in again.stderr
    assert invoke("plan-samples", path, "--budget", 10, "--out", plan_file, "--overwrite").exit_code == 0
    too_many = invoke("plan-samples", path, "--budget", 41)
    assert too_many.exit_code == 2 and "--budget 41 is more than the store's 40 models" in too_many.stderr
    np.save(tmp_path / "full.npy", truth[0, :OLD])
    assert invoke("add-model", path, "--name", "late", "--results", tmp_path / "full.npy").exit_code == 0
    write_results(tmp_path / "results.csv", names, truth[rows(names), OLD:])
    args = ("--samples", tmp_path / "new.csv", "--results", tmp_path / "results.csv")
    stale = invoke("add-samples", path, *args, "--plan", plan_file)
    assert stale.exit_code == 2 and "ranks 40 models but the store has 41" in stale.stderr


KILLED_BETWEEN_WRITES = (  # the estimated cells written, the observed ones not: killed mid-add
    "import os, signal, sys\n"
    "from lifelong.sortsearch.store import BenchStore\n"
    "write_rows = BenchStore.write_rows\n"
    "def once_then_killed(self, *args, observed=True):\n"
    "    if observed:\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "    write_rows(self, *args, observed=observed)\n"
    "BenchStore.write_rows = once_then_killed\n"
    "from lifelong.cli import app\n"
    "app(sys.argv[1:])\n"
)


def test_a_killed_add_is_completed_by_a_rerun_and_equals_an_uninterrupted_one(store, tmp_path):
    path, truth = store
    twin = tmp_path / "twin"
    subprocess.run(["cp", "-r", str(path), str(twin)], check=True)
    plan_file = tmp_path / "plan.json"
    assert (
        invoke("plan-samples", path, "--budget", 10, "--sampling", "random", "--seed", 3, "--out", plan_file).exit_code
        == 0
    )
    names = json.loads(plan_file.read_text())["models"]
    write_results(tmp_path / "results.csv", names, truth[rows(names), OLD:])
    args = ["--samples", tmp_path / "new.csv", "--results", tmp_path / "results.csv"]
    command = [sys.executable, "-c", KILLED_BETWEEN_WRITES, "bench", "add-samples", str(path), *map(str, args)]
    command += ["--plan", str(plan_file)]
    assert subprocess.run(command, timeout=120).returncode == -signal.SIGKILL
    assert json.loads(invoke("status", path, "--json").output)["n"] == OLD + NEW  # registered, facts missing
    assert list((path / "plans").glob("add-samples-*"))  # the plan of the add to complete
    other = tmp_path / "other.csv"
    write_results(other, names, 1 - truth[rows(names), OLD:])
    refused = invoke("add-samples", path, "--samples", tmp_path / "new.csv", "--results", other)
    assert refused.exit_code == 2 and "used other results" in refused.stderr
    resumed = invoke("add-samples", path, *args)  # no --plan, no --sampling random: the interrupted add's plan
    assert resumed.exit_code == 0, resumed.output
    assert "completed the interrupted add: 60 samples (ids 300-359)" in resumed.output
    assert not list((path / "plans").glob("add-samples-*"))
    assert invoke("check", path).exit_code == 0
    uninterrupted = invoke("add-samples", twin, *args, "--plan", plan_file)
    assert uninterrupted.exit_code == 0, uninterrupted.output
    assert all(np.array_equal(a, b) for a, b in zip(new_columns(path), new_columns(twin), strict=True))
    assert invoke("status", path, "--json").output == invoke("status", twin, "--json").output
