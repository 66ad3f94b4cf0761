"""One on-disk cache of frozen-encoder features, keyed by what decides their numbers: the encoder's identity and
the inputs.

    <root>/<key>/           a features folder (`lifelong.data.feature_files`), memory-mapped when read
    key = sha256(identity, inputs sha256)[:16]

The identity is the weights (sha256 of every parameter and buffer), the architecture printout, the preprocessing
(input side and transform) and the *precision of the forward pass* ("fp32", "tf32" or "bf16"): bf16 autocast on a
GPU and fp32 on the CPU give different numbers, so they never share a folder. The device type is not in the key
by itself: fp32 on the CPU and fp32 on a GPU without TF32 agree to ~1e-6, below what the float16 storage keeps,
while TF32 (on by default on CUDA) rounds matmul inputs to 10 bits and is keyed as "tf32". The spec or path the
encoder came from is not in the key either: the same weights copied elsewhere hit the same folder.

Runs, seeds and commands that encode the same inputs with the same encoder share a folder: the second one reads
it instead of running the encoder. A folder is filled batch by batch and resumes after a kill (see
`lifelong.training.features`); a lock file lets concurrent runs wait for one another instead of writing the same
rows. Features of in-memory images (the CLEAR linear regime's buckets) are kept one row per image instead
(`lifelong.training.array_feature_cache`). The root: the `root` argument, else $LIFELONG_CACHE/features, else
$XDG_CACHE_HOME (or ~/.cache)/lifelong/features.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import torch

from lifelong.data.feature_files import (
    FORMAT,
    MANIFEST_FILE,
    FeatureSizeError,
    read_json,
)
from lifelong.training.devices import current_accelerator
from lifelong.training.encoders import weights_sha256 as encoder_weights_sha256

CACHE_ENV = "LIFELONG_CACHE"
LOCK_FILE = ".lock"
KEY_LENGTH = 16  # hex digits of the key folder's name: 64 bits, no collision among any realistic number of folders
PRECISIONS = ("fp32", "tf32", "bf16")
ARRAY_TRANSFORM = "uint8 images centre-resized to the encoder's resolution, pixels scaled to [-1, 1] (encode)"


def cache_root(root: str | os.PathLike | None = None) -> Path:
    """The feature cache's root: `root`, else $LIFELONG_CACHE/features, else $XDG_CACHE_HOME or ~/.cache, then
    lifelong/features."""
    if root is not None and os.fspath(root):
        return Path(root).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser() / "features"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lifelong" / "features"


def forward_precision(device: str | torch.device | None = None) -> str:
    """The arithmetic a forward pass on `device` (default: the current accelerator's) uses here: "bf16" when the
    accelerator autocasts to bfloat16 there, "tf32" for fp32 on CUDA with TF32 matmuls or convolutions on, else
    "fp32"."""
    acc = current_accelerator()
    device = acc.torch_device if device is None else torch.device(device)
    precision = acc.precision
    if precision == "auto":
        precision = "bf16" if device.type == "cuda" else "fp32"
    if precision == "fp32" and device.type == "cuda":
        if torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32:
            return "tf32"
    return precision


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    """The autocast context that makes a forward pass on `device` run at `precision` (a no-op but for bf16)."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _plain(value: Any) -> Any:
    """`value` as JSON-able data (dataclasses and mappings become dicts, tuples lists)."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if hasattr(value, "to_dict") and callable(value.to_dict):
        value = value.to_dict()
    return json.loads(json.dumps(value, default=str))


def _architecture_sha256(module: torch.nn.Module) -> str:
    """A digest of the module's printout: two networks with the same weights but other layers (an activation, a
    pooling) differ here."""
    return hashlib.sha256(repr(module).encode()).hexdigest()


def encoder_identity(
    encoder: torch.nn.Module, *, precision: str, preprocessing: Mapping[str, Any], weights_sha256: str | None = None
) -> dict[str, Any]:
    """What decides the numbers of `encoder`'s features (the cache key's encoder half).

    `preprocessing`: how the caller turns files or arrays into the batch (its side, its transform), which is the
    caller's, whatever the encoder declares. `weights_sha256`: when already known.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    identity: dict[str, Any] = {}
    # An Encoder that states its own identity (weights sha256 + its preprocessing + precision, from the encoder
    # layer) is taken at its word; its human-readable description is left out of the key (it may hold a path).
    # Older encoders without one get the same fields computed here.
    own = getattr(encoder, "identity", None)
    if callable(own):
        own = own(precision)
    if own is not None:
        identity["encoder"] = {k: v for k, v in _plain(own).items() if k != "description"}
    module = getattr(encoder, "module", encoder)
    if weights_sha256 is None and "weights_sha256" not in identity.get("encoder", {}):
        weights_sha256 = encoder_weights_sha256(encoder)
    if weights_sha256 is not None:
        identity["weights_sha256"] = weights_sha256
    identity |= {
        "architecture_sha256": _architecture_sha256(module),
        "preprocessing": _plain(dict(preprocessing)),
        "precision": precision,
        "in_channels": int(getattr(encoder, "in_channels", 3)),
        "feature_dim": int(encoder.feature_dim),
    }
    return identity


def cache_key(identity: Mapping[str, Any], inputs_sha256: str) -> str:
    """The key folder's name: a short hash of (identity, inputs sha256)."""
    text = json.dumps({"format": FORMAT, "identity": identity, "inputs": inputs_sha256}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def files_sha256(files: Sequence[str], labels: Sequence[int]) -> str:
    """A digest of the inputs: each file's absolute path, size and modification time, and the labels (a file
    changed in place gets a new key; reading every image to hash it would cost as much as decoding it)."""
    digest = hashlib.sha256()
    for path, label in zip(files, labels, strict=True):
        try:
            st = os.stat(path)
            stamp = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            stamp = "missing"
        digest.update(f"{os.path.abspath(path)}\0{stamp}\0{int(label)}\n".encode())
    return digest.hexdigest()


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold `folder`'s lock file (created with the folder): a second process asking for the same features waits,
    then finds them done."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def check_feature_size(folder: str | os.PathLike, feature_dim: int, *, encoder: str = "the encoder") -> None:
    """A FeatureSizeError when the features folder `folder` holds features of another size than `feature_dim`
    (naming both sizes, the folder and what to do); nothing when it holds none yet or the sizes agree."""
    folder = Path(folder)
    path = folder / MANIFEST_FILE
    if not path.is_file():
        return
    stored = read_json(path).get("feature_dim")
    if stored is not None and int(stored) != int(feature_dim):
        raise FeatureSizeError(
            f"the feature cache {folder} holds features of size {stored}, but {encoder} gives features of size "
            f"{feature_dim}: they were made by another model. Delete {folder} (or rerun with --overwrite) to "
            "extract them again with this model, or use the model the cache was made with"
        )
