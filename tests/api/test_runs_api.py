"""`lifelong run`, `pretrain`, `results`, `report`, `streams` and `learners` from Python (lifelong.api): the same
runs and figures as the command line, nothing printed, progress through a callback, the CLI's error messages,
and Ctrl-C then resume=True ending where an uninterrupted run ends."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support import write_two_task_manifest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80)


def test_two_seeds_on_mini_give_the_clis_figures_and_print_nothing(tmp_path, capsys):
    summaries = api.run(api.RunsSpec(learner="nearest-mean", seeds=2, out=tmp_path / "api"))
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    result = invoke("run", "--learner", "nearest-mean", "--seeds", "2", "--out", tmp_path / "cli")
    assert result.exit_code == 0, result.output
    assert [s["run_id"] for s in summaries] == ["mini-nearest-mean-seed0", "mini-nearest-mean-seed1"]
    for summary in summaries:
        cli = json.loads((tmp_path / "cli" / summary["run_id"] / "summary.json").read_text())
        assert summary["seed"] == cli["seed"] and summary["events_done"] == cli["events_done"] == 18
        for figure in ("mean_error", "meta_test_mean_error", "cumulative_train_flops", "per_task_error"):
            assert summary[figure] == cli[figure], figure
    listed = api.results_list(api.ResultsListSpec(runs=tmp_path / "api"))
    assert [(r["run_id"], r["status"]) for r in listed.runs] == [(s["run_id"], "finished") for s in summaries]
    page = api.report(api.ReportSpec(runs=[tmp_path / "api"], out=tmp_path / "report"))
    assert page.name == "index.html" and page.is_file()
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"protocol": "iid"},
            "--protocol applies to temporal streams (clear-mini, clear, a timestamped CSV), not 'mini'",
        ),
        ({"stream": "clear-mini", "protocol": "sideways"}, "unknown protocol 'sideways'"),
        ({"channels_last": "sideways"}, "--channels-last 'sideways': give auto, on or off"),
        ({"device": "cuda", "executor": "ray"}, "--device cuda with --executor ray needs --gpus-per-trial > 0"),
        ({"stream": "nope"}, "unknown stream 'nope'"),
    ],
)
def test_bad_options_raise_usage_errors_with_the_clis_words(tmp_path, changes, message):
    with pytest.raises(api.UsageError) as raised:
        api.run(api.RunsSpec(learner="nearest-mean", out=tmp_path / "runs", **changes))
    assert message in str(raised.value)
    args = [x for key, value in changes.items() for x in (f"--{key.replace('_', '-')}", value)]
    result = invoke("run", "--learner", "nearest-mean", "--out", tmp_path / "runs", *args)
    assert result.exit_code == 2 and f"error: {message}" in result.output, result.output
    assert not (tmp_path / "runs").exists()


def test_a_progress_callback_sees_the_run_and_an_interrupt_resumes_to_the_same_numbers(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "pair")
    spec = api.RunsSpec(stream=str(manifest), learner="independent", learner_options={"epochs": 1}, seed=3)
    calls = []

    def stop_after_the_first_task(description: str, done: float, total: float | None) -> None:
        calls.append((description, done, total))
        if done == 2:  # train and predict on the first task are done and checkpointed
            raise KeyboardInterrupt

    interrupted = dataclasses.replace(spec, out=tmp_path / "stopped")
    with pytest.raises(api.Interrupted) as stopped:
        api.run(interrupted, progress=stop_after_the_first_task)
    assert stopped.value.kept == "Every completed event is checkpointed. Resume with the same command plus --resume."
    assert calls[-1][1:] == (2, 4) and calls[-1][0].startswith("train")
    folder = interrupted.run_specs()[0].folder
    assert folder.parent == tmp_path / "stopped" and len((folder / "events.jsonl").read_text().splitlines()) == 2
    with pytest.raises(api.ResumeRefused, match="pass --resume to continue it"):  # as the CLI says
        api.run(interrupted)
    again = []
    resumed = api.run(dataclasses.replace(interrupted, resume=True), progress=lambda *call: again.append(call))[0]
    assert again[0][1:] == (2, 4)  # continued after the checkpointed events, not started over
    whole = api.run(dataclasses.replace(spec, out=tmp_path / "whole"))[0]
    assert resumed["events_done"] == whole["events_done"] == 4
    assert resumed["per_task_error"] == whole["per_task_error"] and resumed["mean_error"] == whole["mean_error"]


def test_pretrain_interrupted_then_resumed_from_python(tmp_path, monkeypatch):
    import lifelong.training.hpsearch as hpsearch
    import lifelong.training.pretrain as pretrain_module

    options = {"epochs": 1, "resolution": 16, "options": {"n_per_class": 6, "size": 16}}
    spec = api.PretrainSpec("builtin:letters", tmp_path / "stopped.pt", **options)

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # the trial finished, the checkpoint not written yet
        patch.setattr(pretrain_module, "write_torch_file", interrupt)
        with pytest.raises(api.Interrupted) as stopped:
            api.pretrain(spec)
    assert stopped.value.kept == "Finished trials are kept: add --resume to continue."
    assert not spec.out.exists() and (tmp_path / "stopped.pt.work").is_dir()
    with pytest.raises(api.ResumeRefused, match="--resume"):
        api.pretrain(spec)
    calls = []
    with monkeypatch.context() as patch:  # the finished trial is loaded, not trained again
        patch.setattr(hpsearch, "LocalExecutor", interrupt)
        resumed = api.pretrain(dataclasses.replace(spec, resume=True), progress=lambda *call: calls.append(call))
    whole = api.pretrain(api.PretrainSpec("builtin:letters", tmp_path / "whole.pt", **options))
    assert resumed.path == spec.out and spec.out.is_file() and not (tmp_path / "stopped.pt.work").exists()
    assert {**resumed.summary, "path": None} == {**whole.summary, "path": None}
    assert calls and calls[0][2] == 1  # one trial of one epoch


def test_streams_and_learners_as_objects():
    rows = {row["name"]: row for row in api.streams()}
    assert rows["mini"]["tasks"] == 9
    assert "split_seed" in {row["name"] for row in api.stream_options("nevis-mini").options}
    assert "nearest-mean" in {info.name for info in api.learners()}
    options = {row["name"]: row for row in api.learner_options("independent").options}
    assert options["epochs"]["type"] == "int"
    with pytest.raises(api.UsageError, match="unknown learner 'nearest-meen'.*see `lifelong learners`"):
        api.learner_options("nearest-meen")
    with pytest.raises(api.UsageError, match="unknown stream 'minii'.*see `lifelong streams`"):
        api.stream_options("minii")
