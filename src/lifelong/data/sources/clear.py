"""Temporal sources read from files: CLEAR's released folders (ClearFolder) and a timestamped CSV (TimestampCsv).

Both are lazy: the constructor lists files and checks the layout, and images are decoded only when a
bucket is asked for. `labeled(b)` gives LabeledImages (ids = file paths, images of any size) or, for
ClearFolder with `feature=`, LabeledFeatures; `unlabeled(b)` gives uint8 [N, s, s, C] centre-cropped
and resized to `unlabeled_size`. ClearFolder also finds the official splits released with CLEAR
(`official_splits`, `official_split(b, seed)`): the original release's per-seed split files, or the newer
release's separate test set.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.images import IMAGE_SUFFIXES, decode_files, is_image_file, resize_all
from lifelong.data.labeled import LabeledImages
from lifelong.data.temporal import (
    CLEAR_EDGES,
    LabeledFeatures,
    OfficialSplits,
    equal_count_buckets,
    iso_date,
    parse_timestamps,
    window_buckets,
)

# Folders that hold CLEAR's labeled_images/ etc. inside a release: the image-only trainset, the full trainset
# (with metadata and features), the test set, and the NeurIPS'21 release's training folder.
RELEASE_FOLDERS = ("train_image_only", "train", "training_folder", "test")
FEATURE_SUFFIX = ".pth"
# Official splits. The newer CLEAR-10/100 release: the test set apart, in test/labeled_images/<bucket>/<class>/.
# The original release (NeurIPS'21 CLEAR-10, CVPR'22 CLEAR-100): per seed and bucket, caffe-style file lists
# ("<path relative to the release> <class index>" per line) and, for the all.pth features, JSON index lists,
# in training_folder/testset_ratio_0.3/split_<seed>/<bucket>/{train,test}.txt and {train,test}_indices.json.
TEST_FOLDER = "test"
TRAIN_FOLDERS = ("train_image_only", "train")  # the newer release's training sets, beside its test/
SPLIT_FOLDER = "testset_ratio_0.3"
SPLIT_PARTS = ("train", "test")


class _FileStream:
    """Shared file handling: decoding labeled buckets and unlabeled pools from lists of files."""

    name: str
    class_names: tuple[str, ...]
    num_buckets: int
    labeled_buckets: tuple[int, ...]
    windows: tuple[tuple[str, str], ...]
    resolution: int | None = None
    domain: str = "object"
    official_splits: OfficialSplits | None = None  # none released with a CSV

    def __init__(self, unlabeled_size: int, skip_corrupt: bool, channels: int) -> None:
        if not isinstance(unlabeled_size, int | np.integer) or unlabeled_size < 1:
            raise ValueError(f"unlabeled_size must be an integer >= 1, got {unlabeled_size!r}")
        if channels not in (1, 3):
            raise ValueError(f"channels must be 1 or 3, got {channels!r}")
        self.unlabeled_size = int(unlabeled_size)
        self.skip_corrupt = bool(skip_corrupt)
        self.channels = channels
        self.notes: dict[str, Any] = {"corrupt_skipped": 0, "corrupt_files": []}
        self._labeled_files: dict[int, list[tuple[Path, int]]] = {}
        self._unlabeled_files: dict[int, list[Path]] = {}

    def _check_bucket(self, bucket: int) -> None:
        if not isinstance(bucket, int | np.integer) or not 0 <= bucket < self.num_buckets:
            raise ValueError(f"{self.name}: bucket must be an integer in 0..{self.num_buckets - 1}, got {bucket!r}")

    def _check_labeled(self, bucket: int) -> None:
        self._check_bucket(bucket)
        if bucket not in self.labeled_buckets:
            raise ValueError(
                f"{self.name}: bucket {bucket} has no labeled data; labeled buckets are {list(self.labeled_buckets)}"
            )

    def _record_skipped(self, skipped: list[str]) -> None:
        new = [s for s in skipped if s not in self.notes["corrupt_files"]]
        self.notes["corrupt_files"].extend(new)
        self.notes["corrupt_skipped"] = len(self.notes["corrupt_files"])

    def _labeled_images(self, bucket: int) -> LabeledImages:
        files = self._labeled_files.get(bucket, [])
        decoded, kept, skipped = decode_files([f for f, _ in files], skip_corrupt=self.skip_corrupt)
        self._record_skipped(skipped)
        return LabeledImages(
            images=decoded,
            labels=np.asarray([files[i][1] for i in kept], dtype=np.int64),
            ids=[str(files[i][0]) for i in kept],
            class_names=self.class_names,
            kind=TaskKind.MULTI_CLASS,
            notes={
                "source": self.name,
                "bucket": int(bucket),
                "corrupt_skipped": len(skipped),
                "corrupt_files": skipped,
            },
        )

    def unlabeled(self, bucket: int) -> np.ndarray:
        """uint8 [N, unlabeled_size, unlabeled_size, channels] of bucket `bucket`'s unlabeled files (N may be 0)."""
        self._check_bucket(bucket)
        files = self._unlabeled_files.get(bucket, [])
        decoded, _, skipped = decode_files(files, skip_corrupt=self.skip_corrupt)
        self._record_skipped(skipped)
        return resize_all(decoded, self.unlabeled_size, self.channels)


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


