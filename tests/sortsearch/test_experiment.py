"""The experiment harness on a planted item-response matrix, in memory and from .npy files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lifelong.commands.bench_reports import experiment_command
from lifelong.sortsearch.bitmatrix import DenseRows
from lifelong.sortsearch.experiment import load_confidence, load_matrix, run_experiment
from lifelong.sortsearch.sort import model_order, sort_by_sum

BUDGETS = [8, 32, 128, 512, 1500]


def planted(m: int = 160, n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """IRT-style correctness: P(model i solves sample j) = sigmoid(3 (ability_i - difficulty_j)); and confidences."""
    rng = np.random.default_rng(seed)
    logits = 3 * (rng.normal(0, 1, (m, 1)) - rng.normal(0, 1, (1, n)))
    p = 1 / (1 + np.exp(-logits))
    return (rng.random((m, n)) < p).astype(np.uint8), np.clip(p + rng.normal(0, 0.05, p.shape), 0, 1)


@pytest.fixture(scope="module")
def matrix() -> tuple[np.ndarray, np.ndarray]:
    return planted()


def test_error_shrinks_with_budget_and_vanishes_epistemically_at_n(matrix) -> None:
    A, _ = matrix
    results = run_experiment(A[:100], A[100:], budgets=BUDGETS)
    assert [r["budget"] for r in results] == BUDGETS
    errors = [r["error"] for r in results]
    agg = [r["aggregate_error"] for r in results]
    assert errors[0] > errors[2] > errors[-1] and agg[0] > agg[-1]
    assert results[0]["kappa"] < results[-1]["kappa"] and results[-1]["pearson"] > 0.95
    full = results[-1]  # n' = n: the DP sees every sample
    assert full["epistemic"] == 0.0 and full["error"] == pytest.approx(full["aleatoric"])
    assert all(r["aleatoric"] == full["aleatoric"] for r in results)  # fixed by the order, not the budget
    assert all(r["error"] <= r["aleatoric"] + r["epistemic"] + 1e-12 for r in results)
    assert all(0 < r["error"] < 0.5 and r["kappa_undefined"] == 0 for r in results)


def test_sorts_samplings_and_seeds(matrix) -> None:
    A, C = matrix
    for sort in ("recursive", "confidence"):
        res = run_experiment(A[:100], A[100:], budgets=[16, 1500], sort=sort, rank_confidence=C[:100])
        assert res[-1]["epistemic"] == 0.0 and res[0]["error"] > res[-1]["error"]
    random = run_experiment(A[:100], A[100:], budgets=[16, 64], sampling="random", seed=3)
    assert random == run_experiment(A[:100], A[100:], budgets=[16, 64], sampling="random", seed=3)
    assert random != run_experiment(A[:100], A[100:], budgets=[16, 64], sampling="random", seed=4)
    with pytest.raises(ValueError, match="needs rank_confidence"):
        run_experiment(A[:100], A[100:], budgets=[8], sort="confidence")
    with pytest.raises(ValueError, match=r"budgets 2000 lie outside 1\.\.1500"):
        run_experiment(A[:100], A[100:], budgets=[8, 2000])
    with pytest.raises(ValueError, match="unknown sort"):
        run_experiment(A[:100], A[100:], budgets=[8], sort="median")


def test_transpose_inserts_samples(matrix) -> None:
    A, _ = matrix
    rank, held_out = A[:, :1000], A[:, 1000:]  # same models; new samples are estimated from m' models
    # the model order for sample insertion (most accurate first) is sum-sorting the transposed ranking matrix
    assert np.array_equal(model_order(rank.mean(axis=1)), sort_by_sum(DenseRows(rank.T)))
    results = run_experiment(rank, held_out, budgets=[8, 32, 160], transpose=True)
    assert all(r["n"] == 160 and r["rows"] == 500 and r["transpose"] for r in results)
    assert results[0]["error"] > results[-1]["error"] and results[-1]["epistemic"] == 0.0
    with pytest.raises(ValueError, match="share their models"):
        run_experiment(rank, held_out[:100], budgets=[8], transpose=True)


def test_command_reads_npy_files(matrix, tmp_path, capsys) -> None:
    A, C = matrix
    np.save(tmp_path / "rank.npy", A[:100])
    np.save(tmp_path / "eval.npy", A[100:])
    np.save(tmp_path / "conf.npy", C[:100])
    rank, held_out = tmp_path / "rank.npy", tmp_path / "eval.npy"
    results = experiment_command(rank, held_out, "8,64", "sum", "uniform", None, False, False)
    out = capsys.readouterr().out
    assert "budget" in out and len(results) == 2
    assert results == run_experiment(A[:100], A[100:], budgets=[8, 64])
    experiment_command(rank, held_out, [8], "confidence", "uniform", tmp_path / "conf.npy", False, True)
    parsed = json.loads(capsys.readouterr().out)
    assert parsed[0]["budget"] == 8 and parsed[0]["sort"] == "confidence"


def test_load_matrix_validates(tmp_path) -> None:
    good = np.zeros((3, 5), np.uint8)
    np.save(tmp_path / "good.npy", good)
    assert np.array_equal(load_matrix(tmp_path / "good.npy"), good)
    bad = good.copy()
    bad[1, 3] = 2
    np.save(tmp_path / "bad.npy", bad)
    with pytest.raises(ValueError, match=r"bad\.npy: cell \[row 1, column 3\] holds 2"):
        load_matrix(tmp_path / "bad.npy")
    np.save(tmp_path / "wide.npy", good.astype(np.int64))
    with pytest.raises(TypeError, match=r"wide\.npy holds int64 values"):
        load_matrix(tmp_path / "wide.npy")
    np.save(tmp_path / "flat.npy", np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match=r"flat\.npy: expected a 2-D"):
        load_matrix(tmp_path / "flat.npy")
    with pytest.raises(FileNotFoundError, match="missing"):
        load_matrix(tmp_path / "missing.npy")
    (tmp_path / "text.npy").write_text("not numpy")
    with pytest.raises(ValueError, match=r"text\.npy is not a NumPy \.npy file") as raised:
        load_matrix(tmp_path / "text.npy")
    assert "pickle" not in str(raised.value)  # never numpy's advice to unpickle a file
    np.save(tmp_path / "conf.npy", np.full((2, 2), 1.5))
    with pytest.raises(ValueError, match=r"conf\.npy: cell \[row 0, column 0\] holds 1.5"):
        load_confidence(tmp_path / "conf.npy")
    with pytest.raises(ValueError, match=r"evaluate: cell \[row 1, column 3\]"):
        run_experiment(good, bad, budgets=[2])
