"""The layering written in pyproject.toml ([tool.importlinter]) holds: imports only go down, lazy ones included."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from _prereq import missing

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    command = str(lint) if lint.exists() else shutil.which("lint-imports")
    if command is None:
        missing("import-linter is not installed: pip install -e '.[test]'")
    done = subprocess.run([command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " 0 broken" in done.stdout.split("Contracts:")[-1]


def test_no_contract_has_exceptions():
    text = (ROOT / "pyproject.toml").read_text()
    assert "[tool.importlinter]" in text
    assert "ignore_imports" not in text  # the layering admits no exception
