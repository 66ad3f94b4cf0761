import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.dedup import content_hash, deduplicate
from lifelong.data.labeled import LabeledImages


def _images(values):
    """One 3x3x1 image per value: equal values give identical images."""
    return np.stack([np.full((3, 3, 1), v, dtype=np.uint8) for v in values])


def test_duplicates_removed_keeping_first_occurrence(make_labeled):
    data = make_labeled(_images([5, 6, 5, 7, 6, 5]), np.array([0, 1, 0, 2, 1, 0]), 3)
    kept, report = deduplicate(data)
    assert kept.tolist() == [0, 1, 3]
    assert report.duplicates_removed == 3 and report.conflicting_labels == 0
    assert (report.n_input, report.n_kept) == (6, 3)


def test_identical_images_with_different_labels_are_counted_not_merged(make_labeled):
    data = make_labeled(_images([5, 5, 6, 5]), np.array([0, 1, 2, 0]), 3)
    kept, report = deduplicate(data)
    assert kept.tolist() == [0, 2]
    assert report.conflicting_labels == 1 and report.duplicates_removed == 1
    assert report.conflict_examples == [("item[0]", "item[1]")]
    assert report.to_dict()["conflicting_labels"] == 1


def test_same_bytes_in_a_different_shape_are_different_images():
    flat = np.zeros((2, 8, 1), dtype=np.uint8)
    square = np.zeros((4, 4, 1), dtype=np.uint8)
    data = LabeledImages([flat, square], np.array([0, 0]), ["a", "b"], ("x", "y"), TaskKind.MULTI_CLASS)
    assert deduplicate(data)[0].tolist() == [0, 1]
    assert content_hash(flat, 0) != content_hash(square, 0)
    assert content_hash(flat, 0) != content_hash(flat, 1)
    assert content_hash(flat, 0) == content_hash(flat.copy(), 0)


def test_multi_label_rows_compare_whole_vectors(make_labeled):
    labels = np.array([[1, 0], [1, 0], [1, 1]])
    data = make_labeled(_images([1, 1, 1]), labels, 2, kind=TaskKind.MULTI_LABEL)
    kept, report = deduplicate(data)
    assert kept.tolist() == [0]
    assert (report.duplicates_removed, report.conflicting_labels) == (1, 1)


def test_deduplicate_is_deterministic_and_lists_match_arrays(make_labeled):
    rng = np.random.default_rng(0)
    values = rng.integers(0, 20, size=200)
    labels = values % 4
    array_data = make_labeled(_images(values), labels, 4)
    list_data = make_labeled(list(_images(values)), labels, 4)
    first, report = deduplicate(array_data)
    again, report_again = deduplicate(array_data)
    assert np.array_equal(first, again) and report == report_again
    assert np.array_equal(first, deduplicate(list_data)[0])
    assert len(first) == len(np.unique(values))
