"""`bench compare` checks what its estimators need before any work: each estimator's declared `min_sources` is
true (it fits on that many source models and not on fewer), and a zoo too small for a method on some split is
refused at once, naming the method, what it needs and what to give, with nothing written."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.core.errors import UsageError
from lifelong.sortsearch.estimators.base import EstimationTask, estimator, estimator_names, min_sources


def planted(m: int, n: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta, b = rng.normal(0, 1, m), rng.normal(0, 1.5, n)
    return (rng.random((m, n)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(np.uint8)


@pytest.mark.parametrize("name", estimator_names())
def test_every_estimator_fits_on_its_declared_fewest_sources_and_not_on_fewer(name):
    least = min_sources(name)
    rows = planted(least + 2, seed=1)
    plan = estimator(name).plan(EstimationTask(rows[:least], 20, seed=0))
    assert np.isfinite(plan.estimate(rows[least:, plan.items]).accuracy).all()
    if least > 1:
        with pytest.raises(ValueError):
            estimator(name).plan(EstimationTask(rows[: least - 1], 20, seed=0))


def test_the_irt_family_and_the_regressions_declare_what_they_need():
    assert {name: min_sources(name) for name in ("irt", "p-irt", "gp-irt", "ridge", "random-mean", "lifelong")} == {
        "irt": 3,
        "p-irt": 3,
        "gp-irt": 3,
        "ridge": 2,
        "random-mean": 1,
        "lifelong": 1,
    }


def six_model_zoo(folder):
    """The issue's case: 6 models of two families, so holding out the 4 mlps leaves 2 sources."""
    folder.mkdir()
    np.save(folder / "correctness.npy", planted(6, 1200))
    families = ["resnet_mini", "mlp", "mlp", "resnet_mini", "mlp", "mlp"]
    with (folder / "models.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "architecture"])
        writer.writerows(enumerate(families))
    return folder


def test_a_six_model_zoo_is_refused_before_any_record_naming_the_methods_and_what_to_give(tmp_path):
    zoo = six_model_zoo(tmp_path / "zoo")
    result = CliRunner().invoke(app, ["bench", "compare", "--zoo", str(zoo), "--out", str(tmp_path / "cmp")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "gp-irt, irt and p-irt need at least 3 source models" in text
    assert "the shift split (mlp held out) leaves 2 (of 6 models)" in text
    assert "--methods random-mean," in text and "irt" not in text.split("--methods ")[1].split(" ")[0]
    assert "bench build-zoo --models N" in text and "--splits interpolation,extrapolation" in text
    assert not (tmp_path / "cmp").exists()


def test_the_api_raises_the_same_before_work_and_the_methods_that_fit_run(tmp_path):
    zoo = six_model_zoo(tmp_path / "zoo")
    with pytest.raises(UsageError, match="irt needs at least 3 source models"):
        api.bench_compare(api.BenchCompareSpec(zoo=zoo, out=tmp_path / "cmp", methods="random-mean,irt", seeds=1))
    assert not (tmp_path / "cmp").exists()
    done = api.bench_compare(
        api.BenchCompareSpec(zoo=zoo, out=tmp_path / "cmp", methods="random-mean,ridge", seeds=1, budgets="10")
    )
    assert {row["method"] for row in done.rows} == {"random-mean", "ridge"}


def test_rank_and_eval_refuse_too_few_ranking_models(tmp_path):
    rows = planted(5, 200)
    np.save(tmp_path / "rank.npy", rows[:2])
    np.save(tmp_path / "eval.npy", rows[2:])
    spec = api.BenchCompareSpec(rank=tmp_path / "rank.npy", evaluate=tmp_path / "eval.npy", budget=20)
    with pytest.raises(UsageError, match=r"--rank holds 2 \(of 5 models\); give --rank more models \(rows\), or "):
        api.bench_compare(spec)
