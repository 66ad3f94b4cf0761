"""The Nevis'22 commands end to end: streams, data status, --allow-missing runs, report, pretrain, transfer matrix."""

import json
from pathlib import Path

import pytest
from support import write_mnist
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.results.store import RunFolder

runner = CliRunner()
TWO_TASKS = """
name: pair
tasks:
  - {name: letters, source: "builtin:letters", year: 2001, resolution: 16, options: {n_per_class: 12, size: 16}}
  - {name: digits, source: "builtin:digits", year: 2002, resolution: 16, options: {n_per_class: 12}}
"""
TINY = ["-o", "epochs=1", "-o", "resolution=16"]


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_streams_json_has_the_paper_counts():
    rows = {r["name"]: r for r in json.loads(invoke("streams", "--json").output)}
    assert (rows["nevis-full"]["tasks"], rows["nevis-full"]["meta_train"], rows["nevis-full"]["meta_test"]) == (
        106,
        79,
        27,
    )
    assert rows["nevis-short"]["tasks"] == 29 and rows["nevis-tiny"]["tasks"] == 7
    mini = rows["nevis-mini"]
    assert mini["tasks"] >= 12 and mini["meta_train"] > 0 and mini["meta_test"] > 0 and mini["multi_label"] >= 1


def test_status_then_a_run_that_refuses_or_records_missing_tasks(tmp_path):
    root = tmp_path / "data"
    write_mnist(root / "mnist")
    status = json.loads(invoke("data", "status", "--stream", "nevis-tiny", "--data-root", root, "--json").output)
    assert [r["uid"] for r in status if r["available"]] == ["mnist", "mnist#1"]
    assert all(r["expected"] for r in status if not r["available"])

    args = ["run", "--stream", "nevis-tiny", "--learner", "nearest-mean", "--data-root", root, "--out", tmp_path]
    refused = invoke(*args)
    assert refused.exit_code == 2 and "--allow-missing" in refused.output and "caltech101" in refused.output
    ran = invoke(*args, "--allow-missing")
    assert ran.exit_code == 0, ran.output
    summary = json.loads((tmp_path / "nevis-tiny-nearest-mean-seed0" / "summary.json").read_text())
    assert summary["tasks_ran"] == ["mnist", "mnist#1"]
    assert len(summary["tasks_missing"]) == 5 and "cub200" in summary["tasks_missing"]


def test_report_over_two_runs(tmp_path):
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    for learner in ("nearest-mean", "independent"):
        extra = TINY if learner == "independent" else []
        assert (
            invoke("run", "--stream", manifest, "--learner", learner, "--out", tmp_path / "runs", *extra).exit_code == 0
        )
    runs = sorted(p for p in (tmp_path / "runs").iterdir() if p.is_dir())
    result = invoke("report", *runs, "--out", tmp_path / "report")
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report" / "index.html").read_text()
    assert all(run.name in page for run in runs) and 'href="nevis.html"' in page  # task streams: their own page
    assert "error_vs_cflop.png" in (tmp_path / "report" / "nevis.html").read_text()
    missing = invoke("report", tmp_path / "nope", "--out", tmp_path / "r2")
    assert missing.exit_code == 2


def test_pretrain_then_run_the_pretrained_learner(tmp_path):
    ckpt = tmp_path / "letters.pt"
    made = invoke(
        "pretrain",
        "builtin:letters",
        "--out",
        ckpt,
        "--epochs",
        1,
        "--resolution",
        16,
        "-o",
        "n_per_class=10",
        "-o",
        "size=16",
    )
    assert made.exit_code == 0, made.output and ckpt.exists()
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    ran = invoke(
        "run",
        "--stream",
        manifest,
        "--learner",
        "pretrained",
        "-o",
        f"checkpoint={ckpt}",
        *TINY,
        "--out",
        tmp_path / "runs",
    )
    assert ran.exit_code == 0, ran.output
    no_checkpoint = invoke("run", "--stream", manifest, "--learner", "pretrained", "--out", tmp_path / "r2")
    assert no_checkpoint.exit_code == 2 and "checkpoint" in no_checkpoint.output


@pytest.mark.parametrize("learner", ["finetune-prev", "finetune-knn"])
def test_transfer_learners_run_from_the_command_line(tmp_path, learner):
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    result = invoke("run", "--stream", manifest, "--learner", learner, *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.glob(f"pair-{learner}-*-seed0")  # -o options: the id carries their hash
    records = RunFolder(folder).read_records()
    assert len(records) == 4 and all(r["inference_flops"] > 0 for r in records if r["type"] == "predict")


def test_transfer_matrix_command(tmp_path):
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    out = tmp_path / "tm.json"
    result = invoke("transfer-matrix", "--stream", manifest, "--epochs", 1, "--out", out)
    assert result.exit_code == 0, result.output
    matrix = json.loads(out.read_text())
    assert matrix["tasks"] == ["letters", "digits"]
    assert matrix["matrix"][0][0] == 0.0 and isinstance(matrix["matrix"][0][1], float)
    assert not Path(f"{out}.work").exists()  # the work folder goes once the matrix is written
