"""`lifelong bench ...` from Python (lifelong.api): each workflow returns objects and prints nothing, long work reports
through a progress callback, bad values raise the toolkit's errors with the command line's messages, and an
interrupted import, add-samples, compare or zoo continues from Python to what an uninterrupted one gives."""

from __future__ import annotations

import csv
import functools
import json
import math
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app

OLD, NEW = 300, 60  # samples in the store, samples added later


def planted(m=30, n=OLD + NEW, seed=0):
    """A step-shaped 0/1 matrix (model skill > sample difficulty) with 2% of its cells flipped."""
    rng = np.random.default_rng(seed)
    truth = (rng.random(m)[:, None] > rng.random(n)[None, :]).astype(np.uint8)
    return np.where(rng.random((m, n)) < 0.02, 1 - truth, truth).astype(np.uint8)


def write_samples(path, first, count):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        writer.writerows([["planted", "clean", j % 10, f"hash{j}"] for j in range(first, first + count)])


def cli(*args):
    return CliRunner().invoke(app, ["bench", *map(str, args)], terminal_width=200)


@pytest.fixture
def files(tmp_path):
    """The first 20 planted models on the first 300 samples (matrix, samples and models CSVs), the new samples'
    CSV, and the truth."""
    truth = planted()
    np.save(tmp_path / "matrix.npy", truth[:20, :OLD])
    write_samples(tmp_path / "samples.csv", 0, OLD)
    write_samples(tmp_path / "new.csv", OLD, NEW)
    (tmp_path / "models.csv").write_text("name\n" + "".join(f"model-{i:02d}\n" for i in range(20)))
    return tmp_path, truth


def imported(tmp_path, name="store", sort=True):
    spec = api.BenchImportSpec(
        tmp_path / name, tmp_path / "matrix.npy", tmp_path / "samples.csv", models=tmp_path / "models.csv"
    )
    result = api.bench_import(spec)
    if sort:
        api.bench_sort(api.BenchSortSpec(tmp_path / name))
    return result


def cells(store):
    """Every stored cell and the observed mask, read back."""
    from lifelong.sortsearch.store import BenchStore

    with BenchStore.open(store) as bench:
        n, m = bench.size()
        ids = np.arange(m)
        return (
            np.unpackbits(bench.read_rows(ids), axis=1, count=n),
            np.unpackbits(bench.read_observed(ids), axis=1, count=n),
            [r.name for r in bench.model_records()],
        )


def test_the_store_workflow_returns_objects_and_prints_nothing(files, capsys):
    tmp_path, truth = files
    empty = api.bench_create(api.BenchCreateSpec(tmp_path / "empty"))
    assert (empty.store, empty.kept, empty.models, empty.samples) == (tmp_path / "empty", False, 0, 0)
    status = api.bench_status(api.BenchStatusSpec(tmp_path / "empty"))
    assert (status.n, status.m, status.latest_sort, len(status.leaderboard)) == (0, 0, None, 0)
    done = imported(tmp_path, sort=False)
    assert (done.models, done.samples, done.added, done.grown) == (20, OLD, 20, False)
    sorted_ = api.bench_sort(api.BenchSortSpec(tmp_path / "store"))
    assert sorted_.version == 1 and sorted_.samples == OLD and len(sorted_.ranking_models) == 20
    ids = api.bench_plan_model(api.BenchPlanModelSpec(tmp_path / "store", budget=30))
    assert isinstance(ids, list) and len(ids) == len(set(ids)) == 30 and all(isinstance(i, int) for i in ids)
    (tmp_path / "results.csv").write_text("sample_id,correct\n" + "".join(f"{i},{truth[25, i]}\n" for i in ids))
    added = api.bench_add_model(api.BenchAddModelSpec(tmp_path / "store", "newcomer", tmp_path / "results.csv"))
    assert (added.model_id, added.observed, added.samples, added.full) == (20, 30, OLD, False)
    assert added.accuracy.kind == "estimated" and added.accuracy.low <= added.accuracy.accuracy <= added.accuracy.high
    status = api.bench_status(api.BenchStatusSpec(tmp_path / "store"))
    board = status.leaderboard
    assert (status.n, status.m, status.latest_sort, status.estimated_rows) == (OLD, 21, 1, 1)
    assert list(board.columns)[:3] == ["id", "name", "accuracy"] and board.accuracy.is_monotonic_decreasing
    newcomer = board[board.name == "newcomer"].iloc[0]
    assert newcomer.kind == "estimated" and newcomer.accuracy == pytest.approx(added.accuracy.accuracy)
    observed = board[board.kind == "observed"].set_index("name").accuracy
    assert observed.to_dict() == {f"model-{i:02d}": pytest.approx(truth[i, :OLD].mean()) for i in range(20)}
    checked = api.bench_check(api.BenchCheckSpec(tmp_path / "store"))
    assert checked.ok and checked.problems == [] and (checked.n, checked.m) == (OLD, 21)
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    shown = json.loads(cli("status", tmp_path / "store", "--json").stdout)  # the command prints the same state
    rows = [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in r.items()}
        for r in board.to_dict("records")
    ]
    assert shown["leaderboard"] == rows
    assert {k: shown[k] for k in status.info()} == status.info()