def _difference(expected: Sequence[str], got: Sequence[str]) -> str:
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    return f"missing {missing}, extra {extra}"


class ClearFolder(_FileStream):
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
                f"{_difference(self.class_names, listed)} in class_names.txt; fix or remove class_names.txt"
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
                    f"{_difference(classes, names)}; every bucket must hold the same class folders"
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
                    f"{_difference(classes, names)}; every bucket needs one <class>.pth per class"
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
            feats, targets, names = _read_all_pth(files["all"])
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
                feats, names = _read_class_pth(files[name])
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

    def _find_official_splits(self) -> OfficialSplits | None:
        """The test set in test/ beside the training folder, else the per-seed split files, else None."""
        return self._find_test_set() or self._find_split_files()

    def _find_test_set(self) -> OfficialSplits | None:
        """test/ beside the training folder, read as a ClearFolder of its own (same classes, every labeled bucket)."""
        base = self.base.resolve()
        folders = [self.root / TEST_FOLDER]
        if self.base.name in TRAIN_FOLDERS:  # pointed at the training folder itself: its sibling
            folders.append(self.base.parent / TEST_FOLDER)
        for folder in dict.fromkeys(folders):
            if not folder.is_dir() or folder.resolve() == base:  # the folder read as training data is no test set
                continue
            where = str(folder)
            try:
                test = ClearFolder(
                    folder,
                    feature=self.feature,
                    unlabeled_size=self.unlabeled_size,
                    skip_corrupt=self.skip_corrupt,
                    channels=self.channels,
                    official=False,
                )
            except (FileNotFoundError, ValueError) as exc:
                return OfficialSplits("test-folder", where, problem=f"the test set {where!r} cannot be read: {exc}")
            if test.class_names != self.class_names:
                return OfficialSplits(
                    "test-folder",
                    where,
                    problem=f"the test set {where!r} and the training set {str(self.base)!r} have different classes: "
                    f"{_difference(self.class_names, test.class_names)} in the test set",
                )
            missing = sorted(set(self.labeled_buckets) - set(test.labeled_buckets))
            if missing:
                return OfficialSplits(
                    "test-folder",
                    where,
                    problem=f"the test set {where!r} has no labeled bucket {missing}; the training set "
                    f"{str(self.base)!r} has buckets {list(self.labeled_buckets)}",
                )
            self._test = test
            return OfficialSplits("test-folder", where)
        return None

    def _find_split_files(self) -> OfficialSplits | None:
        """training_folder/testset_ratio_0.3/ of the original release, its split_<seed>/<bucket>/ files checked."""
        for folder in dict.fromkeys((self.base / "training_folder", self.root / "training_folder", self.base)):
            if (folder / SPLIT_FOLDER).is_dir():
                return self._check_split_files(folder / SPLIT_FOLDER)
        return None

    def _check_split_files(self, folder: Path) -> OfficialSplits:
        """The seeds of split_<seed>/ in `folder`; a problem when a folder is not one or a bucket's file is missing."""
        where = str(folder)
        seeds = []
        for sub in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
            match = re.fullmatch(r"split_(\d+)", sub.name)
            if match is None or not sub.is_dir():
                return OfficialSplits(
                    "seeded",
                    where,
                    problem=f"{str(sub)!r} is not a split folder: {where!r} must hold only folders split_0, "
                    "split_1, ... (one per seed, each with <bucket>/train.txt and <bucket>/test.txt)",
                )
            seeds.append(int(match[1]))
        if not seeds:
            return OfficialSplits("seeded", where, problem=f"{where!r} holds no split_<seed> folder")
        seeds.sort()
        for seed in seeds:
            for bucket in self.labeled_buckets:
                for file in self._split_files(folder / f"split_{seed}" / str(bucket), bucket):
                    if not file.is_file():
                        return OfficialSplits(
                            "seeded",
                            where,
                            tuple(seeds),
                            problem=f"official split file {str(file)!r} is missing: every split_<seed>/<bucket>/ of "
                            f"{where!r} needs {[f.name for f in self._split_files(file.parent, bucket)]}",
                        )
        return OfficialSplits("seeded", where, tuple(seeds))

    def _split_files(self, folder: Path, bucket: int) -> list[Path]:
        """The files a bucket's split needs: index lists for features from one all.pth, file lists otherwise."""
        if self.feature is not None and set(self._feature_files.get(bucket, {})) == {"all"}:
            return [folder / f"{part}_indices.json" for part in SPLIT_PARTS]
        return [folder / f"{part}.txt" for part in SPLIT_PARTS]

    def official_split(
        self, bucket: int, seed: int
    ) -> tuple[LabeledImages | LabeledFeatures, LabeledImages | LabeledFeatures]:
        """(train, test) data of labeled bucket `bucket` under the official split for `seed` (see official_splits)."""
        self._check_labeled(bucket)
        splits = self.official_splits
        if splits is None:
            raise ValueError(
                f"{self.name}: no official split here (no {TEST_FOLDER}/ beside the training folder, no "
                f"training_folder/{SPLIT_FOLDER}/); split the buckets yourself"
            )
        if splits.problem:
            raise ValueError(splits.problem)
        data = self.labeled(bucket)
        if splits.kind == "test-folder":
            assert self._test is not None  # set together with official_splits
            test = self._test.labeled(bucket)
            self._record_skipped(test.notes.get("corrupt_files", []))
            return data, test
        if seed not in splits.seeds:
            raise ValueError(
                f"{self.name}: no official split for seed {seed}; {splits.where!r} has seeds {list(splits.seeds)}"
            )
        folder = Path(splits.where) / f"split_{seed}" / str(bucket)
        train_file, test_file = self._split_files(folder, bucket)
        if isinstance(data, LabeledFeatures) and train_file.suffix == ".json":
            train, test = (_read_indices(f, len(data)) for f in (train_file, test_file))
        else:
            train, test = (self._listed_indices(f, data, bucket) for f in (train_file, test_file))
        both = np.intersect1d(train, test)
        if len(both):
            raise ValueError(
                f"{str(folder)!r}: item {data.ids[int(both[0])]!r} is in both the train and the test split"
            )
        return data.subset(train), data.subset(test)

    def _listed_indices(self, file: Path, data: LabeledImages | LabeledFeatures, bucket: int) -> np.ndarray:
        """Indices into `data` of the items a caffe-style file list names ("<path> <class index>" per line).

        Images match by their path under labeled_images/<bucket>/, features by id (the image file's stem). The
        class index must name the item's class (class_names.txt order, else sorted). Files skipped as corrupt drop out.
        """
        features = isinstance(data, LabeledFeatures)
        skipped: set[str] = set()
        if features:
            index = {item: i for i, item in enumerate(data.ids)}
        else:
            bucket_root = self.base / "labeled_images" / str(bucket)
            index = {Path(item).relative_to(bucket_root).as_posix(): i for i, item in enumerate(data.ids)}
            skipped = {Path(f).relative_to(bucket_root).as_posix() for f in data.notes.get("corrupt_files", [])}
        names = self.notes["class_names_txt"] or list(self.class_names)
        order = "class_names.txt" if self.notes["class_names_txt"] else "the sorted class names"
        chosen: dict[int, None] = {}
        for at, path, k in _read_file_list(file):
            key = PurePosixPath(path).stem if features else _bucket_relative(path, bucket, at)
            if key in skipped:
                continue
            if key not in index:
                hint = (
                    f" (feature ids are the keys of the dicts in features/{self.feature}/<bucket>/<class>.pth; "
                    "features saved as one [N, D] tensor have none: pass -s split=ours)"
                )
                raise ValueError(
                    f"{at}: {path!r} is not in bucket {bucket} of {str(self.base)!r}" + (hint if features else "")
                )
            i = index[key]
            actual = data.class_names[int(data.labels[i])]
            if not 0 <= k < len(names) or names[k] != actual:
                raise ValueError(
                    f"{at}: class index {k} ({names[k] if 0 <= k < len(names) else 'no such class'}) but {path!r} "
                    f"is of class {actual!r}; class indices follow {order}: {names}"
                )
            if i in chosen:
                raise ValueError(f"{at}: {path!r} is listed twice")
            chosen[i] = None
        return np.asarray(list(chosen), dtype=np.int64)


