"""IDX files (the MNIST family's format), plain or gzipped, and Debian's Fashion-MNIST package."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError
from lifelong.data.labeled import LabeledImages

FASHION_MNIST_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
# Where Debian's `dataset-fashion-mnist` package puts the files.
FASHION_MNIST_DIRS = (Path("/usr/share/datasets/fashion-mnist"),)

# File name prefix -> official split ("t10k" is MNIST's name for its test set).
_PREFIX_SPLITS = {"train": "train", "t10k": "test", "test": "test", "val": "val"}
IDX_FILE_NAME = re.compile(r"^(?P<prefix>.+?)-(?P<what>images|labels)[-.]idx(?P<ndim>[13])-ubyte(?P<gz>\.gz)?$")
_UBYTE = 0x08


def read_idx(path: str | Path, ndim: int) -> np.ndarray:
    """An IDX file of unsigned bytes with `ndim` dimensions as a uint8 array; gzip when the name ends in .gz."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"IDX file not found: {str(path)!r}")
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise CorruptImageError(f"IDX file {str(path)!r} cannot be decompressed: {exc}; re-download it") from exc
    header = 4 + 4 * ndim
    if len(data) < header or data[0] != 0 or data[1] != 0 or data[2] != _UBYTE or data[3] != ndim:
        raise CorruptImageError(
            f"IDX file {str(path)!r} does not start with an unsigned-byte {ndim}-D header "
            f"(magic 0x0000{_UBYTE:02x}{ndim:02x}, got {data[:4].hex() or 'nothing'}); check the file name and content"
        )
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = int(np.prod(shape))
    if len(data) - header != expected:
        raise CorruptImageError(
            f"IDX file {str(path)!r} holds {len(data) - header} data bytes but its header {shape} says {expected}; "
            "the file is truncated or corrupt, re-download it"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def load_idx_dir(directory: str | Path, *, class_names: Sequence[str] | None = None) -> LabeledImages:
    """Every `PREFIX-images-idx3-ubyte[.gz]` / `PREFIX-labels-idx1-ubyte[.gz]` pair in a folder.

    Prefixes train / t10k (or test) / val become the official split when there is more than one.
    Without `class_names` the classes are named "0".."K-1", K = largest label + 1.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"IDX folder not found: {str(directory)!r}")
    found: dict[tuple[str, str], Path] = {}
    for path in sorted(directory.iterdir()):
        match = IDX_FILE_NAME.match(path.name)
        if not match:
            continue
        key = (match["prefix"], match["what"])
        if key in found:
            raise ValueError(f"two IDX files for {key[0]} {key[1]}: {found[key].name} and {path.name}; keep one")
        found[key] = path
    prefixes = sorted({prefix for prefix, _ in found})
    if not prefixes:
        raise FileNotFoundError(
            f"no IDX files in {directory}: expected e.g. train-images-idx3-ubyte.gz and train-labels-idx1-ubyte.gz"
        )
    for prefix in prefixes:
        for what in ("images", "labels"):
            if (prefix, what) not in found:
                raise FileNotFoundError(f"{directory} has {prefix} IDX files but no {prefix}-{what} file")
    unknown = [p for p in prefixes if p not in _PREFIX_SPLITS]
    if len(prefixes) > 1 and unknown:
        raise ValueError(
            f"IDX prefixes {', '.join(unknown)} in {directory} name no known split; expected one of "
            f"{', '.join(sorted(_PREFIX_SPLITS))}"
        )
    order = sorted(prefixes, key=lambda p: ("train", "val", "test").index(_PREFIX_SPLITS.get(p, "train")))
    images, labels, ids, splits = [], [], [], []
    for prefix in order:
        image_file, label_file = found[(prefix, "images")], found[(prefix, "labels")]
        part = read_idx(image_file, 3)
        part_labels = read_idx(label_file, 1)
        if len(part) != len(part_labels):
            raise ValueError(
                f"{image_file.name} has {len(part)} images but {label_file.name} has {len(part_labels)} labels"
            )
        images.append(part[..., None])
        labels.append(part_labels.astype(np.int64))
        ids.extend(f"{image_file.name}[{i}]" for i in range(len(part)))
        splits.append(np.full(len(part), _PREFIX_SPLITS.get(prefix, "train")))
    all_labels = np.concatenate(labels)
    if class_names is None:
        class_names = [str(k) for k in range(int(all_labels.max(initial=0)) + 1)]
    return LabeledImages(
        images=np.concatenate(images) if len(images) > 1 else images[0],
        labels=all_labels,
        ids=ids,
        class_names=tuple(class_names),
        kind=TaskKind.MULTI_CLASS,
        official_split=np.concatenate(splits) if len(order) > 1 else None,
        notes={
            "source": f"idx:{directory}",
            "files": [found[(p, w)].name for p in order for w in ("images", "labels")],
        },
    )


def load_fashion_mnist() -> LabeledImages:
    """Real Fashion-MNIST (60,000 train + 10,000 test, 28x28 gray, 10 classes) from Debian's package folder."""
    install = "install it with `apt-get install dataset-fashion-mnist`, or load its IDX files with the source idx:DIR"
    for directory in FASHION_MNIST_DIRS:
        if directory.is_dir():
            try:
                return load_idx_dir(directory, class_names=FASHION_MNIST_CLASSES)
            except FileNotFoundError as exc:  # the folder is there but its files are not (a broken install)
                raise FileNotFoundError(f"Fashion-MNIST is incomplete: {exc}; {install}") from None
    raise FileNotFoundError(
        f"Fashion-MNIST not found in {', '.join(str(d) for d in FASHION_MNIST_DIRS)}; install it with "
        "`apt-get install dataset-fashion-mnist`, or load its IDX files with the source idx:DIR"
    )
