"""CLEAR's released layout (ClearFolder), and the timestamped CSV (TimestampCsv) re-exported from its own module.

Both are lazy: the constructor lists files and checks the layout, and images are decoded only when a
bucket is asked for. `labeled(b)` gives LabeledImages (ids = file paths, images of any size) or, for
ClearFolder with `feature=`, LabeledFeatures; `unlabeled(b)` gives uint8 [N, s, s, C] centre-cropped
and resized to `unlabeled_size`. ClearFolder also finds the official splits released with CLEAR
(`official_splits`, `official_split(b, seed)`): the original release's per-seed split files, or the newer
release's separate test set. The feature files are read in clear_features, the official splits in
clear_splits, the shared file handling is file_stream's FileStream.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lifelong.data.images import IMAGE_SUFFIXES, is_image_file
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources import clear_features, clear_splits
from lifelong.data.sources.clear_features import FEATURE_SUFFIX as FEATURE_SUFFIX
from lifelong.data.sources.clear_features import read_all_pth, read_class_pth
from lifelong.data.sources.clear_splits import SPLIT_FOLDER as SPLIT_FOLDER
from lifelong.data.sources.clear_splits import SPLIT_PARTS as SPLIT_PARTS
from lifelong.data.sources.clear_splits import TEST_FOLDER as TEST_FOLDER
from lifelong.data.sources.clear_splits import TRAIN_FOLDERS as TRAIN_FOLDERS
from lifelong.data.sources.clear_splits import OfficialSplitsMixin, difference
from lifelong.data.sources.file_stream import FileStream
from lifelong.data.sources.timestamp_csv import TimestampCsv as TimestampCsv
from lifelong.data.temporal import CLEAR_EDGES, LabeledFeatures
from lifelong.data.temporal import OfficialSplits as OfficialSplits

# The helpers that moved to file_stream, clear_features and clear_splits, still importable from here by their old names.
_FileStream = FileStream
_difference = difference
_read_class_pth, _read_all_pth = read_class_pth, read_all_pth
_torch_load, _as_matrix, _tensor = clear_features._torch_load, clear_features._as_matrix, clear_features._tensor
_read_file_list, _read_indices = clear_splits.read_file_list, clear_splits.read_indices
_bucket_relative = clear_splits.bucket_relative

# Folders that hold CLEAR's labeled_images/ etc. inside a release: the image-only trainset, the full trainset
# (with metadata and features), the test set, and the NeurIPS'21 release's training folder.
RELEASE_FOLDERS = ("train_image_only", "train", "training_folder", "test")


# ---------------------------------------------------------------------------------------------------------
# CLEAR's released layout


def _int_folders(folder: Path, what: str) -> dict[int, Path]:
    """Bucket number -> folder for the integer-named sub-folders of `folder`; other folders are an error."""
    found: dict[int, Path] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not sub.name.isdigit():
            raise ValueError(
                f"{what} folder {str(sub)!r} is not a bucket number; {str(folder)!r} must hold only folders "
                "named 0, 1, 2, ... (one per time bucket)"
            )
        found[int(sub.name)] = sub
    return found


def _image_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and is_image_file(p))


def _class_dirs(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")}


class ClearFolder(OfficialSplitsMixin, FileStream):
    """CLEAR as released: labeled_images/<bucket>/<class>/<id>.jpg, unlabeled_images/<bucket>/**, and
    features/<name>/<bucket>/<class>.pth; `root` may be that folder or a release holding it
    (train_image_only/, train/, training_folder/ or test/).

    Classes are the class folder names, sorted (identical in every labeled bucket; class_names.txt, when
    present, must name the same set). Bucket 0 is never labeled: its labeled images, if any, join its
    unlabeled pool. With `feature=NAME`, `labeled(b)` loads pre-extracted features instead of images.

    With `official=True`, `official_splits` describes the splits released beside the folder: a test set in
    test/ next to the training folder (then `labeled(b)` is the training set), else the per-seed split files
    in training_folder/testset_ratio_0.3/split_<seed>/; None when neither exists. Their files are checked
    to exist here and read by `official_split(b, seed)`; what makes them unusable is in `problem`.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        feature: str | None = None,
        unlabeled_size: int = 32,
        skip_corrupt: bool = False,
        channels: int = 3,
        official: bool = True,
    ) -> None:
        super().__init__(unlabeled_size, skip_corrupt, channels)
        self.root = Path(root)
        self.feature = feature
        self.base = self._find_base(self.root, feature)
        self.name = f"clear:{self.base}" + (f"[{feature}]" if feature else "")
        labeled_root = self.base / "labeled_images"
        buckets = _int_folders(labeled_root, "labeled_images") if labeled_root.is_dir() else {}
        self._feature_files: dict[int, dict[str, Path]] = {}
        classes = self._scan_labeled(buckets) if buckets else None
        if feature is not None:
            classes = self._scan_features(feature, classes)
        self.class_names = classes
        listed = self._class_names_txt()
        if listed is not None and sorted(listed) != list(self.class_names):
            raise ValueError(
                f"{str(self.base / 'class_names.txt')!r} and the class folders disagree: "
                f"{difference(self.class_names, listed)} in class_names.txt; fix or remove class_names.txt"
            )
        self.notes["class_names_txt"] = listed
        unlabeled_root = self.base / "unlabeled_images"
        if unlabeled_root.is_dir():
            for bucket, folder in _int_folders(unlabeled_root, "unlabeled_images").items():
                self._unlabeled_files.setdefault(bucket, []).extend(_image_files(folder))
        have = list(self._labeled_files if feature is None else self._feature_files) + list(self._unlabeled_files)
        self.num_buckets = max(have) + 1 if have else 0
        source = self._feature_files if feature is not None else self._labeled_files
        self.labeled_buckets = tuple(sorted(b for b in source if b > 0))
        if not self.labeled_buckets:
            raise ValueError(
                f"{str(self.base)!r} has no labeled bucket (1, 2, ...): expected labeled_images/<bucket>/<class>/ "
                + (f"or features/{feature}/<bucket>/<class>.pth" if feature else "image files")
            )
        clear_like = self.num_buckets == len(CLEAR_EDGES) - 1
        self.windows = tuple(
            (CLEAR_EDGES[b], CLEAR_EDGES[b + 1]) if clear_like else ("", "") for b in range(self.num_buckets)
        )
        self._test: ClearFolder | None = None
        self.official_splits = self._find_official_splits() if official else None

    def __repr__(self) -> str:
        return f"ClearFolder({str(self.root)!r}, feature={self.feature!r}, buckets={self.num_buckets})"

    @staticmethod
    def _find_base(root: Path, feature: str | None) -> Path:
        if not root.is_dir():
            raise FileNotFoundError(f"CLEAR folder not found: {str(root)!r}")
        marker = ("features",) if feature else ("labeled_images",)
        for base in (root, *(root / name for name in RELEASE_FOLDERS)):
            if any((base / m).is_dir() for m in marker):
                return base
        raise FileNotFoundError(
            f"{str(root)!r} does not look like a CLEAR release: no {marker[0]}/ in it or in its "
            f"{'/, '.join(RELEASE_FOLDERS)}/ folders; expected labeled_images/<bucket>/<class>/<id>.jpg"
            + (f" and features/{feature}/<bucket>/<class>.pth" if feature else "")
        )

    def _scan_labeled(self, buckets: dict[int, Path]) -> tuple[str, ...]:
        classes: tuple[str, ...] | None = None
        first = None
        for bucket, folder in buckets.items():
            dirs = _class_dirs(folder)
            if bucket == 0:  # bucket 0 is pretraining only: labels dropped
                self._unlabeled_files.setdefault(0, []).extend(f for d in dirs.values() for f in _image_files(d))
                continue
            names = tuple(sorted(dirs))
            if not names:
                raise ValueError(f"labeled bucket folder {str(folder)!r} has no class sub-folders")
            if classes is None:
                classes, first = names, bucket
            elif names != classes:
                raise ValueError(
                    f"CLEAR bucket {bucket} has different classes from bucket {first}: "
                    f"{difference(classes, names)}; every bucket must hold the same class folders"
                )
            files = []
            for k, name in enumerate(names):
                images = _image_files(dirs[name])
                if not images:
                    raise ValueError(f"class folder {str(dirs[name])!r} holds no image files ({IMAGE_SUFFIXES})")
                files.extend((f, k) for f in images)
            self._labeled_files[bucket] = files
        if classes is None:
            raise ValueError(f"{str(self.base / 'labeled_images')!r} has no labeled bucket (1, 2, ...)")
        return classes

    def _class_names_txt(self) -> list[str] | None:
        for folder in (self.base, self.root):
            file = folder / "class_names.txt"
            if file.is_file():
                return [line.strip() for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
        return None

    def _scan_features(self, feature: str, classes: tuple[str, ...] | None) -> tuple[str, ...]:
        folder = self.base / "features" / feature
        if not folder.is_dir():
            have = sorted(p.name for p in (self.base / "features").iterdir() if p.is_dir())
            raise FileNotFoundError(f"no features named {feature!r} in {str(self.base / 'features')!r}; have {have}")
        first = None
        for bucket, sub in _int_folders(folder, f"features/{feature}").items():
            files = {p.stem: p for p in sorted(sub.glob(f"*{FEATURE_SUFFIX}"))}
            if not files or bucket == 0:
                continue
            if set(files) == {"all"}:  # one file of (features, targets) for the whole bucket
                self._feature_files[bucket] = files
                continue
            names = tuple(sorted(files))
            if classes is None:
                classes, first = names, bucket
            elif names != classes:
                where = f"bucket {first}" if first is not None else "the class folders of labeled_images"
                raise ValueError(
                    f"features/{feature}/{bucket} has different classes from {where}: "
                    f"{difference(classes, names)}; every bucket needs one <class>.pth per class"
                )
            self._feature_files[bucket] = files
        if classes is None:
            listed = self._class_names_txt()
            if listed is None:
                raise ValueError(
                    f"cannot tell the classes of {str(folder)!r}: its buckets hold only all.pth files; add "
                    "class_names.txt (one class per line, in the order of the targets) or labeled_images/"
                )
            classes = tuple(sorted(listed))
        return classes

    def labeled(self, bucket: int) -> LabeledImages | LabeledFeatures:
        """Bucket `bucket`'s labeled images (ids = file paths), or its features when `feature` was given."""
        self._check_labeled(bucket)
        if self.feature is None:
            return self._labeled_images(bucket)
        return self._labeled_features(bucket)

    def _labeled_features(self, bucket: int) -> LabeledFeatures:
        files = self._feature_files[bucket]
        parts: list[np.ndarray] = []
        labels: list[np.ndarray] = []
        ids: list[str] = []
        if set(files) == {"all"}:
            feats, targets, names = read_all_pth(files["all"])
            order = self.notes["class_names_txt"] or list(self.class_names)  # read once, at construction
            remap = np.asarray([self.class_names.index(name) for name in order], dtype=np.int64)
            bad = (targets < 0) | (targets >= len(order))
            if bad.any():
                raise ValueError(
                    f"{str(files['all'])!r}: target {int(targets[bad][0])} is outside 0..{len(order) - 1} "
                    f"({len(order)} classes)"
                )
            parts, labels, ids = [feats], [remap[targets]], names
        else:
            for k, name in enumerate(self.class_names):
                feats, names = read_class_pth(files[name])
                parts.append(feats)
                labels.append(np.full(len(feats), k, dtype=np.int64))
                ids.extend(names)
        dims = {p.shape[1] for p in parts if len(p)}
        if len(dims) > 1:
            raise ValueError(f"features of bucket {bucket} have different dimensions {sorted(dims)} across classes")
        dim = dims.pop() if dims else 0
        features = np.concatenate([p.reshape(-1, dim) for p in parts]) if parts else np.zeros((0, 0), np.float32)
        return LabeledFeatures(
            features=features,
            labels=np.concatenate(labels) if labels else np.zeros(0, np.int64),
            ids=ids,
            class_names=self.class_names,
            notes={"source": self.name, "bucket": int(bucket), "feature": self.feature},
        )

    # official splits