def _read_file_list(file: Path) -> list[tuple[str, str, int]]:
    """(file:line, path, class index) for each non-blank "<path> <class index>" line of a caffe-style file list."""
    rows = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        match = re.fullmatch(r"(.*\S)\s+(\d+)", line.strip())
        if match is None:
            raise ValueError(f"{file}:{number}: expected '<image path> <class index>', got {line.strip()!r}")
        rows.append((f"{file}:{number}", match[1].replace("\\", "/"), int(match[2])))
    return rows


def _read_indices(file: Path, n: int) -> np.ndarray:
    """A JSON list of distinct item indices in 0..n-1 (the order of the bucket's all.pth)."""
    try:
        value = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read split indices {str(file)!r}: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{str(file)!r} must hold a JSON list of integer indices")
    indices = np.asarray(value, dtype=np.int64)
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        raise ValueError(
            f"{str(file)!r}: index {int(indices[bad][0])} is outside 0..{n - 1} (the bucket has {n} items)"
        )
    if len(np.unique(indices)) != len(indices):
        raise ValueError(f"{str(file)!r} lists an index twice")
    return indices


def _bucket_relative(path: str, bucket: int, at: str) -> str:
    """'labeled_images/<bucket>/<class>/<file>' (after any prefix) -> '<class>/<file>'."""
    parts = PurePosixPath(path).parts
    for k in range(len(parts) - 2):
        if parts[k] == "labeled_images" and parts[k + 1] == str(bucket):
            return "/".join(parts[k + 2 :])
    raise ValueError(
        f"{at}: {path!r} is not under labeled_images/{bucket}/; expected labeled_images/{bucket}/<class>/<file> "
        "(relative to the release folder)"
    )


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


