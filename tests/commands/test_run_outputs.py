"""What a run folder keeps for later: raw test predictions per evaluation, and the provenance of the figures."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
from support import write_two_task_manifest

from lifelong.commands.runner import RunSpec, execute
from lifelong.results.store import RunFolder


def _spec(tmp_path, **changes) -> RunSpec:
    manifest = write_two_task_manifest(tmp_path, "kept")
    return dataclasses.replace(
        RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "runs")), **changes
    )


def test_raw_test_predictions_are_saved_per_evaluation_and_give_the_recorded_error(tmp_path):
    spec = _spec(tmp_path)
    execute(spec)
    for record in [r for r in RunFolder(spec.folder).read_records() if r["type"] == "predict"]:
        saved = np.load(spec.folder / "predictions" / f"event{record['event']:04d}-{record['task']}.npz")
        scores, labels = saved["scores"], saved["labels"]
        assert scores.dtype == np.float32 and scores.shape == (record["num_items"], scores.shape[1])
        assert np.mean(scores.argmax(1) != labels) == record["error"]  # the same error, recomputed from the file


def test_predictions_can_be_turned_off(tmp_path):
    spec = _spec(tmp_path, save_predictions=False)
    execute(spec)
    assert not (spec.folder / "predictions").exists()


def test_run_json_records_machine_versions_and_the_sha256_of_loaded_files(tmp_path):
    spec = _spec(tmp_path, threads=1)
    execute(spec)
    info = json.loads((spec.folder / "run.json").read_text())
    manifest = tmp_path / "kept.yaml"
    assert info["files"] == {str(manifest.resolve()): hashlib.sha256(manifest.read_bytes()).hexdigest()}
    assert info["machine"]["cpu"] and info["machine"]["threads"] == 1 and info["machine"]["torch_threads"] == 1
    assert info["versions"]["torch"] and info["versions"]["numpy"]


def test_results_show_the_provenance(tmp_path):
    from typer.testing import CliRunner

    from lifelong.cli import app

    spec = _spec(tmp_path)
    execute(spec)
    shown = CliRunner().invoke(app, ["results", spec.out, "--provenance", "--json"])
    assert shown.exit_code == 0, shown.output
    (run,) = json.loads(shown.output)
    assert run["provenance"]["machine"]["threads"] == 1 and len(run["provenance"]["files"]) == 1
    table = CliRunner().invoke(app, ["results", spec.out, "--provenance"], terminal_width=80)
    assert table.exit_code == 0 and "kept.yaml" in table.output
