import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lifelong.data.splits import SPLIT_NAMES, split_indices


def _check_partition(splits, n):
    assert set(splits) == set(SPLIT_NAMES)
    together = np.concatenate([splits[name] for name in SPLIT_NAMES])
    assert np.array_equal(np.sort(together), np.arange(n)), "splits must be disjoint and cover every item"
    for idx in splits.values():
        assert np.all(np.diff(idx) > 0)


def test_no_official_split_sizes_are_exact_rounded_shares():
    splits = split_indices(1000)
    assert {k: len(v) for k, v in splits.items()} == {"train": 560, "dev": 120, "dev_test": 120, "test": 200}
    _check_partition(splits, 1000)
    sizes = {k: len(v) for k, v in split_indices(7).items()}
    assert sizes == {"train": 4, "dev": 1, "dev_test": 1, "test": 1}  # boundaries round(7 * .56, .68, .80)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**31))
def test_every_item_in_exactly_one_split_with_sizes_within_one_of_share(n, seed):
    splits = split_indices(n, seed=seed)
    _check_partition(splits, n)
    for name, share in zip(SPLIT_NAMES, (0.56, 0.12, 0.12, 0.20), strict=True):
        assert abs(len(splits[name]) - share * n) <= 1


def test_official_train_test_divides_train_70_15_15_and_keeps_test():
    official = np.array(["train"] * 200 + ["test"] * 50)
    official = official[np.random.default_rng(1).permutation(len(official))]
    splits = split_indices(official)
    _check_partition(splits, len(official))
    assert {k: len(v) for k, v in splits.items()} == {"train": 140, "dev": 30, "dev_test": 30, "test": 50}
    assert (official[splits["test"]] == "test").all()
    assert (official[np.concatenate([splits["train"], splits["dev"], splits["dev_test"]])] == "train").all()


def test_official_train_val_test_uses_val_as_dev_test():
    official = ["train"] * 100 + ["val"] * 30 + ["test"] * 40
    splits = split_indices(official, seed=3)
    _check_partition(splits, 170)
    assert {k: len(v) for k, v in splits.items()} == {"train": 80, "dev": 20, "dev_test": 30, "test": 40}
    assert splits["dev_test"].tolist() == list(range(100, 130))
    assert splits["test"].tolist() == list(range(130, 170))


def test_same_seed_same_splits_and_different_seeds_differ():
    a, b, c = split_indices(500, seed=0), split_indices(500, seed=0), split_indices(500, seed=1)
    assert all(np.array_equal(a[k], b[k]) for k in SPLIT_NAMES)
    assert not np.array_equal(a["train"], c["train"])
    official = np.array(["train"] * 300 + ["test"] * 100)
    assert not np.array_equal(split_indices(official, seed=0)["dev"], split_indices(official, seed=5)["dev"])


def test_unsupported_official_splits_are_rejected_with_the_values():
    with pytest.raises(ValueError, match=r"\['train', 'val'\]"):
        split_indices(["train", "val"])
    with pytest.raises(ValueError, match="item 1: official split 'holdout'"):
        split_indices(["train", "holdout", "test"])
    with pytest.raises(ValueError, match=">= 0"):
        split_indices(-1)
