import numpy as np
import pytest

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages


def test_out_of_range_label_names_item_label_and_class_count(make_labeled):
    images = np.zeros((3, 4, 4, 1), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"item\[2\].*label 7.*3 classes"):
        make_labeled(images, np.array([0, 1, 7]), 3)


def test_negative_and_non_integer_labels_are_rejected(make_labeled):
    images = np.zeros((2, 4, 4, 1), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"item\[1\].*label -1"):
        make_labeled(images, np.array([0, -1]), 3)
    with pytest.raises(ValueError, match=r"item\[0\].*not an integer"):
        make_labeled(images, np.array([0.5, 1.0]), 3)


def test_length_mismatch_and_bad_images_are_named():
    with pytest.raises(ValueError, match="2 images but 3 ids"):
        LabeledImages(
            images=np.zeros((2, 4, 4, 1), np.uint8),
            labels=np.array([0, 1, 1]),
            ids=["a", "b", "c"],
            class_names=("x", "y"),
            kind=TaskKind.MULTI_CLASS,
        )
    with pytest.raises(ValueError, match=r"item 'b'.*uint8 \[H, W, C\]"):
        LabeledImages(
            images=[np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), np.uint8)],
            labels=np.array([0, 1]),
            ids=["a", "b"],
            class_names=("x", "y"),
            kind=TaskKind.MULTI_CLASS,
        )


def test_multi_label_targets_must_be_multi_hot(make_labeled):
    images = np.zeros((2, 4, 4, 3), dtype=np.uint8)
    ok = make_labeled(images, np.array([[1, 0, 1], [0, 0, 0]]), 3, kind=TaskKind.MULTI_LABEL)
    assert ok.labels.dtype == np.uint8
    with pytest.raises(ValueError, match=r"item\[1\].*class 2 is 2"):
        make_labeled(images, np.array([[1, 0, 1], [0, 0, 2]]), 3, kind=TaskKind.MULTI_LABEL)


def test_official_split_values_are_checked_and_subset_keeps_them(make_labeled):
    images = np.arange(3 * 4, dtype=np.uint8).reshape(3, 2, 2, 1)
    with pytest.raises(ValueError, match=r"item\[1\].*'dev'"):
        make_labeled(images, np.array([0, 1, 0]), 2, official_split=np.array(["train", "dev", "test"]))
    data = make_labeled(images, np.array([0, 1, 0]), 2, official_split=["train", "test", "test"])
    sub = data.subset([2, 0])
    assert sub.ids == ["item[2]", "item[0]"]
    assert list(sub.official_split) == ["test", "train"]
    assert np.array_equal(sub.images[0], images[2])
