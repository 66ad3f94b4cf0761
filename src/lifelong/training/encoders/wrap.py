"""Encoders around a user's module: a TorchScript file (`torchscript:FILE`, or a bare .pt path) or a
"package.module:callable" that returns an nn.Module (or a ready Encoder)."""

from __future__ import annotations

import importlib
import re
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lifelong.training.devices import current_accelerator
from lifelong.training.encoders.base import Encoder
from lifelong.training.flops import model_device

DEFAULT_RESOLUTION = 32  # input side for TorchScript / factory encoders when none is given
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


def _first_conv_channels(module: nn.Module) -> int | None:
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            return int(m.in_channels)
        if getattr(m, "original_name", None) == "Conv2d":  # inside a TorchScript module
            try:
                return int(m.in_channels)
            except (AttributeError, RuntimeError, TypeError):
                return None
    return None


def _wrap_module(module: Any, *, resolution: int | None, in_channels: int | None, description: str) -> Encoder:
    """An Encoder around an arbitrary module; the feature size comes from one forward pass on zeros."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"{description} gave a {type(module).__name__}, not a torch.nn.Module")
    side = DEFAULT_RESOLUTION if resolution is None else int(resolution)
    channels = in_channels or _first_conv_channels(module) or 3
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad():
            out = module(torch.zeros(2, channels, side, side, device=model_device(module)))
    except Exception as exc:
        raise ValueError(
            f"{description} failed on a dummy batch [2, {channels}, {side}, {side}] ({type(exc).__name__}: {exc}); "
            "pass resolution= (and in_channels=) that the module accepts"
        ) from exc
    finally:
        module.train(was_training)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != 2:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(
            f"{description} must return features [N, D] for a batch [N, C, H, W]; got {shape} for N=2: "
            "pool and flatten inside the module (e.g. end with nn.AdaptiveAvgPool2d(1), nn.Flatten())"
        )
    encoder = Encoder(
        module,
        feature_dim=int(out.shape[1]),
        resolution=side,
        in_channels=channels,
        description=description,
        keep_layout=True,
    )
    return current_accelerator().place(encoder)


def is_torchscript(path: Path) -> bool:
    """Whether `path` is a torch.jit.save archive (a zip holding code/ and constants.pkl)."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    return any(n.endswith("constants.pkl") or "/code/" in n for n in names)


def load_torchscript(path: Path, *, resolution: int | None, in_channels: int | None) -> Encoder:
    """An Encoder around a TorchScript module; ValueError when the file is not one."""
    if not path.is_file():
        raise FileNotFoundError(f"encoder file {str(path)!r} not found")
    if not is_torchscript(path):
        raise ValueError(f"{str(path)!r} is not a TorchScript file (write one with torch.jit.save)")
    with warnings.catch_warnings():  # torch >= 2.9 marks TorchScript deprecated; loading still works
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.load(str(path), map_location="cpu")
    return _wrap_module(module, resolution=resolution, in_channels=in_channels, description=f"TorchScript {path}")


def import_callable(spec: str, *, what: str) -> Callable[..., Any]:
    """The callable a `package.module:callable` spec names (encoders, `-o architecture=`); a ValueError naming
    `what` (e.g. "encoder spec 'pkg.mod:f'") when the module does not import or has no such callable."""
    if not IMPORT_PATH.match(spec):
        raise ValueError(f"{what} is not of the form package.module:callable")
    module_name, factory_name = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an ImportError, or the module's own code failing: the spec's fault either way
        raise ValueError(f"cannot import {module_name!r} of {what}: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"{module_name!r} has no callable {factory_name!r} ({what})")
    return factory


def from_import_path(spec: str, *, resolution: int | None, in_channels: int | None) -> Encoder:
    """`package.module:callable`: callable() returns an nn.Module mapping [N, C, H, W] to [N, D], or an Encoder
    (which then brings its own preprocessing, head and labels)."""
    made = import_callable(spec, what=f"encoder spec {spec!r}")()
    if isinstance(made, Encoder):
        if resolution is not None:
            made.resolution = resolution
        return current_accelerator().place(made)
    return _wrap_module(made, resolution=resolution, in_channels=in_channels, description=f"factory {spec}")
