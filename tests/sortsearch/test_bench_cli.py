"""`lifelong bench` end to end on a small planted matrix: import, sort, plan, add a model, status, experiment."""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
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
    # 20 source models of a step-shaped matrix: k-means clusters of 10-12% of the samples each, so one anchor's
    # outcome moves the estimate by that much (measured here: 0.437 against 0.327; anchor-points 0.423)
    assert newcomer["kind"] == "estimated" and abs(newcomer["accuracy"] - truth[25].mean()) < 0.15
    assert newcomer["low"] <= newcomer["accuracy"] <= newcomer["high"]
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


# -- issue 11 -------------------------------------------------------------------------------------------------


def write_samples(path, n):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        writer.writerows([["planted", "clean", j % 10, f"hash{j}"] for j in range(n)])


@pytest.fixture
def imported(tmp_path):
    """A sorted store of 20 planted ranking models over 300 samples, and the planted truth (30 models)."""
    truth = planted()
    np.save(tmp_path / "matrix.npy", truth[:20])
    write_samples(tmp_path / "samples.csv", 300)
    with open(tmp_path / "models.csv", "w") as f:
        f.write(
            "name\n" + "".join(f"m{i:04d}-resnet_mini16-e4-n4000-aug-lr0.25-a-long-model-name\n" for i in range(20))
        )
    store = tmp_path / "store"
    args = (
        "--matrix",
        tmp_path / "matrix.npy",
        "--samples",
        tmp_path / "samples.csv",
        "--models",
        tmp_path / "models.csv",
    )
    assert invoke("import", store, *args).exit_code == 0
    assert invoke("sort", store).exit_code == 0
    return store, truth


def test_status_and_add_model_show_the_best_estimate_inside_its_interval(imported, tmp_path):
    store, truth = imported
    ids = [int(x) for x in invoke("plan-model", store, "--budget", 30).output.split()]
    np.save(tmp_path / "planned.npy", truth[25, ids])
    added = invoke("add-model", store, "--name", "newcomer", "--results", tmp_path / "planned.npy", "--budget", 30)
    assert added.exit_code == 0, added.output
    newcomer = next(r for r in json.loads(invoke("status", store, "--json").output)["leaderboard"] if r["id"] == 20)
    assert newcomer["kind"] == "estimated" and newcomer["low"] <= newcomer["accuracy"] <= newcomer["high"]
    assert newcomer["threshold_accuracy"] is not None and newcomer["row_accuracy"] is not None
    assert f"estimated accuracy {newcomer['accuracy']:.4f}" in added.output
    assert f"interval {newcomer['low']:.4f}-{newcomer['high']:.4f}" in added.output


def test_status_fits_80_columns_and_never_breaks_a_name(imported, monkeypatch):
    from rich.console import Console

    import lifelong.commands.bench_console as bench

    store, _ = imported
    monkeypatch.setattr(bench, "console", Console(width=80))
    result = invoke("status", store, "--top", 3)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert "…" not in result.output and max(len(line) for line in lines) <= 80
    assert lines[0] == str(store) and lines[1].startswith("  20 models x 300 samples, 100.00% of cells observed")
    named = [line for line in lines if "-a-long-model-name" in line]  # each name whole, on one line
    assert len(named) == 3 and all(line.split()[-1].startswith("m00") for line in named)
    assert "None" not in result.output and "top 3 of 20" in result.output


def test_status_puts_short_names_on_the_same_line_as_their_numbers(tmp_path, monkeypatch):
    from rich.console import Console

    import lifelong.commands.bench_console as bench

    truth = planted()
    np.save(tmp_path / "matrix.npy", truth[:5])
    write_samples(tmp_path / "samples.csv", 300)
    store = tmp_path / "store"
    assert (
        invoke("import", store, "--matrix", tmp_path / "matrix.npy", "--samples", tmp_path / "samples.csv").exit_code
        == 0
    )
    monkeypatch.setattr(bench, "console", Console(width=80))
    lines = invoke("status", store).output.splitlines()
    rows = [line.split() for line in lines if line.split() and line.split()[0].isdigit() and "model-" in line]
    assert len(rows) == 5 and all(r[1].startswith("model-") and r[3] == "exact" and r[-1] == "100.0%" for r in rows)
    accuracies = [float(r[2]) for r in rows]
    assert accuracies == sorted(accuracies, reverse=True)
    assert sorted(accuracies) == sorted(round(float(a), 4) for a in truth[:5].mean(axis=1))