def _read_class_pth(path: Path) -> tuple[np.ndarray, list[str]]:
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


def _read_all_pth(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(float32 [N, D], int targets [N], ids) from an all.pth holding (features, targets), as the 2021 release."""
    value = _torch_load(path)
    if not (isinstance(value, list | tuple) and len(value) == 2):
        raise ValueError(f"{str(path)!r}: expected a pair (features, targets), got {type(value).__name__}")
    features = _as_matrix(value[0], path)
    targets = np.asarray([int(t) for t in value[1]], dtype=np.int64)
    if len(targets) != len(features):
        raise ValueError(f"{str(path)!r}: {len(features)} feature rows but {len(targets)} targets")
    return features, targets, [f"{path}[{i}]" for i in range(len(features))]


# ---------------------------------------------------------------------------------------------------------
# a CSV of path, label, timestamp


class TimestampCsv(_FileStream):
    """A stream from a CSV with columns path,label,timestamp: rows sorted by time and cut into buckets.

    Paths are relative to the CSV's folder; an empty label marks an unlabeled image. Buckets are equal
    counts of all rows (`num_buckets`, default 11) or time windows (`edges`, N + 1 ascending dates for N
    buckets; rows outside are dropped and counted in notes). Bucket 0 is pretraining only: its labeled
    rows join its unlabeled pool. Classes are `class_names` or the sorted label names seen.
    """

    def __init__(
        self,
        csv_path: str | Path,
        *,
        num_buckets: int | None = None,
        edges: Sequence[Any] | None = None,
        class_names: Sequence[str] | None = None,
        unlabeled_size: int = 32,
        skip_corrupt: bool = False,
        channels: int = 3,
        domain: str = "object",
    ) -> None:
        super().__init__(unlabeled_size, skip_corrupt, channels)
        self.path = Path(csv_path)
        self.name = f"csv:{self.path}"
        self.domain = domain
        if num_buckets is not None and edges is not None:
            raise ValueError("give num_buckets (equal-count buckets) or edges (time windows), not both")
        rows = self._read_rows()
        where = [at for at, _ in rows]
        files = [self._resolve(row["path"], at) for at, row in rows]
        times = parse_timestamps([row["timestamp"] for _, row in rows], rows=where)
        names = [row.get("label", "") for _, row in rows]
        seen = sorted({n for n in names if n})
        self.class_names = tuple(str(c) for c in class_names) if class_names is not None else tuple(seen)
        if not self.class_names:
            raise ValueError(f"{str(self.path)!r} has no labeled row; give class_names or label some rows")
        index = {c: k for k, c in enumerate(self.class_names)}
        for (at, _), label in zip(rows, names, strict=True):
            if label and label not in index:
                raise ValueError(
                    f"{at}: label {label!r} is not one of the {len(self.class_names)} class_names "
                    f"{list(self.class_names)}"
                )
        if edges is not None:
            bucket = window_buckets(times, edges)
            self.num_buckets = len(edges) - 1
        else:
            self.num_buckets = 11 if num_buckets is None else int(num_buckets)
            bucket = equal_count_buckets(times, self.num_buckets)
        dropped = [where[i] for i in np.flatnonzero(bucket < 0)]
        self.notes.update({"rows": len(rows), "outside_edges": len(dropped), "outside_edges_rows": dropped[:20]})
        windows = []
        for b in range(self.num_buckets):
            members = times[bucket == b]
            windows.append((iso_date(members.min()), iso_date(members.max())) if len(members) else ("", ""))
            for i in np.flatnonzero(bucket == b):
                if names[i] and b > 0:
                    self._labeled_files.setdefault(b, []).append((files[i], index[names[i]]))
                else:
                    self._unlabeled_files.setdefault(b, []).append(files[i])
        self.windows = tuple(windows)
        self.labeled_buckets = tuple(sorted(self._labeled_files))
        if not self.labeled_buckets:
            raise ValueError(
                f"{str(self.path)!r}: no labeled row falls in buckets 1..{self.num_buckets - 1} "
                "(bucket 0 is pretraining only, its labels are dropped)"
            )
        self.notes["labeled_per_bucket"] = {b: len(v) for b, v in self._labeled_files.items()}

    def __repr__(self) -> str:
        return f"TimestampCsv({str(self.path)!r}, buckets={self.num_buckets})"

    def _read_rows(self) -> list[tuple[str, dict[str, str]]]:
        if not self.path.is_file():
            raise FileNotFoundError(f"timestamp CSV not found: {str(self.path)!r}")
        with self.path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            columns = [c.strip() for c in reader.fieldnames or []]
            missing = [c for c in ("path", "label", "timestamp") if c not in columns]
            if missing:
                raise ValueError(
                    f"timestamp CSV {str(self.path)!r} lacks column(s) {missing} (columns: {columns}); "
                    "the header must be path,label,timestamp"
                )
            rows = [
                (f"{self.path}:{reader.line_num}", {k.strip(): (v or "").strip() for k, v in row.items() if k})
                for row in reader
            ]
        if not rows:
            raise ValueError(f"timestamp CSV {str(self.path)!r} has no rows")
        return rows

    def _resolve(self, name: str, at: str) -> Path:
        if not name:
            raise ValueError(f"{at}: empty path; every row needs an image path")
        file = Path(name) if Path(name).is_absolute() else self.path.parent / name
        if not file.is_file():
            raise FileNotFoundError(f"{at}: image file not found: {str(file)!r}")
        return file

    def labeled(self, bucket: int) -> LabeledImages:
        """Bucket `bucket`'s labeled images (ids = file paths), of any sizes."""
        self._check_labeled(bucket)
        return self._labeled_images(bucket)
