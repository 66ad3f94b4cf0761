"""The README's Python quickstart runs as written and prints the numbers the CLI prints for the same run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart() -> str:
    """The README's one ```python block (under "The same from Python")."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) == 1, f"expected one ```python block in the README, found {len(blocks)}"
    return blocks[0]


def test_the_readme_python_quickstart_runs_as_written_and_matches_the_cli(tmp_path):
    script = tmp_path / "quickstart.py"
    script.write_text(quickstart())
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = re.search(r"mean error (\d\.\d{4}) = (\d\.\d{4}) over (\d+) tasks", done.stdout)
    assert said, done.stdout
    assert said.group(1) == said.group(2) and said.group(3) == "9"
    assert (tmp_path / "error-vs-compute.png").stat().st_size > 1000
    documented = re.search(r"print `mean error (\d\.\d{4}) = (\d\.\d{4}) over (\d+) tasks`", README.read_text())
    assert documented and documented.groups() == said.groups()  # the README says what it prints

    from typer.testing import CliRunner

    from lifelong.cli import app

    cli = CliRunner().invoke(
        app, ["run", "--stream", "mini", "--learner", "nearest-mean", "--out", str(tmp_path / "cli")]
    )
    assert cli.exit_code == 0, cli.output
    assert f"mean error {said.group(1)} over 9 tasks" in " ".join(cli.output.split())
