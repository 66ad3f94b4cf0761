"""What a new user hit (issue 11, section 4): each test failed before its fix."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.suites import classify_stream


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=80)


def test_every_listed_stream_name_is_one_run_accepts():
    rows = json.loads(_invoke("streams", "--json").output)
    assert {"mini", "clear-mini", "nevis-full"} <= {row["name"] for row in rows}
    for row in rows:
        classify_stream(row["name"])  # raises for a name `lifelong run --stream` would not know


@pytest.mark.parametrize("args", [("streams",), ("learners",)])
def test_tables_never_cut_values_at_80_columns(args):
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    if args == ("streams",):
        rows = [line for line in result.output.splitlines() if line.startswith("│")]
        first_column = "".join(line.split("│")[1].strip() for line in rows)
        assert "nevis-major-domain" in first_column  # folded over lines, never cut


def test_accuracy_matrix_table_keeps_every_value_at_80_columns(capsys):
    from lifelong.commands import accuracy_matrix_console
    from lifelong.commands.terminal import console

    matrix = [[0.225 + 0.01 * j for j in range(10)] for _ in range(10)]
    result = {
        "run_id": "clear-mini-protocol=iid-nearest-mean-seed0",
        "path": "/a/rather/long/path/to/the/runs/clear-mini-protocol=iid-nearest-mean-seed0",
        "matrix_protocol": "iid",
        "accuracy_matrix": matrix,
        "labels": [f"bucket{i}" for i in range(1, 11)],
        "clear_metrics": {},
        "events_done": 110,
        "events_total": 110,
        "cumulative_train_flops": 0.0,
    }
    width = console.width
    console.width = 80
    try:
        accuracy_matrix_console.print_matrix_run(result)
    finally:
        console.width = width
    out = capsys.readouterr().out
    assert "…" not in out and "31.5" in out and "22.5" in out


@pytest.mark.parametrize(
    "args, says",
    [
        (("run", "-s", "bogus=1"), "unknown stream option 'bogus' for --stream mini; see `lifelong streams mini`"),
        (
            ("run", "-s", "split_sed=1"),
            "unknown stream option 'split_sed' for --stream mini (did you mean 'split_seed'?)",
        ),
        (
            ("run", "-o", "epoch=1"),
            "unknown learner option 'epoch' for --learner independent (did you mean 'epochs'?); see "
            "`lifelong learners independent`",
        ),
        (("run", "--learner", "indepndent"), "unknown learner 'indepndent' (did you mean 'independent'?)"),
        (("run", "--stream", "nevis-mni"), "unknown stream 'nevis-mni' (did you mean 'nevis-mini'?)"),
        (("run", "-o", "epochs=abc"), "option epochs=abc must be a whole number (default 10); e.g. -o epochs=10"),
        (("run", "-o", "epochs=1.5"), "option epochs=1.5 must be a whole number"),
        (("run", "--learner", "finetune"), "does not share the label space"),
        (
            ("run", "--stream", "clear-mini", "--learner", "finetune", "-o", "encoder=missing.pt"),
            "'missing.pt' not found",
        ),
    ],
)
def test_bad_input_is_a_one_line_error_before_any_training(args, says, tmp_path):
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "runs")])
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output
    assert not list(tmp_path.glob("runs/*/checkpoint.pkl"))  # nothing trained


def test_help_reads_like_a_usual_cli():
    text = CliRunner().invoke(app, ["run", "--help"], terminal_width=120).output
    text = "\n".join(line for line in text.splitlines() if "--help" not in line)  # typer's own flag
    assert "<bool>" not in text and "<str>" not in text and "<list[str]>" not in text
    assert "STREAM" in text and "OPTION" in text
    usage = CliRunner().invoke(app, ["report", "--help"], terminal_width=120).output
    assert "{run_dirs}" not in usage and "RUN_DIRS" in usage
