"""facts-mini (and cog-mini) without the emoji artwork: a run stops before it makes a run folder, saying in a line
what is missing and the one command that installs it. The artwork is hidden by pointing $LIFELONG_EMOJI_DIR and
the cache folder at empty folders (the npm packages Twemoji and OpenMoji are then missing)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.data.sources.emoji_art import EMOJI_DIR_ENV, INSTALL_COMMAND, EmojiArt, EmojiArtMissingError
from lifelong.suites import get_stream

SHORT = 300  # characters: the message names what is missing and the command, not every folder searched


@pytest.fixture
def no_artwork(tmp_path, monkeypatch):
    """The working folder `tmp_path` on a machine without the npm artwork (Twemoji, OpenMoji)."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(EMOJI_DIR_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    if EmojiArt().available("twemoji"):
        pytest.skip("emoji-datasource-twitter is installed globally (npm -g): the artwork cannot be hidden")
    return tmp_path


def _error(output: str) -> str:
    (line,) = [line for line in output.splitlines() if line.startswith("error:")]
    return line


def test_a_facts_mini_run_without_the_artwork_fails_before_its_run_folder(no_artwork):
    args = ["run", "--stream", "facts-mini", "--out", "runs", "--data-root", "data"]
    result = CliRunner().invoke(app, args, terminal_width=80)
    assert result.exit_code == 2, result.output
    message = _error(result.output)
    assert f"`{INSTALL_COMMAND}`" in message and "facts-mini" in message and "Twemoji" in message
    assert len(message) < SHORT and "Error" not in message, message  # no Python class, no list of folders
    assert not (no_artwork / "runs").exists() and not (no_artwork / "data").exists()


def test_the_python_api_refuses_the_same_run_before_writing(no_artwork):
    with pytest.raises(EmojiArtMissingError, match=INSTALL_COMMAND):
        api.run(api.RunsSpec(stream="facts-mini", out=no_artwork / "runs", seeds=2))
    assert not (no_artwork / "runs").exists()


def test_listing_facts_mini_needs_no_artwork(no_artwork):
    stream = get_stream("facts-mini")  # `lifelong streams` builds it so: the images are only drawn by a run
    assert len(stream.tasks) == 4


def test_cog_pretrain_without_the_artwork_says_so_in_a_line(no_artwork):
    args = ["cog", "pretrain", "--kind", "supervised", "--out", "enc.pt", "--data-root", "data"]
    result = CliRunner().invoke(app, args, terminal_width=80)
    assert result.exit_code == 2, result.output
    message = _error(result.output)
    assert f"`{INSTALL_COMMAND}`" in message and "cog-mini" in message and len(message) < SHORT, message
    assert not (no_artwork / "enc.pt").exists() and not (no_artwork / "enc.pt.work").exists()
