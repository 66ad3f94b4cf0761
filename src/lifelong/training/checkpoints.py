"""Torch files of the toolkit (checkpoints, encoders, resumable states, cached cells): written atomically, read
safely (tensors and plain values only: nothing is executed on load), and tagged with a format string."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import torch

from lifelong.core.files import atomic_write_bytes


def write_torch_file(contents: Any, path: str | os.PathLike) -> Path:
    """`torch.save(contents)` to `path` atomically: a killed process leaves the old file or the new one."""
    buffer = io.BytesIO()
    torch.save(contents, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)


def read_torch_file(path: str | os.PathLike, failure: str = "cannot read {path!r} ({cause})") -> Any:
    """The contents of a torch file, on the CPU; an unreadable file raises ValueError(`failure`).

    `failure` may use `{path!r}` and `{cause}` (the error's type and message).
    """
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ValueError(failure.format(path=str(path), cause=f"{type(exc).__name__}: {exc}")) from exc


def format_tag(contents: Any) -> str:
    """The `format` entry of a tagged dict, or the type name of anything else (for error messages)."""
    return contents.get("format") if isinstance(contents, dict) else type(contents).__name__
