"""`lifelong cog levels`: the default command's CSV, the filter table, and one-line errors (exit 2) on bad input."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from lifelong.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, ["cog", "levels", *[str(a) for a in args]], catch_exceptions=False)


def test_the_default_command_writes_the_levels_csv(tax, tmp_path):
    out = tmp_path / "levels.csv"
    result = invoke("--out", out)
    assert result.exit_code == 0, result.output
    with open(out, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = list(reader)
    assert header == ["wnid", "name", "similarity", "level"]
    assert len(rows) == 5000 and [sum(r[3] == str(k) for r in rows) for k in range(1, 6)] == [1000] * 5
    sims = [float(r[2]) for r in rows]
    assert sims == sorted(sims, reverse=True) and all(0 <= s <= 1 for s in sims)
    for name in ("seen-ancestors", "person", "manual", "count", "leaves", "skipped", "14183", "time:"):
        assert name in result.output
    assert "n04399382" in result.output  # the notice: teddy bear joined the IC corpus


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--seen", "{seen_bad}"], "n0208407"),
        (["--seen", "{seen_unknown}"], "n99999999"),
        (["--seen", "{seen_dog}", "--candidates", "{few}", "--levels", "7"], "empty"),
        (["--per-level", "5000"], "empty"),
        (["--similarity", "cosine"], "cosine"),
        (["--order", "seen,bogus"], "bogus"),
        (["--seen", "{missing}"], "missing.txt"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_code_2(tax, tmp_path, args, named):
    files = {
        "seen_bad": write(tmp_path, "bad.txt", "n02084071\nn0208407\n"),
        "seen_unknown": write(tmp_path, "unknown.txt", "n99999999\n"),
        "seen_dog": write(tmp_path, "dog.txt", "n02084071\n"),
        "few": write(tmp_path, "few.txt", "n02121808\nn02123045\nn01503061\nn02691156\n"),
        "missing": tmp_path / "missing.txt",
    }
    result = invoke("--out", tmp_path / "out.csv", *[a.format(**files) for a in args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith("error:")]) == 1
    assert named in result.output
    assert not (tmp_path / "out.csv").exists()
