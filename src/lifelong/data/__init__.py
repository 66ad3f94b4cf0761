"""The data layer: load a source, de-duplicate, split (docs/protocols/nevis.md#splits), resize, wrap as datasets."""

from lifelong.data.build import build_task_splits
from lifelong.data.dedup import DedupReport, content_hash, deduplicate, image_digest
from lifelong.data.images import CorruptImageError, center_crop_resize, decode_image, resize_all, to_channels
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources import BUILTIN_SOURCES, describe, load_source
from lifelong.data.splits import SPLIT_NAMES, split_indices

__all__ = [
    "BUILTIN_SOURCES",
    "SPLIT_NAMES",
    "CorruptImageError",
    "DedupReport",
    "LabeledImages",
    "build_task_splits",
    "center_crop_resize",
    "content_hash",
    "decode_image",
    "deduplicate",
    "describe",
    "image_digest",
    "load_source",
    "resize_all",
    "split_indices",
    "to_channels",
]
