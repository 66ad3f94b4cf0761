"""The estimator interface, the plain estimators, `lifelong`, the comparison protocol and its table, and
`lifelong bench compare`, each against an independent computation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import kendalltau
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.sortsearch.estimators.base import EstimationTask, check_observed, estimator, estimator_names
from lifelong.sortsearch.estimators.protocol import Split, make_splits, read_records, run_comparison, run_one
from lifelong.sortsearch.estimators.scoring import paired, summarize
from lifelong.sortsearch.search import dp_threshold, extrapolate, sample_positions
from lifelong.sortsearch.sort import sort_by_sum


def planted(m: int = 120, n: int = 3000, seed: int = 0, slope: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1, m), rng.normal(0, 1.5, n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(-slope * (theta[:, None] - b[None, :])))).astype(np.uint8)


A = planted()


def test_the_registry_lists_every_method_of_the_issue_and_builds_them():
    names = estimator_names()
    for name in ("random-mean", "gp-irt", "ridge", "aipw", "lifelong", "stratified-mean", "anchor-points"):
        assert name in names
    assert estimator("random-mean").name == "random-mean"


def test_a_task_shares_one_random_draw_per_seed_and_refuses_bad_budgets():
    a, b = EstimationTask(A[:50], 40, seed=3), EstimationTask(A[50:90], 40, seed=3)
    assert np.array_equal(a.random_items, b.random_items) and len(set(a.random_items.tolist())) == 40
    assert not np.array_equal(a.random_items, EstimationTask(A[:50], 40, seed=4).random_items)
    assert a.rng("x").random() == b.rng("x").random() != a.rng("y").random()
    with pytest.raises(ValueError, match="budget must be between 1 and the 3000 samples"):
        EstimationTask(A[:50], 3001)
    with pytest.raises(ValueError, match="one row of 3 values"):
        check_observed(np.ones((2, 4)), np.arange(3))
    with pytest.raises(ValueError, match="0 \\(wrong\\) or 1"):
        check_observed(np.full((2, 3), 2), np.arange(3))


def test_plain_estimators_are_the_means_and_thresholds_computed_by_hand():
    source, target = A[:90], A[90:]
    task = EstimationTask(source, 60, seed=1)
    plan = estimator("random-mean").plan(task)
    assert np.array_equal(plan.items, task.random_items)
    assert np.allclose(plan.estimate(target[:, plan.items]).accuracy, target[:, task.random_items].mean(axis=1))
    order = sort_by_sum(source)
    positions = sample_positions(source.shape[1], 60, "uniform")
    strat = estimator("stratified-mean").plan(task)
    assert np.array_equal(strat.items, order[positions])
    step = estimator("sort-search").plan(task).estimate(target[:, order[positions]])
    k = extrapolate(dp_threshold(target[:, order[positions]]), positions, source.shape[1])
    assert np.allclose(step.accuracy, k / source.shape[1])


def test_random_mean_is_exact_with_a_zero_width_interval_when_every_sample_is_evaluated():
    est = estimator("random-mean").plan(EstimationTask(A[:90], A.shape[1])).estimate(A[90:][:, np.arange(A.shape[1])])
    assert np.allclose(est.accuracy, A[90:].mean(axis=1)) and np.allclose(est.low, est.high)


def test_lifelong_beats_the_random_sample_mean_where_outcomes_follow_the_models_and_its_intervals_cover():
    # nearly deterministic outcomes (slope 4): what n' samples say about a model carries to the rest. (On a
    # slope-1 matrix every estimator is within about 10% of the random mean: the outcomes' own noise dominates.)
    steep = planted(slope=4.0)
    errors = {"random-mean": [], "lifelong": []}
    covered = []
    for seed in range(4):
        split = make_splits(steep.mean(axis=1), ["interpolation"], 4)[seed]
        for name in errors:
            record = run_one(steep, split, 100, name)
            errors[name].append(np.abs(np.subtract(record.estimate, record.truth)))
            if name == "lifelong":
                covered.append((np.array(record.low) <= record.truth) & (np.array(record.truth) <= record.high))
    mae = {name: np.concatenate(e).mean() for name, e in errors.items()}
    assert mae["lifelong"] < 0.9 * mae["random-mean"], mae
    assert np.concatenate(covered).mean() >= 0.85


def test_splits_follow_the_protocol():
    acc = np.linspace(0, 1, 40)
    families = ["a"] * 10 + ["b"] * 30
    splits = make_splits(acc, ["interpolation", "extrapolation", "shift"], 2, families)
    inter = [s for s in splits if s.kind == "interpolation"]
    assert all(len(s.target) == 10 and set(s.source) | set(s.target) == set(range(40)) for s in inter)
    assert not np.array_equal(inter[0].target, inter[1].target)
    extra = next(s for s in splits if s.kind == "extrapolation")
    assert extra.source.tolist() == list(range(20)) and extra.target.tolist() == list(range(28, 40))
    shift = [s for s in splits if s.kind == "shift"]
    assert shift[0].target.tolist() == list(range(10)) and shift[1].target.tolist() == list(range(10, 40))
    with pytest.raises(ValueError, match="at least 2 model families"):
        make_splits(acc, ["shift"], 1, ["a"] * 40)


def test_a_killed_comparison_resumes_with_the_same_records(tmp_path):
    splits = make_splits(A.mean(axis=1), ["interpolation"], 2)
    methods = ["random-mean", "stratified-mean"]
    whole = run_comparison(A, splits, [20, 50], methods, tmp_path / "whole.jsonl")
    part = tmp_path / "part.jsonl"
    lines = (tmp_path / "whole.jsonl").read_text().splitlines()
    part.write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # three records, then a line cut by the kill
    resumed = run_comparison(A, splits, [20, 50], methods, part, resume=True)
    key = {r.key(): r.estimate for r in whole}
    assert len(resumed) == len(whole) == 8 and all(key[r.key()] == r.estimate for r in resumed)
    assert len(read_records(part)) == 8


def test_the_table_metrics_are_numpy_and_scipys():
    split = Split("given", 0, np.arange(90), np.arange(90, 120))
    records = [run_one(A, split, 60, name) for name in ("random-mean", "lifelong")]
    rows = {r["method"]: r for r in summarize(records)}
    e = np.subtract(records[1].estimate, records[1].truth)
    base = np.abs(np.subtract(records[0].estimate, records[0].truth))
    row = rows["lifelong"]
    assert row["mae"] == pytest.approx(np.abs(e).mean()) and row["rmse"] == pytest.approx(np.sqrt((e * e).mean()))
    assert row["max_error"] == pytest.approx(np.abs(e).max())
    assert row["ratio"] == pytest.approx(np.abs(e).mean() / base.mean())
    assert row["kendall_tau"] == pytest.approx(kendalltau(records[1].estimate, records[1].truth).statistic)
    low, high = np.array(records[1].low), np.array(records[1].high)
    assert row["coverage"] == pytest.approx(np.mean((low <= records[1].truth) & (records[1].truth <= high)))
    (versus,) = paired(records, "lifelong")
    assert versus["difference"] == pytest.approx(np.abs(e).mean() - base.mean())
    assert versus["interval"][0] <= versus["difference"] <= versus["interval"][1]


runner = CliRunner()


def test_bench_compare_prints_the_interface_json_and_names_unknown_methods(tmp_path):
    np.save(tmp_path / "rank.npy", A[:90])
    np.save(tmp_path / "eval.npy", A[90:])
    args = ["bench", "compare", "--rank", tmp_path / "rank.npy", "--eval", tmp_path / "eval.npy"]
    args += ["--budget", "50", "--seed", "2", "--methods", "random-mean,lifelong", "--json"]
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["budget"] == 50 and set(out["methods"]) == {"random-mean", "lifelong"}
    assert len(out["methods"]["lifelong"]["estimates"]) == 30
    bad = runner.invoke(app, [str(a) for a in args[:-3]] + ["--methods", "ridg"])
    assert bad.exit_code == 2 and "did you mean 'ridge'" in bad.output


def test_bench_compare_runs_the_protocol_and_resumes(tmp_path):
    np.save(tmp_path / "m.npy", A[:60, :800])
    args = ["bench", "compare", "--matrix", tmp_path / "m.npy", "--splits", "interpolation,extrapolation"]
    args += ["--seeds", "2", "--budgets", "20", "--methods", "random-mean,lifelong", "--out", tmp_path / "cmp"]
    first = runner.invoke(app, [str(a) for a in args])
    assert first.exit_code == 0, first.output
    table = json.loads((tmp_path / "cmp" / "table.json").read_text())
    assert {r["method"] for r in table["rows"]} == {"random-mean", "lifelong"} and table["paired"]
    again = runner.invoke(app, [str(a) for a in args])
    assert again.exit_code == 2 and "--resume" in again.output
    resumed = runner.invoke(app, [str(a) for a in args] + ["--resume"])
    assert resumed.exit_code == 0 and len(read_records(tmp_path / "cmp" / "records.jsonl")) == 8


@pytest.mark.parametrize("name", ["random-mean", "stratified-mean", "sort-search", "ridge", "lifelong"])
def test_bit_packed_sources_give_what_dense_ones_give(name):
    from lifelong.sortsearch.bitmatrix import PackedRows, pack

    source, target = A[:90], A[90:]
    dense = estimator(name).plan(EstimationTask(source, 64, seed=5))
    packed = estimator(name).plan(EstimationTask(PackedRows(pack(source), source.shape[1]), 64, seed=5))
    assert np.array_equal(dense.items, packed.items)
    a, b = dense.estimate(target[:, dense.items]), packed.estimate(target[:, packed.items])
    assert np.allclose(a.accuracy, b.accuracy)
