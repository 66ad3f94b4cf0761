"""`lifelong cog install-art` and scripts/install-cog-mini.sh: the plan for a machine, printed by --dry-run with the
active interpreter; nothing is installed (no apt-get, npm or pip runs here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.cog_install import CAIROSVG, DEBIAN_PACKAGES, NPM_VERSIONS, Machine, plan_install

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "install-cog-mini.sh"
PINNED = [f"{package}@{version}" for package, version in NPM_VERSIONS.items()]


def machine(**changes) -> Machine:
    """A bare Debian machine (nothing installed), as a user without root but with sudo."""
    facts = dict(root=False, apt=True, sudo=True, npm=False, dpkg=True, missing_debian=DEBIAN_PACKAGES)
    facts |= dict(fonts_found=False, npm_versions=dict.fromkeys(NPM_VERSIONS), cairosvg=False, pip=True)
    return Machine(**{**facts, **changes})


def test_plan_on_a_bare_machine_installs_everything_into_the_running_python(tmp_path):
    debian, npm, pip = plan_install(tmp_path / "emoji", machine(), python="/venv/bin/python")
    assert debian.commands[-1] == ("sudo", "apt-get", "install", "-y", "-qq", *DEBIAN_PACKAGES, "npm")
    assert npm.commands[0][:4] == ("npm", "install", "--prefix", str(tmp_path / "emoji"))
    assert list(npm.commands[0][-2:]) == PINNED
    assert pip.commands == (("/venv/bin/python", "-m", "pip", "install", "-q", CAIROSVG),)
    as_root = plan_install(tmp_path, machine(root=True), python="python")[0]
    assert as_root.commands[0][0] == "apt-get"


def test_plan_skips_what_is_there_and_says_what_to_run_by_hand(tmp_path):
    installed = machine(missing_debian=(), npm=True, npm_versions=dict(NPM_VERSIONS), cairosvg=True)
    assert all(step.done and not step.commands for step in plan_install(tmp_path, installed))
    stuck = machine(sudo=False, pip=False)
    debian, npm, pip = plan_install(tmp_path, stuck, python="/opt/py")
    assert not debian.commands and "apt-get install" in debian.by_hand and "as root" in debian.by_hand
    assert not npm.commands and "npm is not installed" in npm.by_hand and PINNED[0] in npm.by_hand
    assert not pip.commands and "/opt/py has no pip" in pip.by_hand and CAIROSVG in pip.by_hand
    no_apt = plan_install(tmp_path, machine(apt=False, dpkg=False))[0]
    assert not no_apt.commands and "no apt-get" in no_apt.by_hand


def test_dry_run_prints_the_plan_and_installs_nothing(tmp_path, monkeypatch):
    emoji = tmp_path / "emoji"
    monkeypatch.setenv("LIFELONG_EMOJI_DIR", str(emoji))
    result = CliRunner().invoke(app, ["cog", "install-art", "--dry-run"], terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "1. Debian packages" in result.output and "3. cairosvg" in result.output
    assert f"--prefix {emoji}" in result.output or "npm is not installed" in result.output
    assert "nothing was installed" in result.output and not emoji.exists()


def test_script_runs_the_command_with_the_active_interpreter(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VIRTUAL_ENV")}
    env["LIFELONG_EMOJI_DIR"] = str(tmp_path / "emoji")
    venv = str(Path(sys.executable).parent.parent)
    for chosen in ({"PYTHON": sys.executable}, {"VIRTUAL_ENV": venv}):
        done = subprocess.run(
            [str(SCRIPT), "--dry-run"], env={**env, **chosen}, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert "dry run: nothing was installed" in done.stdout and "Debian packages" in done.stdout
        assert str(Path(venv) / "bin" / "python") in done.stdout  # cairosvg's step names the interpreter
    missing = subprocess.run(
        [str(SCRIPT), "--dry-run"], env={**env, "PYTHON": str(tmp_path / "nopython")}, capture_output=True, text=True
    )
    assert missing.returncode == 2 and "cannot import lifelong" in missing.stderr and "PYTHON=" in missing.stderr
    assert not (tmp_path / "emoji").exists()
