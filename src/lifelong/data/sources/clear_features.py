"""CLEAR's pre-extracted feature files: features/<name>/<bucket>/<class>.pth (a dict id -> [D] tensor, a [N, D]
tensor or a list of [D] tensors) or one all.pth of (features, targets) per bucket, read into float32 [N, D] arrays.

torch is imported only when a file is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FEATURE_SUFFIX = ".pth"


def _torch_load(path: Path) -> Any:
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for bad files
        raise ValueError(f"cannot load features {str(path)!r}: {exc}; re-download or re-extract the file") from exc


def _as_matrix(value: Any, path: Path) -> np.ndarray:
    import torch

    if isinstance(value, torch.Tensor):
        array = value.detach().cpu().float().numpy()
    elif isinstance(value, np.ndarray):
        array = value.astype(np.float32)
    elif isinstance(value, list | tuple) and all(isinstance(v, torch.Tensor) for v in value):
        array = torch.stack([v.reshape(-1) for v in value]).float().numpy() if value else np.zeros((0, 0), np.float32)
    else:
        raise ValueError(
            f"{str(path)!r}: unsupported feature format {type(value).__name__}; expected a [N, D] tensor, "
            "a list of [D] tensors, or a dict of id -> [D] tensor"
        )
    if array.ndim == 1 and len(array) == 0:
        array = array.reshape(0, 0)
    if array.ndim != 2:
        raise ValueError(f"{str(path)!r}: features must be [N, D], got shape {tuple(array.shape)}")
    return array


def read_class_pth(path: Path) -> tuple[np.ndarray, list[str]]:
    """(float32 [N, D], ids) from a <class>.pth: a dict id -> [D] tensor, or a [N, D] tensor / list of tensors."""
    value = _torch_load(path)
    if isinstance(value, dict):
        keys = list(value)
        features = _as_matrix([_tensor(value[k], path, k) for k in keys], path)
        return features, [str(k) for k in keys]
    features = _as_matrix(value, path)
    return features, [f"{path}[{i}]" for i in range(len(features))]


def _tensor(value: Any, path: Path, key: Any) -> Any:
    import torch

    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"{str(path)!r}: item {key!r} is a {type(value).__name__}, expected a feature tensor")
    return value


def read_all_pth(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(float32 [N, D], int targets [N], ids) from an all.pth holding (features, targets), as the 2021 release."""
    value = _torch_load(path)
    if not (isinstance(value, list | tuple) and len(value) == 2):
        raise ValueError(f"{str(path)!r}: expected a pair (features, targets), got {type(value).__name__}")
    features = _as_matrix(value[0], path)
    targets = np.asarray([int(t) for t in value[1]], dtype=np.int64)
    if len(targets) != len(features):
        raise ValueError(f"{str(path)!r}: {len(features)} feature rows but {len(targets)} targets")
    return features, targets, [f"{path}[{i}]" for i in range(len(features))]