def test_plan_and_add_samples_from_python(files, capsys):
    tmp_path, truth = files
    imported(tmp_path)
    plan = api.bench_plan_samples(api.BenchPlanSamplesSpec(tmp_path / "store", budget=8, out=tmp_path / "plan.json"))
    assert plan.store_models == 20 and len(plan.models) == 8 and plan.out == tmp_path / "plan.json"
    assert plan.models == json.loads((tmp_path / "plan.json").read_text())["models"]
    rows = [int(name.split("-")[1]) for name in plan.models]
    np.save(tmp_path / "outcomes.npy", truth[rows, OLD:])
    calls = []
    spec = api.BenchAddSamplesSpec(
        tmp_path / "store", tmp_path / "new.csv", tmp_path / "outcomes.npy", tmp_path / "plan.json"
    )
    added = api.bench_add_samples(spec, progress=lambda *call: calls.append(call))
    assert added.sample_ids == list(range(OLD, OLD + NEW)) and added.planned == plan.models and not added.resumed
    assert added.models == 20 and added.difficulty.shape == (NEW,)
    assert [done for _, done, _ in calls] == [0, 1, 2] and calls[-1][2] == 2
    stored, seen, _ = cells(tmp_path / "store")
    assert np.array_equal(stored[rows, OLD:], truth[rows, OLD:]) and seen[:, OLD:].sum() == 8 * NEW
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""


