"""Smaller breaks a new user hit (issue 40, item 6): each test failed before its fix.

matrix-summary over a glob that catches an unfinished run, report and matrix-summary outputs never replaced
silently, report labels that survive a rebuild, facts tasks numbered from 1, `lifelong --version`, the README's CPU
install of torch, and the line after `lifelong run` that says what to do next.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from metrics.test_analysis import write_run
from typer.testing import CliRunner

from lifelong.api import ReportSpec, report
from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute

ROOT = Path(__file__).resolve().parents[2]
# a small clear-mini: 4 buckets (1 unlabeled + 3 labeled) of 11 classes x 10 images, seconds a run
SMALL = ["-s", "n_per_class=10", "-s", "unlabeled_per_bucket=0", "-s", "num_buckets=4"]


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "80"})


@pytest.fixture(scope="module")
def clear_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Two finished clear-mini seeds (one command, 80 columns), a third stopped after 3 of its 12 events and a
    fourth that never wrote its summary (killed): a glob `runs/clear-mini-*` catches all four."""
    runs = tmp_path_factory.mktemp("clear") / "runs"
    result = _invoke("run", "--stream", "clear-mini", *SMALL, "--learner", "nearest-mean", "--seeds", 2, "--out", runs)
    assert result.exit_code == 0, result.output
    options = {"n_per_class": 10, "unlabeled_per_bucket": 0, "num_buckets": 4}
    for seed in (2, 3):
        execute(RunSpec("clear-mini", "nearest-mean", seed, str(runs), stream_options=options, stop_after=3))
    (next(runs.glob("clear-mini-*-seed3")) / "summary.json").unlink()  # killed before it wrote one
    return runs, result.output


# ---------------------------------------------------------------------------------------------------------
# (a) matrix-summary and unfinished runs


def test_matrix_summary_skips_the_unfinished_runs_a_glob_catches(clear_runs, tmp_path):
    runs, _ = clear_runs
    result = _invoke("matrix-summary", *sorted(runs.glob("clear-mini-*")), "--out", tmp_path)
    assert result.exit_code == 0, result.output
    seed2, seed3 = next(runs.glob("clear-mini-*-seed2")), next(runs.glob("clear-mini-*-seed3"))
    words = " ".join(result.output.split())
    assert f"skipped {seed2}: not finished (stopped after 3 of 12 events)" in words
    assert f"skipped {seed3}: not finished (no summary.json" in words
    (summary,) = tmp_path.glob("*-seeds.json")
    document = json.loads(summary.read_text())
    assert document["seeds"] == [0, 1] and document["metrics"]["acc"]["n"] == 2


def test_matrix_summary_of_unfinished_runs_only_is_an_error(clear_runs, tmp_path):
    runs, _ = clear_runs
    result = _invoke("matrix-summary", *sorted(runs.glob("clear-mini-*-seed[23]")), "--out", tmp_path)
    assert result.exit_code == 2 and "error: no finished run in" in result.output and "2 not finished" in result.output
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------------------
# (b) report and matrix-summary never overwrite silently


def test_matrix_summary_refuses_an_existing_summary_without_overwrite(clear_runs, tmp_path):
    runs, _ = clear_runs
    folders = sorted(runs.glob("clear-mini-*-seed[01]"))
    assert _invoke("matrix-summary", *folders, "--out", tmp_path).exit_code == 0
    (summary,) = tmp_path.glob("*-seeds.json")
    summary.write_text("{}")
    again = _invoke("matrix-summary", *folders, "--out", tmp_path)
    assert again.exit_code == 2 and "--overwrite" in again.output and "already exists" in again.output
    assert summary.read_text() == "{}"  # untouched
    replaced = _invoke("matrix-summary", *folders, "--out", tmp_path, "--overwrite")
    assert replaced.exit_code == 0 and json.loads(summary.read_text())["seeds"] == [0, 1]


def test_report_refuses_an_existing_report_and_replaces_it_with_overwrite(clear_runs, tmp_path):
    runs, _ = clear_runs
    seed0, seed1 = sorted(runs.glob("clear-mini-*-seed[01]"))
    out = tmp_path / "report"
    assert _invoke("report", seed0, seed1, "--out", out).exit_code == 0
    (out / "stale.png").write_bytes(b"an earlier report's figure")
    again = _invoke("report", seed0, "--out", out)
    assert again.exit_code == 2 and "error:" in again.output and "--overwrite" in again.output
    assert (out / "stale.png").exists()  # nothing written
    replaced = _invoke("report", seed0, "--out", out, "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert not (out / "stale.png").exists() and (out / "index.html").is_file()
    assert seed1.name not in (out / "index.html").read_text(encoding="utf-8")


def test_report_never_writes_into_a_folder_of_other_files(clear_runs, tmp_path):
    runs, _ = clear_runs
    (tmp_path / "notes.txt").write_text("mine")
    for flags in ((), ("--overwrite",)):
        result = _invoke("report", runs, "--out", tmp_path, *flags)
        assert result.exit_code == 2 and "holds files but no report" in result.output
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


# ---------------------------------------------------------------------------------------------------------
# (c) report labels survive rebuilds


def _dated_run(root: Path, seed: int, created: str) -> Path:
    folder = write_run(root, f"syn-seed{seed}", "independent", seed, [0.2, 0.5, 0.3, 0.6, 0.25, 0.35])
    info = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**info, "created": created}))
    return folder


