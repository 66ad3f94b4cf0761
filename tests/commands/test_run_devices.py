"""A run's device and precision: chosen on the command line, recorded in run.json, free to change on resume."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from support import write_two_task_manifest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute
from lifelong.results.store import RunFolder
from lifelong.training.devices import available_devices


def _spec(tmp_path, **changes) -> RunSpec:
    manifest = write_two_task_manifest(tmp_path, "dev")
    spec = RunSpec(stream=str(manifest), learner="independent", out=str(tmp_path / "runs"))
    return dataclasses.replace(spec, learner_options={"epochs": 2, "resolution": 8}, **changes)


@pytest.mark.parametrize("device", available_devices())
def test_run_json_records_the_device_specs_and_what_they_resolved_to(tmp_path, device):
    spec = _spec(tmp_path, device=device)
    execute(spec)
    info = json.loads((spec.folder / "run.json").read_text())
    assert info["config"]["device"] == device and info["config"]["precision"] == "auto"
    accelerator = info["accelerator"]
    assert accelerator["resolved_device"].startswith(device)
    assert accelerator["resolved_precision"] == ("bf16" if device == "cuda" else "fp32")
    assert accelerator["channels_last_on"] is (device == "cuda")


def test_a_run_resumes_on_another_device_spec_but_not_with_other_speed_options(tmp_path):
    spec = _spec(tmp_path, stop_after=2)
    execute(spec)
    with pytest.raises(ValueError, match="precision 'auto' -> 'bf16'"):
        execute(dataclasses.replace(spec, resume=True, stop_after=None, precision="bf16"))
    with pytest.raises(ValueError, match="compile False -> True"):
        execute(dataclasses.replace(spec, resume=True, stop_after=None, compile=True))
    resumed = execute(dataclasses.replace(spec, resume=True, stop_after=None, device="cpu"))
    assert resumed["events_done"] == resumed["events_total"]
    whole = execute(dataclasses.replace(spec, out=str(tmp_path / "whole"), stop_after=None))
    errors = [r.get("error") for r in RunFolder(spec.folder).read_records()]
    assert errors == [r.get("error") for r in whole["records"]]  # "auto" is the CPU here: same numbers


def test_bf16_precision_runs_on_the_cpu_and_changes_little(tmp_path):
    fp32 = execute(_spec(tmp_path, out=str(tmp_path / "fp32"), device="cpu", precision="fp32"))
    bf16 = execute(_spec(tmp_path, out=str(tmp_path / "bf16"), device="cpu", precision="bf16"))
    assert (
        json.loads((tmp_path / "bf16" / bf16["run_id"] / "run.json").read_text())["accelerator"]["resolved_precision"]
        == "bf16"
    )
    for a, b in zip(fp32["records"], bf16["records"], strict=True):
        if a["type"] == "predict":
            assert abs(a["error"] - b["error"]) <= 0.15  # the stated tolerance on these tiny tasks


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--precision", "fp8"], "unknown precision 'fp8'"),
        (["--channels-last", "maybe"], "--channels-last 'maybe'"),
        (["--gpus-per-trial", "0.5"], "--gpus-per-trial needs --executor ray"),
        (["--executor", "ray", "--device", "cuda"], "needs --gpus-per-trial > 0"),
    ],
)
def test_bad_device_options_are_one_line_errors(tmp_path, args, message):
    result = CliRunner().invoke(app, ["run", "--stream", "mini", "--out", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_asked_for_without_a_gpu_says_what_the_machine_has(tmp_path):
    result = CliRunner().invoke(app, ["run", "--stream", str(_spec(tmp_path).stream), "--device", "cuda"])
    assert result.exit_code == 2
    assert "torch sees no CUDA GPU here" in " ".join(result.output.split())