def test_bad_values_raise_the_toolkit_errors_with_the_command_lines_messages(files):
    tmp_path, _ = files
    imported(tmp_path)
    store = tmp_path / "store"
    cases = [
        (api.bench_status, api.BenchStatusSpec(tmp_path / "nowhere"), api.DataError, ("status", tmp_path / "nowhere")),
        (
            api.bench_plan_model,
            api.BenchPlanModelSpec(store, 5, sampling="unifrom"),
            api.UsageError,
            ("plan-model", store, "--budget", 5, "--sampling", "unifrom"),
        ),
        (
            api.bench_import,
            api.BenchImportSpec(store, tmp_path / "matrix.npy", tmp_path / "samples.csv"),
            api.ResumeRefused,
            ("import", store, "--matrix", tmp_path / "matrix.npy", "--samples", tmp_path / "samples.csv"),
        ),
        (
            api.bench_add_model,
            api.BenchAddModelSpec(store, "x", tmp_path / "nowhere.csv"),
            api.DataError,
            ("add-model", store, "--name", "x", "--results", tmp_path / "nowhere.csv"),
        ),
        (
            api.bench_plan_samples,
            api.BenchPlanSamplesSpec(store, 21),
            api.UsageError,
            ("plan-samples", store, "--budget", 21),
        ),
        (
            api.bench_create,
            api.BenchCreateSpec(store, resume=True, overwrite=True),
            api.UsageError,
            ("create", store, "--resume", "--overwrite"),
        ),
    ]
    for function, spec, error, args in cases:
        with pytest.raises(error) as raised:
            function(spec)
        shown = cli(*args)
        assert shown.exit_code == 2 and shown.stderr.strip() == f"error: {raised.value}", (args, shown.stderr)
    with pytest.raises(api.UsageError, match="did you mean 'confidence'"):
        api.bench_experiment(
            api.BenchExperimentSpec(tmp_path / "matrix.npy", tmp_path / "matrix.npy", sort="confidense")
        )
    with pytest.raises(api.UsageError, match="budgets must be"):
        api.bench_experiment(api.BenchExperimentSpec(tmp_path / "matrix.npy", tmp_path / "matrix.npy", budgets="8,x"))
    with pytest.raises(api.UsageError, match="--budget 0 must be at least 1"):  # the command line checks it as it reads
        api.bench_plan_model(api.BenchPlanModelSpec(store, 0))


def test_an_interrupted_import_continues_from_python_to_the_uninterrupted_store(tmp_path):
    rng = np.random.default_rng(1)
    matrix = (rng.random((600, 40)) < 0.5).astype(np.uint8)  # three inserts of at most 256 models
    np.save(tmp_path / "matrix.npy", matrix)
    write_samples(tmp_path / "samples.csv", 0, 40)
    spec = api.BenchImportSpec(tmp_path / "store", tmp_path / "matrix.npy", tmp_path / "samples.csv")
    calls = []

    def stop_after_one_insert(description, done, total):
        calls.append((description, done, total))
        if done >= 256:
            raise KeyboardInterrupt

    with pytest.raises(api.Interrupted) as stopped:
        api.bench_import(spec, progress=stop_after_one_insert)
    assert stopped.value.kept == "Imported models are kept: add --resume to continue."
    assert not (tmp_path / "store").exists() and (tmp_path / "store.work").is_dir()
    with pytest.raises(api.ResumeRefused, match="holds an interrupted import"):
        api.bench_import(spec)
    resumed = api.bench_import(api.BenchImportSpec(**{**spec.__dict__, "resume": True}))
    assert (resumed.models, resumed.added) == (600, 600 - 256) and not (tmp_path / "store.work").exists()
    whole = api.bench_import(api.BenchImportSpec(tmp_path / "whole", tmp_path / "matrix.npy", tmp_path / "samples.csv"))
    assert whole.added == 600 and calls[0] == ("import", 0.0, 600)
    for a, b in zip(cells(tmp_path / "store"), cells(tmp_path / "whole"), strict=True):
        assert np.array_equal(a, b)


