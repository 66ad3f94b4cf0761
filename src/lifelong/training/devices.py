"""Which torch device a computation runs on: `auto` (CUDA when available, else the CPU), `cpu`, `cuda` or `cuda:N`.

One place for the rule, so every command that takes a device spec reads it the same way, and a spec that cannot be
honoured (CUDA asked for on a machine without it, a GPU index beyond the count, a misspelt name) is an error that
says what the machine has, never a silent fall back to the CPU.
"""

from __future__ import annotations

import re

import torch

AUTO = "auto"
DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"
_SPEC = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")


def resolve_device(spec: str | torch.device | None = AUTO) -> torch.device:
    """The torch device of `spec` (None or "auto": CUDA when available, else the CPU); a ValueError if unusable."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    text = AUTO if spec is None else str(spec).strip().lower()
    match = _SPEC.match(text)
    if match is None or (match.group(1) != "cuda" and match.group(2) is not None):
        raise ValueError(f"unknown device {spec!r}; give {DEVICE_CHOICES}")
    kind, index = match.group(1), match.group(2)
    if kind == AUTO:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {spec!r} asked for CUDA, but torch sees no CUDA GPU here; use cpu or auto")
    count = torch.cuda.device_count()
    if index is not None and int(index) >= count:
        raise ValueError(f"device {spec!r}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device(text)


__all__ = ["AUTO", "DEVICE_CHOICES", "resolve_device"]
