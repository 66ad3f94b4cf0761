"""The official splits released with CLEAR, found and read for a ClearFolder (`official_splits`, `official_split`).

The newer CLEAR-10/100 release: the test set apart, in test/labeled_images/<bucket>/<class>/.
The original release (NeurIPS'21 CLEAR-10, CVPR'22 CLEAR-100): per seed and bucket, caffe-style file lists
("<path relative to the release> <class index>" per line) and, for the all.pth features, JSON index lists,
in training_folder/testset_ratio_0.3/split_<seed>/<bucket>/{train,test}.txt and {train,test}_indices.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from lifelong.data.labeled import LabeledImages
from lifelong.data.temporal import LabeledFeatures, OfficialSplits

TEST_FOLDER = "test"
TRAIN_FOLDERS = ("train_image_only", "train")  # the newer release's training sets, beside its test/
SPLIT_FOLDER = "testset_ratio_0.3"
SPLIT_PARTS = ("train", "test")


def difference(expected: Sequence[str], got: Sequence[str]) -> str:
    """The "missing [...], extra [...]" text: how the class names `got` differ from `expected`, for error messages."""
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    return f"missing {missing}, extra {extra}"


class OfficialSplitsMixin:
    """ClearFolder's official splits: the test set in test/ beside the training folder, or the per-seed split files.

    Mixed into ClearFolder, whose attributes (root, base, feature, class_names, labeled_buckets, notes, ...) and
    methods (labeled, _check_labeled, _record_skipped) it uses.
    """

    root: Path
    base: Path
    name: str
    feature: str | None
    class_names: tuple[str, ...]
    labeled_buckets: tuple[int, ...]
    notes: dict[str, Any]
    unlabeled_size: int
    skip_corrupt: bool
    channels: int
    official_splits: OfficialSplits | None
    _feature_files: dict[int, dict[str, Path]]
    _test: Any  # the ClearFolder of test/, when that is the official split

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
                test = type(self)(
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
                    f"{difference(self.class_names, test.class_names)} in the test set",
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
            train, test = (read_indices(f, len(data)) for f in (train_file, test_file))
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
        for at, path, k in read_file_list(file):
            key = PurePosixPath(path).stem if features else bucket_relative(path, bucket, at)
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


def read_file_list(file: Path) -> list[tuple[str, str, int]]:
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


def read_indices(file: Path, n: int) -> np.ndarray:
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


def bucket_relative(path: str, bucket: int, at: str) -> str:
    """'labeled_images/<bucket>/<class>/<file>' (after any prefix) -> '<class>/<file>'."""
    parts = PurePosixPath(path).parts
    for k in range(len(parts) - 2):
        if parts[k] == "labeled_images" and parts[k + 1] == str(bucket):
            return "/".join(parts[k + 2 :])
    raise ValueError(
        f"{at}: {path!r} is not under labeled_images/{bucket}/; expected labeled_images/{bucket}/<class>/<file> "
        "(relative to the release folder)"
    )