def _labels(index: Path) -> dict[str, str]:
    text = index.read_text(encoding="utf-8")
    return dict((run, label) for label, run in re.findall(r"<td>(R\d+)</td><td><code class=\"id\">([^<]+)<", text))


def test_report_labels_follow_creation_order_and_survive_a_rebuild_with_more_runs(tmp_path):
    early = _dated_run(tmp_path / "runs", 7, "2026-01-02T10:00:00+0000")
    late = _dated_run(tmp_path / "runs", 3, "2026-01-02T11:00:00+0000")
    newest = _dated_run(tmp_path / "runs", 5, "2026-01-03T09:00:00+0100")
    out = tmp_path / "report"
    first = report(ReportSpec(runs=[late, early], out=out))  # given in another order: creation decides
    assert _labels(first) == {"syn-seed7": "R1", "syn-seed3": "R2"}
    rebuilt = report(ReportSpec(runs=[newest, late], out=out, overwrite=True))
    assert _labels(rebuilt) == {"syn-seed3": "R2", "syn-seed5": "R3"}  # none relabelled
    again = report(ReportSpec(runs=[early, late, newest], out=out, overwrite=True))
    assert _labels(again) == {"syn-seed7": "R1", "syn-seed3": "R2", "syn-seed5": "R3"}
    assert json.loads((out / "labels.json").read_text())["syn-seed5"] == "R3"  # kept in the report folder
    rows = re.findall(r"<td>(R\d+)</td>", again.read_text(encoding="utf-8"))
    assert rows == ["R1", "R2", "R3"]  # tables list runs by label


# ---------------------------------------------------------------------------------------------------------
# (d) facts tasks numbered from 1 in the console, as in the report


def test_fact_console_numbers_tasks_from_1(capsys):
    from lifelong.commands.fact_console import print_fact_run
    from lifelong.commands.terminal import console

    result = {
        "run_id": "facts-mini-fact-finetune-seed0",
        "fact_tasks_trained": 3,
        "fact_R": [[0.5, 0.1, 0.2], [0.4, 0.6, 0.1], [0.3, 0.5, 0.7]],
        "fact_b": [0.05, 0.04, 0.06],
        "cumulative_train_flops": 1.0e9,
        "events_done": 9,
        "events_total": 9,
        "path": "runs/facts-mini-fact-finetune-seed0",
    }
    width = console.width
    console.width = 80
    try:
        print_fact_run(result)
    finally:
        console.width = width
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "after \\ on" in line)
    assert re.findall(r"\d", header) == ["1", "2", "3"]
    lines = out.splitlines()
    body = lines[lines.index(header) + 2 : lines.index(header) + 6]  # the rows under the header's rule
    assert [line.split()[0] for line in body] == ["untrained", "1", "2", "3"]
    assert "R[after, on]" in out  # the title's brackets are text, not markup


# ---------------------------------------------------------------------------------------------------------
# (e) lifelong --version


def test_version_prints_lifelong_and_torch_versions():
    from importlib.metadata import version

    result = _invoke("--version")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [f"lifelong {version('lifelong')}", f"torch {version('torch')}"]


# ---------------------------------------------------------------------------------------------------------
# (f) the README says how to get torch's CPU build


def test_readme_and_install_page_give_pytorchs_cpu_wheel_index():
    command = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    install = " ".join((ROOT / "README.md").read_text().split("## The default run")[0].split())
    assert command in install
    assert command in (ROOT / "docs" / "install.md").read_text()


# ---------------------------------------------------------------------------------------------------------
# (g) after a run: what to do next


def test_run_ends_with_the_next_commands_at_80_columns(clear_runs):
    runs, output = clear_runs
    lines = output.splitlines()
    assert lines[-1] == f"next: lifelong results {runs}  |  lifelong report {runs} --out report" or lines[-3:] == [
        "next:",
        f"  lifelong results {runs}",
        f"  lifelong report {runs} --out report",
    ]


def test_next_steps_put_each_command_on_its_own_line_when_they_do_not_fit(capsys):
    from lifelong.commands.run_console import print_next_steps
    from lifelong.commands.terminal import console

    width = console.width
    console.width = 80
    try:
        print_next_steps("runs")
        print_next_steps("/a/rather/long/path/to/the/runs/of/an/experiment")
    finally:
        console.width = width
    assert capsys.readouterr().out.splitlines() == [
        "next: lifelong results runs  |  lifelong report runs --out report",
        "next:",
        "  lifelong results /a/rather/long/path/to/the/runs/of/an/experiment",
        "  lifelong report /a/rather/long/path/to/the/runs/of/an/experiment --out report",
    ]
