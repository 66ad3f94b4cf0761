"""Domain-incremental streams over one image dataset: N experiences, each the whole dataset under its own fixed
transform (a seeded pixel permutation, or a rotation), over the dataset's one label space.

Permuted: every experience is permuted, the first included, as Avalanche's PermutedMNIST does (so the two
libraries' streams match experience for experience); experience k's permutation comes from (seed, k) alone.
Rotated: experience k turns every image by k * max_angle / N degrees counter-clockwise (the first is unrotated:
the original domain, then evenly spaced turns; Avalanche draws its angles at random instead).
The official train / test split of the dataset is each experience's split (`official:test-folder`); the same
transform applies to both. A TemporalSource (lifelong.data.temporal): buckets 0..N-1, all labeled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lifelong.core.seeds import derive_seed
from lifelong.data.labeled import LabeledImages
from lifelong.data.temporal import OfficialSplits

TRANSFORMS = ("permuted", "rotated")


def pixel_permutation(seed: int, experience: int, pixels: int) -> np.ndarray:
    """Experience `experience`'s permutation of `pixels` positions: output pixel i is input pixel perm[i]."""
    return np.random.default_rng(derive_seed(seed, experience, 7)).permutation(pixels)


def rotation_angle(experience: int, experiences: int, max_angle: float) -> float:
    """Degrees (counter-clockwise) of experience `experience`: evenly spaced from 0 in steps of max_angle / N."""
    return float(experience) * float(max_angle) / int(experiences)


def rotate_images(images: np.ndarray, angle: float) -> np.ndarray:
    """uint8 [N, H, W, C] turned `angle` degrees counter-clockwise about the centre (bilinear, zeros outside)."""
    if angle % 360 == 0:
        return images.copy()
    from scipy.ndimage import rotate

    turned = rotate(images.astype(np.float32), angle, axes=(2, 1), reshape=False, order=1, mode="constant", cval=0.0)
    return np.clip(np.rint(turned), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class _Splits:
    train: LabeledImages
    test: LabeledImages


class DomainIncremental:
    """Experiences 0..N-1 of one IDX dataset (train/t10k files in `folder`), each under its own transform.

    `max_items` caps each split of every experience (a seeded subset per experience); None keeps all.
    """

    resolution: int | None = None

    def __init__(
        self,
        folder: str | Path,
        *,
        transform: str,
        dataset: str = "mnist",
        class_names: Sequence[str] | None = None,
        experiences: int = 5,
        seed: int = 0,
        max_items: int | None = None,
        max_angle: float = 180.0,
        domain: str = "ocr",
    ) -> None:
        if transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
        for label, value, low in (("experiences", experiences, 2), ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"{transform}-{dataset}: -s {label} must be an integer >= {low}, got {value!r}")
        if max_items is not None and (isinstance(max_items, bool) or not isinstance(max_items, int) or max_items < 1):
            raise ValueError(f"{transform}-{dataset}: -s max_items must be a whole number >= 1, got {max_items!r}")
        if isinstance(max_angle, bool) or not isinstance(max_angle, int | float):
            raise ValueError(f"{transform}-{dataset}: -s max_angle must be a number of degrees, got {max_angle!r}")
        self.folder = Path(folder)
        self.transform = transform
        self.dataset = dataset
        self.name = f"{transform}-{dataset.replace('_', '-')}"
        self.stream_label = self.name  # runs of the Fashion-MNIST variant are not grouped with MNIST's
        self.domain = domain
        self.experiences = int(experiences)
        self.seed = int(seed)
        self.max_items = max_items
        self.max_angle = float(max_angle)
        self._class_names = tuple(class_names) if class_names is not None else None
        self.num_buckets = self.experiences
        self.labeled_buckets: tuple[int, ...] = tuple(range(self.experiences))
        self.windows: tuple[tuple[str, str], ...] = (("", ""),) * self.experiences
        self.official_splits = OfficialSplits("test-folder", str(self.folder))
        self._data: _Splits | None = None

    def __repr__(self) -> str:
        return (
            f"DomainIncremental({str(self.folder)!r}, transform={self.transform!r}, experiences={self.experiences}, "
            f"seed={self.seed}, max_items={self.max_items})"
        )

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_data": None}  # a pickled stream reloads the files rather than carrying them

    @property
    def class_names(self) -> tuple[str, ...]:
        return self._loaded().train.class_names

    def _loaded(self) -> _Splits:
        if self._data is None:
            from lifelong.data.sources.idx import load_idx_dir

            data = load_idx_dir(self.folder, class_names=self._class_names)
            split = data.official_split
            if split is None or not (split == "train").any() or not (split == "test").any():
                raise FileNotFoundError(
                    f"{self.folder} must hold the train-* and t10k-* IDX files of {self.dataset}; "
                    f"reinstall it with `lifelong data fetch {self.dataset} --from DIR`"
                )
            self._data = _Splits(
                data.subset(np.flatnonzero(split == "train")), data.subset(np.flatnonzero(split == "test"))
            )
        return self._data

    @property
    def spatial(self) -> bool:
        """Whether images keep a spatial layout: not under a pixel permutation (no crop or mirror makes sense)."""
        return self.transform != "permuted"

    def angle(self, bucket: int) -> float:
        """The rotation of experience `bucket` in degrees (0 for a permuted stream)."""
        return rotation_angle(bucket, self.experiences, self.max_angle) if self.transform == "rotated" else 0.0

    def permutation(self, bucket: int) -> np.ndarray | None:
        """The pixel permutation of experience `bucket` (None for a rotated stream)."""
        if self.transform != "permuted":
            return None
        side = self._loaded().train.images.shape[1:3]
        return pixel_permutation(self.seed, bucket, int(np.prod(side)))

    def _check_bucket(self, bucket: int) -> None:
        if not isinstance(bucket, int | np.integer) or not 0 <= bucket < self.experiences:
            raise ValueError(f"{self.name}: experience must be an integer in 0..{self.experiences - 1}, got {bucket!r}")

    def _experience(self, part: LabeledImages, bucket: int, split_key: int) -> LabeledImages:
        if self.max_items is not None and len(part) > self.max_items:
            rng = np.random.default_rng(derive_seed(self.seed, bucket, split_key))
            part = part.subset(np.sort(rng.choice(len(part), self.max_items, replace=False)))
        images = part.images
        if self.transform == "permuted":
            perm = self.permutation(bucket)
            n, h, w, c = images.shape
            images = images.reshape(n, h * w, c)[:, perm].reshape(n, h, w, c)
        else:
            images = rotate_images(images, self.angle(bucket))
        notes = {**part.notes, "experience": int(bucket), "transform": self.transform, "angle": self.angle(bucket)}
        return LabeledImages(
            images=np.ascontiguousarray(images), labels=part.labels, ids=[f"{i}@{bucket}" for i in part.ids],
            class_names=part.class_names, kind=part.kind, notes=notes,
        )  # fmt: skip

    def official_split(self, bucket: int, seed: int) -> tuple[LabeledImages, LabeledImages]:
        """(train, test) of experience `bucket`: the dataset's train and t10k files under its transform."""
        self._check_bucket(bucket)
        data = self._loaded()
        return self._experience(data.train, bucket, 1), self._experience(data.test, bucket, 2)

    def labeled(self, bucket: int) -> LabeledImages:
        """Experience `bucket`'s training images (the streaming protocol trains on and evaluates these)."""
        self._check_bucket(bucket)
        return self._experience(self._loaded().train, bucket, 1)

    def unlabeled(self, bucket: int) -> np.ndarray:
        """Experience `bucket`'s training images without their labels."""
        return self.labeled(bucket).images
