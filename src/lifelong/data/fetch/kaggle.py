"""Kaggle datasets: downloaded with the `kaggle` command when it is installed and has an API token, else explained."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from lifelong.data.fetch.manifest import FetchRefused

TOKEN_FILES = (Path("~/.kaggle/kaggle.json"), Path("~/.config/kaggle/kaggle.json"))


def kaggle_ready() -> str | None:
    """Why the `kaggle` command cannot be used here, or None when it can."""
    if shutil.which("kaggle") is None:
        return "the kaggle command is not installed (pip install kaggle)"
    has_env = os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY")
    config = os.environ.get("KAGGLE_CONFIG_DIR")
    files = [Path(config) / "kaggle.json"] if config else [p.expanduser() for p in TOKEN_FILES]
    if not has_env and not any(p.is_file() for p in files):
        return (
            "the kaggle command has no API token (kaggle.com > Settings > API > Create New Token, saved as "
            "~/.kaggle/kaggle.json, or KAGGLE_USERNAME and KAGGLE_KEY set)"
        )
    return None


def kaggle_download(slug: str, folder: Path, dataset: str, files: list[str]) -> None:
    """`kaggle datasets download -d SLUG -p FOLDER`; a FetchRefused says what to do when it cannot run."""
    why = kaggle_ready()
    if why is not None:
        raise FetchRefused(
            f"{dataset} comes from Kaggle ({slug}) and {why}; or download {', '.join(files)} from "
            f"https://www.kaggle.com/datasets/{slug} and run: lifelong data fetch {dataset} --from DIR"
        )
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["kaggle", "datasets", "download", "-d", slug, "-p", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        raise OSError(f"{dataset}: kaggle datasets download -d {slug} failed: {message[0]}")
    absent = [f for f in files if not (folder / f).is_file()]
    if absent:
        got = ", ".join(sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))) or "nothing"
        raise OSError(
            f"{dataset}: kaggle gave {got}, not {', '.join(absent)}: the manifest's file names are out of date"
        )
