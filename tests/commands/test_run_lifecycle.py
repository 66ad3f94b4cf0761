"""The life of a run as a user sees it (issue 22, breaks 3, 4, 6, 7, 8): one folder per setup, nothing left by a
refused run, `results`/`report` over untidy folders, whole-run timing after a resume, exit 0 once finished."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys

import pytest
from support import write_two_task_manifest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands import remote_runs
from lifelong.commands.runner import RunSpec, execute
from lifelong.commands.terminal import console, error_console


@pytest.fixture
def width80():
    """The consoles at 80 columns, as in a terminal with COLUMNS=80."""
    saved = console._width, error_console._width
    console.width = error_console.width = 80
    yield
    console._width, error_console._width = saved


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80)


def folders(path):
    return sorted(p.name for p in path.iterdir() if p.is_dir()) if path.exists() else []


# Break 3: a run id names its setup.


def test_the_readme_clear_commands_get_two_folders(tmp_path, monkeypatch):
    """`--learner finetune` and `--learner finetune -o encoder=...` (README, CLEAR) must not share a folder."""
    planned = []
    monkeypatch.setattr(remote_runs, "run_specs", lambda runner, specs: planned.extend(specs) or [])
    out = tmp_path / "runs"
    plain = ["run", "--stream", "clear-mini", "--learner", "finetune", "--out", out]
    assert invoke(*plain).exit_code == 0
    assert invoke(*plain, "-o", "encoder=encoders/clear-mini-simclr.pt").exit_code == 0
    first, second = planned
    assert first.folder != second.folder and first.folder.parent == second.folder.parent == out
    assert first.run_id == "clear-mini-iid-finetune-seed0"  # no option but the protocol: the plain, readable id
    assert second.run_id.startswith("clear-mini-iid-finetune-") and second.run_id.endswith("-seed0")


def test_options_change_the_id_their_order_does_not(tmp_path, monkeypatch):
    planned = []
    monkeypatch.setattr(remote_runs, "run_specs", lambda runner, specs: planned.extend(specs) or [])
    base = ["run", "--learner", "independent", "--out", tmp_path]
    for options in (["-o", "epochs=1"], ["-o", "epochs=2"], ["-o", "epochs=2", "-o", "lr=0.01"]):
        assert invoke(*base, *options).exit_code == 0
    assert invoke(*base, "-o", "lr=0.01", "-o", "epochs=2").exit_code == 0
    assert invoke(*base, "--seeds", "2").exit_code == 0
    ids = [spec.run_id for spec in planned]
    assert len(set(ids[:3])) == 3  # epochs=1, epochs=2, epochs=2 lr=0.01: three setups, three ids
    assert ids[3] == ids[2]  # the same options in another order: the same run
    assert ids[4:] == ["mini-independent-seed0", "mini-independent-seed1"]  # no options: the documented ids
    assert all(len(i) <= 40 for i in ids)


def test_runs_with_different_options_land_side_by_side_and_resume_finds_each(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "opts")
    out = tmp_path / "runs"
    base = ["run", "--stream", manifest, "--learner", "nearest-mean", "--out", out]
    assert invoke(*base).exit_code == 0
    assert invoke(*base, "-o", "batch_size=7").exit_code == 0  # before: "already holds run"
    assert folders(out) == sorted(
        [
            "opts-nearest-mean-seed0",
            RunSpec(stream=str(manifest), learner="nearest-mean", learner_options={"batch_size": 7}).run_id,
        ]
    )
    again = invoke(*base, "-o", "batch_size=7", "--resume")
    assert again.exit_code == 0, again.output
    assert len(folders(out)) == 2


# Break 4: a refused run leaves nothing; results and report pass over folders that hold no run.


@pytest.mark.parametrize(
    "args",
    [
        ("--learner", "nope"),  # unknown learner
        ("--learner", "independent", "-o", "epochs=abc"),  # bad -o value
        ("--stream", "nevis-short", "--data-root", "EMPTY"),  # missing data
        ("--learner", "finetune"),  # label-space mismatch (mini's tasks differ)
        ("--learner", "nearest-mean", "--metric", "nope"),  # unknown metric
    ],
)
def test_a_refused_run_leaves_no_folder(tmp_path, args):
    (tmp_path / "EMPTY").mkdir()
    args = [str(tmp_path / "EMPTY") if a == "EMPTY" else a for a in args]
    result = invoke("run", *args, "--out", tmp_path / "runs")
    assert result.exit_code == 2, result.output
    assert "error:" in result.output
    assert not (tmp_path / "runs").exists()


def test_a_finished_run_keeps_no_lock_and_no_empty_work_folder(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "tidy")
    options = {"epochs": 1, "min_batch_size": 16}  # independent keeps its trials under work/<task> while training
    spec = RunSpec(stream=str(manifest), learner="independent", learner_options=options, out=str(tmp_path))
    execute(spec)
    names = {p.name for p in spec.folder.iterdir()}
    assert "run.json" in names and "summary.json" in names
    assert ".lock" not in names and "work" not in names


def _two_runs(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "untidy")
    out = tmp_path / "runs"
    for seed in (0, 1):
        execute(RunSpec(stream=str(manifest), learner="nearest-mean", seed=seed, out=str(out)))
    (out / "empty-leftover").mkdir()  # e.g. left by an older version's refused run
    (out / "lock-only").mkdir()
    (out / "lock-only" / ".lock").write_text("PID 1\n")
    return out


def test_results_lists_the_runs_and_skips_folders_without_one(tmp_path, width80):
    out = _two_runs(tmp_path)
    result = invoke("results", out)
    assert result.exit_code == 0, result.output
    assert "untidy-nearest-mean-seed0" in result.output and "untidy-nearest-mean-seed1" in result.output
    assert f"skipped {out / 'empty-leftover'}: holds no run" in result.output
    assert f"skipped {out / 'lock-only'}: holds no run" in result.output
    import shutil

    copied = out / "copied-in-seed0"  # a run folder the database does not record (brought from elsewhere)
    shutil.copytree(out / "untidy-nearest-mean-seed0", copied)
    listed = invoke("results", out)
    assert listed.exit_code == 0 and "copied-in-seed0" in " ".join(listed.output.split())
    assert "its run is not in" in listed.output


def test_report_skips_folders_without_a_run_with_one_line_each(tmp_path, width80):
    out = _two_runs(tmp_path)
    result = invoke("report", *sorted(out.iterdir()), "--out", tmp_path / "report")  # as `runs/*` expands
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report" / "index.html").is_file()
    skipped = [line for line in result.output.splitlines() if "skipped" in line]
    assert len(skipped) == 2 and all("holds no run" in line for line in skipped)
    parent = invoke("report", out, "--out", tmp_path / "report2")
    assert parent.exit_code == 0 and parent.output.count("holds no run") == 2


# Break 5: `lifelong results RUNS`, 80 columns.


def test_results_takes_the_runs_folder_as_argument_and_fits_80_columns(tmp_path, width80):
    manifest = write_two_task_manifest(tmp_path, "a-rather-long-manifest-name-for-a-stream")
    out = tmp_path / "runs"
    spec = RunSpec(stream=str(manifest), learner="nearest-mean", out=str(out), learner_options={"batch_size": 7})
    execute(spec)
    execute(dataclasses.replace(spec, learner_options={}, seed=3))
    for args in (("results", out), ("results", out, "-v"), ("results", out, "--provenance")):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines), result.output  # or a path alone
        for run_id in (spec.run_id, "a-rather-long-manifest-name-for-a-stream-nearest-mean-seed3"):
            assert any(run_id in line for line in lines), result.output  # whole, never folded
        assert "None" not in result.output and "{" not in result.output
    verbose = invoke("results", out, "-v").output
    assert "batch_size=7" in verbose and str(spec.folder) in verbose
    listed = json.loads(invoke("results", out, "--json").output)
    assert {r["run_id"] for r in listed} == {spec.run_id, "a-rather-long-manifest-name-for-a-stream-nearest-mean-seed3"}


def test_results_without_runs_is_one_error_line(tmp_path):
    result = invoke("results", tmp_path / "nothing")
    assert result.exit_code == 2 and "does not exist" in result.output and "Traceback" not in result.output


# Break 6: a resumed run's timing covers the whole run.


def test_summary_timing_of_a_resumed_run_covers_both_parts(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "timed")
    spec = RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "runs"))
    execute(dataclasses.replace(spec, stop_after=2))  # the interrupted part
    resumed = invoke("run", "--stream", manifest, "--learner", "nearest-mean", "--out", spec.out, "--resume")
    assert resumed.exit_code == 0, resumed.output
    summary = json.loads((spec.folder / "summary.json").read_text())
    records = [json.loads(line) for line in (spec.folder / "events.jsonl").read_text().splitlines()]
    timing = summary["timing"]
    assert len(records) == 4 and timing["sessions"] == 2
    assert timing["learner_seconds"] == pytest.approx(sum(r["seconds"] for r in records))  # all 4 events
    assert timing["total_seconds"] >= timing["learner_seconds"] + timing["data_seconds"] - 1e-9


# Break 7: one run id in two folders.


def test_report_names_both_folders_of_a_clashing_run_id(tmp_path):
    manifest = write_two_task_manifest(tmp_path, "twice")
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    for out in (a, b):
        execute(RunSpec(stream=str(manifest), learner="nearest-mean", out=str(out)))
    result = invoke("report", a, b, "--out", tmp_path / "report")
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"{a / 'twice-nearest-mean-seed0'} and {b / 'twice-nearest-mean-seed0'}" in text
    assert "PosixPath" not in text and "['" not in text and "'/" not in text


# Break 8: finished means exit 0.


@pytest.fixture
def restore_signals():
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_the_run_finished_exits_0(tmp_path, monkeypatch, restore_signals, signum):
    from lifelong.commands import run_console

    printed = run_console.print_run

    def print_then_signal(result):
        printed(result)
        os.kill(os.getpid(), signum)  # arrives while the command prints: the work is done and saved
        raise AssertionError("the signal should have ended the command")

    monkeypatch.setattr(run_console, "print_run", print_then_signal)
    manifest = write_two_task_manifest(tmp_path, "late")
    result = invoke("run", "--stream", manifest, "--learner", "nearest-mean", "--out", tmp_path / "runs")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "runs" / "late-nearest-mean-seed0" / "summary.json").read_text())
    assert summary["events_done"] == summary["events_total"] == 4


def test_a_signal_while_a_finished_command_shuts_down_leaves_its_exit_code(tmp_path):
    """SIGTERM in the interpreter's teardown, after the command printed everything (as a slow reader of its output
    can make happen): Python has reset its own handlers by then, so only an ignored signal leaves exit 0."""
    script = (
        "import atexit, os, signal\n"
        "atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))  # runs during the interpreter's shutdown\n"
        "from lifelong.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "learners", "--json"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert json.loads(done.stdout)  # the whole output reached the reader
