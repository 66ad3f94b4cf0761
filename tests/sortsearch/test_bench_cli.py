"""`lifelong bench` end to end on a small planted matrix: import, sort, plan, add a model, status, experiment."""

import csv
import json

import numpy as np
from typer.testing import CliRunner

from lifelong.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["bench", *[str(a) for a in args]], catch_exceptions=False)


def planted(m=30, n=300, seed=0):
    rng = np.random.default_rng(seed)
    truth = (rng.random(m)[:, None] > rng.random(n)[None, :]).astype(np.uint8)
    return np.where(rng.random((m, n)) < 0.02, 1 - truth, truth).astype(np.uint8)


def test_bench_workflow(tmp_path):
    truth = planted()
    np.save(tmp_path / "matrix.npy", truth[:20])
    with open(tmp_path / "samples.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        writer.writerows([["planted", "clean", j % 10, f"hash{j}"] for j in range(300)])
    store = tmp_path / "store"
    assert (
        invoke("import", store, "--matrix", tmp_path / "matrix.npy", "--samples", tmp_path / "samples.csv").exit_code
        == 0
    )
    assert invoke("sort", store).exit_code == 0
    planned = invoke("plan-model", store, "--budget", 30)
    ids = [int(x) for x in planned.output.split()]
    assert len(ids) == 30
    with open(tmp_path / "results.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sample_id", "correct"])
        writer.writerows([[i, int(truth[25, i])] for i in ids])
    added = invoke("add-model", store, "--name", "newcomer", "--results", tmp_path / "results.csv")
    assert added.exit_code == 0, added.output
    status = json.loads(invoke("status", store, "--json").output)
    assert status["m"] == 21 and status["n"] == 300
    newcomer = next(r for r in status["leaderboard"] if r["name"] == "newcomer")
    assert newcomer["kind"] == "estimated" and abs(newcomer["accuracy"] - truth[25].mean()) < 0.1
    assert invoke("check", store).exit_code == 0

    wrong = tmp_path / "wrong.csv"
    wrong.write_text("sample_id,correct\n0,1\n")
    assert invoke("add-model", store, "--name", "x", "--results", wrong).exit_code == 2

    np.save(tmp_path / "eval.npy", truth[20:])
    result = invoke(
        "experiment",
        "--rank",
        tmp_path / "matrix.npy",
        "--eval",
        tmp_path / "eval.npy",
        "--budgets",
        "8,32,300",
        "--json",
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert [r["budget"] for r in rows] == [8, 32, 300]