def test_an_interrupted_add_samples_completes_when_called_again(files):
    tmp_path, truth = files
    imported(tmp_path)
    shutil.copytree(tmp_path / "store", tmp_path / "twin")
    plan = api.bench_plan_samples(api.BenchPlanSamplesSpec(tmp_path / "store", 6, sampling="random", seed=2))
    rows = [int(name.split("-")[1]) for name in plan.models]
    np.save(tmp_path / "outcomes.npy", truth[rows, OLD:])
    spec = api.BenchAddSamplesSpec(
        tmp_path / "store", tmp_path / "new.csv", tmp_path / "outcomes.npy", sampling="random", seed=2
    )

    def stop_once_registered(description, done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(api.Interrupted, match="add-samples again"):
        api.bench_add_samples(spec, progress=stop_once_registered)
    assert api.bench_status(api.BenchStatusSpec(tmp_path / "store")).n == OLD + NEW  # registered, cells not written
    completed = api.bench_add_samples(spec)
    assert completed.resumed and completed.sample_ids == list(range(OLD, OLD + NEW))
    uninterrupted = api.bench_add_samples(api.BenchAddSamplesSpec(**{**spec.__dict__, "store": tmp_path / "twin"}))
    assert not uninterrupted.resumed and np.array_equal(completed.difficulty, uninterrupted.difficulty)
    for a, b in zip(cells(tmp_path / "store"), cells(tmp_path / "twin"), strict=True):
        assert np.array_equal(a, b)


def test_an_interrupted_compare_resumes_to_the_same_records(tmp_path, capsys):
    np.save(tmp_path / "m.npy", planted(m=40, n=400, seed=3))
    fields = dict(matrix=tmp_path / "m.npy", splits="interpolation,extrapolation", seeds=2, budgets=[20])
    fields |= dict(methods=["random-mean", "lifelong"])
    spec = api.BenchCompareSpec(**fields, out=tmp_path / "cut")
    seen = []

    def stop_after_three(description, done, total):
        seen.append((description, done, total))
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(api.Interrupted, match="add --resume to continue"):
        api.bench_compare(spec, progress=stop_after_three)
    assert seen[-1][1:] == (3, 8) and "mean abs error" in seen[-1][0]
    with pytest.raises(api.ResumeRefused, match="--resume continues it"):
        api.bench_compare(spec)
    rest = []
    resume = api.BenchCompareSpec(**fields, out=tmp_path / "cut", resume=True)
    resumed = api.bench_compare(resume, progress=lambda *call: rest.append(call))
    assert [done for _, done, _ in rest] == [0, 1, 2, 3, 4, 5]  # only the 5 records the interruption left to do
    whole = api.bench_compare(api.BenchCompareSpec(**fields, out=tmp_path / "whole"))

    def estimates(folder):
        lines = (folder / "records.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines]
        return {(r["split"], r["seed"], r["budget"], r["method"]): r["estimate"] for r in records}

    assert len(estimates(tmp_path / "cut")) == 8 and estimates(tmp_path / "cut") == estimates(tmp_path / "whole")
    drop = ("seconds", "peak_mib")
    assert [{k: v for k, v in r.items() if k not in drop} for r in resumed.rows] == [
        {k: v for k, v in r.items() if k not in drop} for r in whole.rows
    ]
    assert set(resumed.frame().method) == {"random-mean", "lifelong"}
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""


def test_an_interrupted_zoo_resumes_from_python_to_the_same_matrix(tmp_path, monkeypatch, capsys):
    import lifelong.sortsearch.zoo as zoo
    from lifelong.sortsearch.zoo_models import ZooSpace

    tiny = ZooSpace(widths={"mlp": (16,), "cnn": (4,), "resnet_mini": (2,)}, train_sizes=(48,), max_epochs=1)
    monkeypatch.setattr(zoo, "ZooSettings", functools.partial(zoo.ZooSettings, space=tiny))
    fields = dict(models=3, source="builtin:letters", test_samples=20, corruptions="", severities="1")
    notes = []

    def stop_after_one_model(description, done, total):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(api.Interrupted, match="Finished models are kept"):
        api.bench_build_zoo(api.BenchBuildZooSpec(tmp_path / "cut", **fields), progress=stop_after_one_model)
    resumed = api.bench_build_zoo(api.BenchBuildZooSpec(tmp_path / "cut", **fields, resume=True), on_note=notes.append)
    assert (resumed.summary["trained"], resumed.summary["reused"]) == (2, 1)
    assert notes == resumed.notes and any("no official test split" in note for note in notes)
    whole = api.bench_build_zoo(api.BenchBuildZooSpec(tmp_path / "whole", **fields))
    assert whole.summary["trained"] == 3
    for name in ("correctness.npy", "confidence.npy"):
        assert np.array_equal(np.load(tmp_path / "cut" / name), np.load(tmp_path / "whole" / name))
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
