"""ImageNet-CoG's released files: the levels mapping (pkl or our CSV) and the concepts split file, read with an
unpickler that builds data only, with naver/cog's bounds (732-1,300 train, 50 test images per concept)."""

from __future__ import annotations

import csv
import os
import pickle

import numpy as np
import pytest

from lifelong.concepts.level_files import LevelFileError, read_levels_file, read_split_file
from lifelong.core.safe_pickle import UnsafePickleError, load_data_pickle

LEVELS = [["n01440764", "n01443537"], ["n01484850"], ["n01491361", "n01494475", "n01496331"]]


class _RunsCode:
    """Unpickling this would call os.system (it writes a marker file)."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "cog_levels_mapping_file.pkl"
    path.write_bytes(pickle.dumps([["n01440764"], _RunsCode(marker)]))
    with pytest.raises(LevelFileError, match=r"references (posix|os)\.system.*runs code"):
        read_levels_file(path)
    with pytest.raises(UnsafePickleError):
        load_data_pickle(path.read_bytes())
    assert not marker.exists()
    # a class of the standard library is refused too (only data and numpy arrays are built)
    with pytest.raises(UnsafePickleError, match=r"collections\.OrderedDict"):
        load_data_pickle(pickle.dumps(__import__("collections").OrderedDict(a=1)))


@pytest.mark.parametrize("as_arrays", [False, True])
def test_the_authors_levels_pickle_and_our_csv_read_the_same(tmp_path, as_arrays):
    content = [np.array(level) for level in LEVELS] if as_arrays else LEVELS
    pkl = tmp_path / "levels.pkl"
    pkl.write_bytes(pickle.dumps(content, protocol=2))
    table = tmp_path / "levels.csv"
    with open(table, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        for number, level in enumerate(LEVELS, start=1):
            writer.writerows([w, w, 0.5, number] for w in level)
    assert read_levels_file(pkl) == LEVELS == read_levels_file(table)
    no_suffix = tmp_path / "levels_mapping"  # told apart by content, not by name
    no_suffix.write_bytes(pkl.read_bytes())
    assert read_levels_file(no_suffix) == LEVELS


def test_bad_levels_files_name_the_level_and_entry(tmp_path):
    path = tmp_path / "levels.pkl"
    path.write_bytes(pickle.dumps([["n01440764"], ["n0148"]]))
    with pytest.raises(LevelFileError, match=r"level 2.*'n0148' is not a wnid"):
        read_levels_file(path)
    path.write_bytes(pickle.dumps([["n01440764"], ["n01440764"]]))
    with pytest.raises(LevelFileError, match=r"n01440764 is in level 1 and in level 2"):
        read_levels_file(path)
    path.write_bytes(pickle.dumps({"n01440764": 1}))
    with pytest.raises(LevelFileError, match=r"holds a dict; expected a sequence of levels"):
        read_levels_file(path)
    path.write_bytes(b"\x80\x04not a pickle")
    with pytest.raises(LevelFileError, match="not a readable pickle"):
        read_levels_file(path)
    with pytest.raises(FileNotFoundError, match="cog levels"):
        read_levels_file(tmp_path / "nothing.pkl")


def _split(train, test=50, prefix="/"):
    return {
        "train": np.array([f"{prefix}n01440764/n01440764_{i}.JPEG" for i in range(train)]),
        "test": np.array([f"{prefix}n01440764/val_{i}.JPEG" for i in range(test)]),
    }


@pytest.mark.parametrize(
    ("train", "test", "ok"),
    [(732, 50, True), (1300, 50, True), (731, 50, False), (1301, 50, False), (900, 49, False), (900, 51, False)],
)
def test_split_file_bounds(tmp_path, train, test, ok):
    path = tmp_path / "split.pkl"
    path.write_bytes(pickle.dumps({"n01440764": _split(train, test)}))
    if ok:
        images = read_split_file(path)["n01440764"]
        assert len(images.train) == train and len(images.test) == test
        assert all(not p.startswith("/") for p in images.train + images.test)  # the leading "/" is stripped
        assert list(images.train) == sorted(images.train)
    else:
        with pytest.raises(LevelFileError, match=rf"n01440764 has {train} train and {test} test images.*732 to 1300"):
            read_split_file(path)
        assert len(read_split_file(path, check_bounds=False)["n01440764"].train) == train


def test_split_file_must_hold_every_asked_concept_in_the_right_shape(tmp_path):
    path = tmp_path / "split.pkl"
    path.write_bytes(pickle.dumps({"n01440764": _split(800, prefix="")}))
    with pytest.raises(LevelFileError, match="no entry for n01443537"):
        read_split_file(path, ["n01440764", "n01443537"])
    path.write_bytes(pickle.dumps({"n01440764": {"train": np.zeros((2, 2))}}))
    with pytest.raises(LevelFileError, match="not a dict with 'train' and 'test'"):
        read_split_file(path)
    path.write_bytes(pickle.dumps([1, 2]))
    with pytest.raises(LevelFileError, match="holds a list; expected a dict"):
        read_split_file(path)
