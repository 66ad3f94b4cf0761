"""Features of in-memory images (the CLEAR linear regime's buckets), cached one row per distinct image.

    <root>/<key>/                key = cache_key(identity, ITEM_INPUTS): one folder per encoder identity
        manifest.json            format, identity, feature dim
        rows-000000.npy          float32 [n, D]: one block of encoded images
        rows-000000.keys.npy     uint8 [n, 16]: each row's image digest; written last, it commits the block

An image's digest is blake2b-128 of its dtype, shape and bytes, so an image hits whatever array, split, order or
seed it arrives in: the iid protocol draws a new 70/30 split of every bucket per seed, and every seed after the
first reads all its features from here. A miss encodes only the images not stored yet (each once, however often
it repeats), block by block; a killed run loses at most the block it was encoding. The lock of
`lifelong.training.feature_cache` makes concurrent runs wait for one another instead of encoding the same images.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.data.feature_files import FORMAT, MANIFEST_FILE, FeatureSizeError, write_json
from lifelong.training.feature_cache import cache_key, cache_root, check_feature_size, locked

ITEM_INPUTS = "in-memory images, one row per distinct image (blake2b-128 of dtype, shape and bytes)"
DIGEST_SIZE = 16
ROWS_PATTERN = "rows-{:06d}.npy"
KEYS_SUFFIX = ".keys.npy"


def image_digests(items: np.ndarray) -> np.ndarray:
    """uint8 [N, 16]: a digest of each image of `items` [N, ...] (its dtype, shape and bytes)."""
    items = np.ascontiguousarray(items)
    header = f"{items.dtype.str}:{items.shape[1:]};".encode()
    digests = np.empty((len(items), DIGEST_SIZE), dtype=np.uint8)
    for i, item in enumerate(items):
        digest = hashlib.blake2b(header, digest_size=DIGEST_SIZE)
        digest.update(memoryview(item).cast("B"))
        digests[i] = np.frombuffer(digest.digest(), dtype=np.uint8)
    return digests


def cached_array_features(
    encode_rows: Callable[[np.ndarray], np.ndarray],
    items: np.ndarray,
    identity: Mapping[str, Any],
    *,
    root: str | os.PathLike | None = None,
    batch_size: int = 1024,
) -> np.ndarray:
    """float32 features [N, D] of `items` (uint8 images [N, H, W, C]), read-only.

    `encode_rows` turns a block of images into float32 [B, D]; `identity` must describe it (see
    `feature_cache.encoder_identity`). Images already in the cache are read from it (memory-mapped blocks); the
    others are encoded `batch_size` at a time, each block committed before the next, then all rows are gathered.
    """
    items = np.asarray(items)
    dim = int(identity["feature_dim"])
    folder = cache_root(root) / cache_key(identity, ITEM_INPUTS)
    digests = image_digests(items)
    keys = [bytes(d) for d in digests]
    with locked(folder):
        check_feature_size(folder, dim, encoder=f"the encoder (weights {str(identity.get('weights_sha256'))[:12]})")
        _ensure_manifest(folder, identity, dim)
        index, blocks = _index(folder)
        missing: dict[bytes, int] = {}  # digest -> first position in items, in order
        for position, key in enumerate(keys):
            if key not in index and key not in missing:
                missing[key] = position
        positions = np.fromiter(missing.values(), dtype=np.int64, count=len(missing))
        for start in range(0, len(positions), batch_size):
            chosen = positions[start : start + batch_size]
            block = np.asarray(encode_rows(items[chosen]), dtype=np.float32)
            if block.shape != (len(chosen), dim):
                raise FeatureSizeError(
                    f"the encoder gave features of shape {block.shape} where {(len(chosen), dim)} was expected: its "
                    f"identity (and the feature cache {folder}) says size {dim}"
                )
            number = len(blocks)
            rows_path = folder / ROWS_PATTERN.format(number)
            atomic_write_bytes(rows_path, _npy_bytes(block))
            atomic_write_bytes(_keys_path(rows_path), _npy_bytes(digests[chosen]))  # commits the block
            blocks.append(rows_path)
            for row, position in enumerate(chosen):
                index[keys[position]] = (number, row)
        features = _gather(keys, index, blocks, dim)
    features.setflags(write=False)
    return features


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _keys_path(rows_path: Path) -> Path:
    return rows_path.with_name(rows_path.name.removesuffix(".npy") + KEYS_SUFFIX)


def _ensure_manifest(folder: Path, identity: Mapping[str, Any], dim: int) -> None:
    """Write the folder's manifest when it has none (the first call for this identity)."""
    path = folder / MANIFEST_FILE
    if not path.is_file():
        write_json(path, {"format": FORMAT, "identity": dict(identity), "inputs": ITEM_INPUTS, "feature_dim": dim})


def _index(folder: Path) -> tuple[dict[bytes, tuple[int, int]], list[Path]]:
    """({image digest: (block number, row)}, committed blocks' rows files in order). A block whose keys file is
    missing (killed while writing) is not committed: the next block written takes its number."""
    index: dict[bytes, tuple[int, int]] = {}
    blocks: list[Path] = []
    while True:
        rows_path = folder / ROWS_PATTERN.format(len(blocks))
        keys_path = _keys_path(rows_path)
        if not (rows_path.is_file() and keys_path.is_file()):
            return index, blocks
        for row, digest in enumerate(np.load(keys_path, allow_pickle=False)):
            index.setdefault(bytes(digest), (len(blocks), row))
        blocks.append(rows_path)


def _gather(keys: list[bytes], index: dict[bytes, tuple[int, int]], blocks: list[Path], dim: int) -> np.ndarray:
    """float32 [len(keys), dim]: each key's row, read block by block from the memory-mapped rows files."""
    where = np.array([index[key] for key in keys], dtype=np.int64).reshape(len(keys), 2)
    features = np.empty((len(keys), dim), dtype=np.float32)
    for number in np.unique(where[:, 0]):
        mask = where[:, 0] == number
        rows = np.load(blocks[number], mmap_mode="r", allow_pickle=False)
        if rows.ndim != 2 or rows.shape[1] != dim:
            raise FeatureSizeError(
                f"{blocks[number]} holds features of shape {rows.shape}, expected (*, {dim}); delete "
                f"{blocks[number].parent} and run again"
            )
        features[mask] = rows[where[mask, 1]]
    return features
