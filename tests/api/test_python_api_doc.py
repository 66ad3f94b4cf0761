"""docs/python-api.md holds: its example runs as written, and its table names every function of lifelong.api."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import lifelong.api as api

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def test_the_example_runs_as_written(tmp_path, monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    names: dict = {}
    exec(compile(code, str(DOC), "exec"), names)  # noqa: S102 (the documentation's own example)
    assert [run["seed"] for run in names["runs"]] == [0, 1]
    assert set(names["frame"]["run"]) == {run["run_id"] for run in names["runs"]}
    assert list(names["status"].leaderboard.columns)  # an empty store's leaderboard: a DataFrame with its columns
    assert capsys.readouterr().out == ""  # the API prints nothing


def test_the_table_names_every_workflow_function():
    table = DOC.read_text().split("## Every command and its function")[1].split("Each function's")[0]
    named = set(re.findall(r"`([a-z_]+)`", table))
    functions = {name for name in api.__all__ if inspect.isfunction(getattr(api, name))}
    assert functions - named == set(), "functions of lifelong.api missing from docs/python-api.md"
    classes = {name for name in re.findall(r"`([A-Z][A-Za-z]+)`", table)}
    assert {name for name in classes if not hasattr(api, name)} == set()