def test_an_empty_store_is_a_reported_state(tmp_path):
    store = tmp_path / "store"
    assert invoke("create", store).exit_code == 0
    result = invoke("status", store)
    assert result.exit_code == 0 and result.output.strip() == f"{store}: empty store (0 models x 0 samples)"
    assert json.loads(invoke("status", store, "--json").output)["leaderboard"] == []  # valid JSON (no NaN)
    checked = invoke("check", store)
    assert checked.exit_code == 0 and "empty store" in checked.output


def test_a_killed_import_leaves_no_store_and_a_new_import_succeeds(tmp_path):
    truth = planted()
    np.save(tmp_path / "matrix.npy", truth)
    write_samples(tmp_path / "samples.csv", 300)
    store = tmp_path / "store"
    args = ["bench", "import", str(store), "--matrix", str(tmp_path / "matrix.npy")]
    args += ["--samples", str(tmp_path / "samples.csv")]
    script = (
        "import os, signal, sys\n"
        "from lifelong.sortsearch.store import BenchStore\n"
        "BenchStore.add_models = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from lifelong.cli import app\n"
        "app(sys.argv[1:])\n"
    )
    assert subprocess.run([sys.executable, "-c", script, *args], timeout=120).returncode == -9
    assert not store.exists() and (tmp_path / "store.work").is_dir()  # the work folder beside it, for --resume
    again = invoke(*args[1:])
    assert again.exit_code == 2 and "store.work holds an interrupted import" in again.stderr
    assert "--resume" in again.stderr and "--overwrite" in again.stderr
    again = invoke(*args[1:], "--resume")
    assert again.exit_code == 0, again.output
    assert not (tmp_path / "store.work").exists()  # removed on success
    assert invoke("check", store).exit_code == 0
    assert json.loads(invoke("status", store, "--json").output)["m"] == 30
    # `bench create X` then `bench import X` fills the empty store
    assert invoke("create", tmp_path / "other").exit_code == 0
    assert invoke("import", tmp_path / "other", *args[3:]).exit_code == 0


def test_add_model_checks_result_sizes_against_the_plan_and_the_store(imported, tmp_path):
    store, truth = imported
    np.save(tmp_path / "short.npy", truth[25, :100])
    result = invoke("add-model", store, "--name", "x", "--results", tmp_path / "short.npy")
    assert result.exit_code == 2 and "holds 100 outcomes but" in result.stderr and "--budget 100" in result.stderr
    np.save(tmp_path / "two.npy", truth[20:22])
    result = invoke("add-model", store, "--name", "x", "--results", tmp_path / "two.npy")
    assert result.exit_code == 2 and "2-D array 2 x 300" in result.stderr and "ONE model" in result.stderr
    result = invoke("add-model", store, "--name", "x", "--results", tmp_path / "short.npy", "--budget", 30)
    assert result.exit_code == 2 and "100 outcomes but --budget 30" in result.stderr
    np.save(tmp_path / "full.npy", truth[26])
    assert invoke("add-model", store, "--name", "full", "--results", tmp_path / "full.npy").exit_code == 0
    full_csv = tmp_path / "full.csv"
    full_csv.write_text("sample_id,correct\n" + "".join(f"{j},{truth[27, j]}\n" for j in range(300)[::-1]))
    assert invoke("add-model", store, "--name", "full-csv", "--results", full_csv).exit_code == 0
    board = {r["name"]: r for r in json.loads(invoke("status", store, "--json").output)["leaderboard"]}
    assert board["full-csv"]["kind"] == "observed" and board["full-csv"]["accuracy"] == truth[27].mean()


