"""What a run refuses: a second writer of the same run folder, a resume with another setup, --out naming a file."""

from __future__ import annotations

import pytest
from support import write_two_task_manifest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute
from lifelong.results.lock import RunFolderBusyError, run_folder_lock


def _run_cli(spec: RunSpec, out: str):
    return CliRunner().invoke(app, ["run", "--stream", spec.stream, "--learner", "nearest-mean", "--out", out])


@pytest.fixture
def spec(tmp_path) -> RunSpec:
    manifest = write_two_task_manifest(tmp_path, "guarded")
    return RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "runs"))


def test_a_second_writer_is_refused_at_once_naming_the_holder(spec):
    with run_folder_lock(spec.folder):
        with pytest.raises(RunFolderBusyError, match=r"being written by PID \d+"):
            execute(spec)
        result = CliRunner().invoke(
            app, ["run", "--stream", spec.stream, "--learner", "nearest-mean", "--out", spec.out]
        )
        assert result.exit_code == 2 and "being written by PID" in result.output
    assert not (spec.folder / "events.jsonl").exists()  # the refused runs wrote nothing
    assert execute(spec)["events_done"] == 4  # the lock is gone with its holder


def test_resume_refuses_a_changed_setup_and_names_each_change(spec):
    import dataclasses

    execute(dataclasses.replace(spec, stop_after=2))
    changed = dataclasses.replace(spec, resume=True, seed=0, threads=2, precision="fp32")
    with pytest.raises(ValueError, match=r"threads 1 -> 2; precision 'auto' -> 'fp32'"):
        execute(changed)
    records_before = (spec.folder / "events.jsonl").read_text()
    assert len(records_before.splitlines()) == 2  # nothing lost
    resumed = execute(dataclasses.replace(spec, resume=True, progress=False))  # same setup: allowed
    assert resumed["events_done"] == 4


def test_out_naming_a_file_is_a_one_line_error(spec, tmp_path):
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    result = CliRunner().invoke(
        app, ["run", "--stream", spec.stream, "--learner", "nearest-mean", "--out", str(a_file)]
    )
    assert result.exit_code == 2 and "is a file" in result.output and "Traceback" not in result.output
