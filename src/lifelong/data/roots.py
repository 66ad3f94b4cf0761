"""Where datasets live on disk: one data root for every stream that reads real data."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "LIFELONG_DATA"
DEFAULT_DATA_ROOT = Path("~/.lifelong/data")


def resolve_data_root(data_root: str | os.PathLike | None = None) -> Path:
    """The data root: the argument (`--data-root`), else $LIFELONG_DATA, else ~/.lifelong/data (home expanded)."""
    if data_root is None or not os.fspath(data_root):
        data_root = os.environ.get(DATA_ENV) or DEFAULT_DATA_ROOT
    return Path(data_root).expanduser()