def test_beyond_takes_a_ranking_and_a_held_out_matrix(tmp_path):
    truth = planted(m=30, n=300)
    np.save(tmp_path / "rank.npy", truth[:20])
    np.save(tmp_path / "eval.npy", truth[20:])
    args = ("--rank", tmp_path / "rank.npy", "--eval", tmp_path / "eval.npy", "--budgets", "16,64", "--json")
    result = invoke("beyond", *args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["shape"] == [30, 300] and {r["models"] for r in out["coverage"]} == {10}
    assert {r["sampling"] for r in out["coverage"]} == {"uniform", "random"}


BAD_INPUTS = [
    (("status", "{tmp}/nowhere"), "no benchmark store at"),
    (("status", "{tmp}/not-a-store"), "not a readable benchmark store"),
    (("check", "{tmp}/garbage"), "not a readable store registry"),
    (("import", "{store}", "--matrix", "{tmp}/matrix.npy", "--samples", "{tmp}/samples.csv"), "already holds a store"),
    (("import", "{tmp}/new", "--matrix", "{tmp}/matrix.npy", "--samples", "{tmp}/bad.csv"), "lacks the column"),
    (
        (
            "import",
            "{tmp}/new",
            "--matrix",
            "{tmp}/matrix.npy",
            "--samples",
            "{tmp}/samples.csv",
            "--models",
            "{tmp}/bad.csv",
        ),
        "lacks the column(s) name",
    ),
    (("import", "{tmp}/new", "--matrix", "{tmp}/samples.csv", "--samples", "{tmp}/samples.csv"), "samples.csv"),
    (("add-model", "{store}", "--name", "x", "--results", "{tmp}/nowhere.csv"), "no such results file"),
    (("add-model", "{store}", "--name", "x", "--results", "{tmp}/bad-values.csv"), "line 3: correct is '2'"),
    (("add-model", "{store}", "--name", "x", "--results", "{tmp}/bad.csv"), "lacks the column"),
    (
        (
            "add-model",
            "{store}",
            "--name",
            "m0000-resnet_mini16-e4-n4000-aug-lr0.25-a-long-model-name",
            "--results",
            "{tmp}/row.npy",
        ),
        "already in the store",
    ),
    (("plan-model", "{store}", "--budget", "5", "--sampling", "stratified"), "unknown sampling method"),
    (("plan-model", "{store}", "--budget", "301"), "budget n'=301"),
    (("experiment", "--rank", "{tmp}/matrix.npy", "--eval", "{tmp}/nowhere.npy"), "nowhere.npy"),
    (("beyond", "--matrix", "{tmp}/matrix.npy", "--rank", "{tmp}/matrix.npy"), "either --matrix"),
    (("beyond", "--rank", "{tmp}/matrix.npy", "--eval", "{tmp}/narrow.npy"), "same samples"),
    (("build-zoo", "{tmp}/zoo", "--corruptions", "glitter"), "glitter"),
]


@pytest.mark.parametrize(
    ("args", "message"), BAD_INPUTS, ids=[" ".join(a[:1]) + str(i) for i, (a, _) in enumerate(BAD_INPUTS)]
)
def test_bad_inputs_give_a_one_line_error_and_exit_2(imported, tmp_path, args, message):
    store, truth = imported
    (tmp_path / "not-a-store").mkdir()
    (tmp_path / "not-a-store" / "x").write_text("")
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "registry.sqlite").write_text("not sqlite")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    (tmp_path / "bad-values.csv").write_text("sample_id,correct\n0,1\n1,2\n")
    np.save(tmp_path / "row.npy", truth[21])
    np.save(tmp_path / "narrow.npy", truth[:5, :100])
    before = json.loads(invoke("status", store, "--json").output)
    result = invoke(*[a.format(tmp=tmp_path, store=store) for a in args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], result.stderr
    assert json.loads(invoke("status", store, "--json").output) == before  # nothing written is lost
