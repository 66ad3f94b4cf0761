"""Every split rule of docs/protocols/nevis.md#splits: sizes, disjointness, determinism; COIL-100 and DomainNet
groups."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.build import build_task_splits
from lifelong.data.sources import load_source
from lifelong.data.splits import SPLIT_NAMES, SPLIT_RULES, parse_group, split_indices
from lifelong.suites.spec import TaskSpec, build_stream


def _sizes(splits: dict[str, np.ndarray]) -> dict[str, int]:
    return {name: len(idx) for name, idx in splits.items()}


def _check_partition(splits: dict[str, np.ndarray], n: int) -> None:
    assert list(splits) == list(SPLIT_NAMES)
    together = np.concatenate([splits[name] for name in SPLIT_NAMES])
    assert np.array_equal(np.sort(together), np.arange(n)), "splits must be disjoint and cover every item"


def _official(counts: dict[str, int], seed: int = 0) -> np.ndarray:
    labels = np.concatenate([np.full(k, name) for name, k in counts.items()])
    return labels[np.random.default_rng(seed).permutation(len(labels))]


@pytest.mark.parametrize(
    ("rule", "counts", "expected"),
    [
        ("random", {"train": 80, "test": 20}, {"train": 56, "dev": 12, "dev_test": 12, "test": 20}),
        ("train_test", {"train": 200, "test": 50}, {"train": 140, "dev": 30, "dev_test": 30, "test": 50}),
        ("train_test", {"train": 150, "val": 50, "test": 40}, {"train": 140, "dev": 30, "dev_test": 30, "test": 40}),
        ("train_test", {"train": 200, "val": 30}, {"train": 140, "dev": 30, "dev_test": 30, "test": 30}),
        ("train_val_test", {"train": 100, "val": 30, "test": 40}, {"train": 80, "dev": 20, "dev_test": 30, "test": 40}),
        ("train_val", {"train": 100, "val": 60}, {"train": 80, "dev": 20, "dev_test": 30, "test": 30}),
        ("imagenet", {"train": 400, "val": 50}, {"train": 360, "dev": 20, "dev_test": 20, "test": 50}),
        ("imagenet", {"train": 400, "test": 50}, {"train": 360, "dev": 20, "dev_test": 20, "test": 50}),
        ("auto", {"train": 200, "test": 50}, {"train": 140, "dev": 30, "dev_test": 30, "test": 50}),
    ],
)
def test_official_split_rules_sizes_disjointness_and_determinism(rule, counts, expected):
    official = _official(counts)
    splits = split_indices(official, seed=4, rule=rule)
    _check_partition(splits, len(official))
    assert _sizes(splits) == expected
    again = split_indices(official, seed=4, rule=rule)
    assert all(np.array_equal(splits[k], again[k]) for k in SPLIT_NAMES)
    other = split_indices(official, seed=5, rule=rule)
    assert not np.array_equal(splits["train"], other["train"]), "a different seed divides the pool differently"


def test_held_out_official_splits_land_where_the_rule_says():
    official = _official({"train": 100, "val": 30, "test": 40})
    tvt = split_indices(official, rule="train_val_test")
    assert (official[tvt["dev_test"]] == "val").all() and (official[tvt["test"]] == "test").all()
    assert (official[np.concatenate([tvt["train"], tvt["dev"]])] == "train").all()
    merged = split_indices(official, rule="train_test")  # val joins the train pool when a test exists
    assert (official[merged["test"]] == "test").all()
    assert set(official[np.concatenate([merged["train"], merged["dev"], merged["dev_test"]])]) == {"train", "val"}
    imagenet = split_indices(_official({"train": 40, "val": 10}), rule="imagenet")
    assert len(imagenet["test"]) == 10
    halves = split_indices(_official({"train": 10, "val": 7}), rule="train_val")
    assert _sizes(halves) == {"train": 8, "dev": 2, "dev_test": 4, "test": 3}


def test_random_rule_ignores_an_official_split_and_matches_the_count_form():
    official = _official({"train": 70, "test": 30})
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            split_indices(official, seed=2, rule="random").values(), split_indices(100, seed=2).values(), strict=True
        )
    )


def test_rules_that_need_an_official_split_say_so():
    with pytest.raises(ValueError, match="needs each item's official split.*rule 'random'"):
        split_indices(50, rule="train_test")
    with pytest.raises(ValueError, match=r"needs official splits \['test', 'train', 'val'\].*\['test', 'train'\]"):
        split_indices(_official({"train": 10, "test": 5}), rule="train_val_test")
    with pytest.raises(ValueError, match="exactly one of val/test"):
        split_indices(_official({"train": 10, "val": 5, "test": 5}), rule="imagenet")
    with pytest.raises(ValueError, match="unknown split rule 'bogus'"):
        split_indices(10, rule="bogus")
    assert set(SPLIT_RULES) >= {"random", "train_test", "train_val_test", "imagenet", "coil100", "domainnet"}


def test_coil100_by_viewing_angle_bins():
    angles = np.tile(np.arange(0, 360, 5), 3)  # 3 objects x 72 views
    splits = split_indices(len(angles), rule="coil100", groups=angles)
    _check_partition(splits, len(angles))
    assert _sizes(splits) == {"train": 15, "dev": 15, "dev_test": 15, "test": 171}
    assert sorted(set(angles[splits["train"]])) == [0, 5, 10, 350, 355], "frontal views train"
    assert sorted(set(angles[splits["dev"]])) == [80, 85, 90, 95, 100]
    assert sorted(set(angles[splits["dev_test"]])) == [250, 255, 260, 265, 270]
    again = split_indices(len(angles), seed=9, rule="coil100", groups=angles.astype(str))
    assert all(np.array_equal(splits[k], again[k]) for k in SPLIT_NAMES), "angle bins do not depend on the seed"
    assert parse_group("coil100", "/data/coil100/obj7/obj7__355.png") == "355"
    with pytest.raises(ValueError, match="no viewing angle"):
        parse_group("coil100", "/data/coil100/obj7/front.png")
    with pytest.raises(ValueError, match="needs each item's group"):
        split_indices(3, rule="coil100")
    with pytest.raises(ValueError, match="not a viewing angle"):
        split_indices(1, rule="coil100", groups=["400"])


def test_domainnet_by_domain_with_and_without_official_split():
    domains = np.array(["clipart", "infograph", "painting", "quickdraw", "real"] * 20 + ["sketch"] * 40)
    splits = split_indices(len(domains), seed=1, rule="domainnet", groups=domains)
    _check_partition(splits, len(domains))
    assert _sizes(splits) == {"train": 80, "dev": 20, "dev_test": 20, "test": 20}
    assert set(domains[splits["dev_test"]]) == set(domains[splits["test"]]) == {"sketch"}
    assert "sketch" not in set(domains[np.concatenate([splits["train"], splits["dev"]])])
    official = np.where(np.arange(len(domains)) % 4 == 0, "test", "train")
    by_official = split_indices(official, rule="domainnet", groups=domains)
    _check_partition(by_official, len(domains))
    assert (official[by_official["dev"]] == "test").all() and (domains[by_official["dev"]] != "sketch").all()
    assert (official[by_official["dev_test"]] == "train").all() and (domains[by_official["dev_test"]] == "sketch").all()
    assert parse_group("domainnet", "/x/real/sketch/airplane/1.jpg") == "sketch", "the folder nearest the file wins"
    with pytest.raises(ValueError, match="not domains"):
        split_indices(2, rule="domainnet", groups=["sketch", "photo"])


def test_build_deduplicates_before_a_group_rule_and_reads_groups_from_ids(make_labeled):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (72 * 2, 4, 4, 3), dtype=np.uint8)
    images[1] = images[0]  # an exact duplicate (same object, next angle) is dropped before splitting
    labeled = make_labeled(images, np.repeat([0, 1], 72), 2)
    labeled.ids = [f"/coil/obj{k + 1}/obj{k + 1}__{a}.png" for k in range(2) for a in range(0, 360, 5)]
    key = TaskKey("coil", TaskKind.MULTI_CLASS, 2, class_names=labeled.class_names)
    splits = build_task_splits(key, labeled, resolution=4, split_rule="coil100")
    assert splits.notes["split_sizes"] == {"train": 9, "dev": 10, "dev_test": 10, "test": 114}
    assert splits.notes["split_rule"] == "coil100" and splits.notes["dedup"]["duplicates_removed"] == 1
    labeled.notes["groups"] = {item: "0" for item in labeled.ids[:-1]}
    with pytest.raises(ValueError, match=r"task 'coil'.*none for 1 item"):
        build_task_splits(key, labeled, resolution=4, split_rule="coil100")


def test_image_folder_splits_and_domain_groups_reach_the_task_through_task_spec(tmp_path, write_png):
    value = 0
    for split, count in (("train", 6), ("test", 2)):
        for domain in ("real", "sketch"):
            for cls in ("cat", "dog"):
                for i in range(count):
                    value += 1
                    write_png(tmp_path / split / domain / cls / f"{i}.png", value)
    data = load_source(f"folder:{tmp_path}", grouped=True)
    assert data.class_names == ("cat", "dog") and len(data) == 32
    assert sorted(set(data.official_split)) == ["test", "train"]
    assert set(data.notes["groups"].values()) == {"real", "sketch"}
    spec = TaskSpec(
        "dn", f"folder:{tmp_path}", kind=TaskKind.MULTI_CLASS, classes=("cat", "dog"), resolution=4,
        options={"grouped": True}, split_rule="domainnet",
    )  # fmt: skip
    splits = build_stream("s", [spec]).splits(0)
    assert splits.notes["split_sizes"] == {"train": 12, "dev": 4, "dev_test": 12, "test": 4}
    assert splits.notes["split_rule"] == "domainnet" and splits.notes["official_split"]


def _norb_items(per_instance: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Each item's small NORB instance (0-9, `per_instance` each, interleaved) and its official split."""
    instances = np.tile(np.arange(10), per_instance)
    official = np.where(np.isin(instances, [4, 6, 7, 8, 9]), "train", "test")
    return instances, official


def test_smallnorb_splits_by_object_as_the_reference():
    instances, official = _norb_items()
    splits = split_indices(official, seed=3, rule="smallnorb", groups=instances)
    _check_partition(splits, len(instances))
    assert {name: sorted(set(instances[idx])) for name, idx in splits.items()} == {
        "train": [7, 8, 9], "dev": [4], "dev_test": [6], "test": [0, 1, 2, 3, 5],
    }  # fmt: skip
    assert (official[splits["test"]] == "test").all()
    for other in (split_indices(official, seed=9, rule="smallnorb", groups=[f"instance{k}" for k in instances]),
                  split_indices(len(instances), rule="smallnorb", groups=instances.astype(str))):  # fmt: skip
        assert all(np.array_equal(splits[k], other[k]) for k in SPLIT_NAMES), "no seed, no official split needed"
    official[0] = "train"  # instance 0 is an official test object: it cannot join the training pool
    with pytest.raises(ValueError, match=r"item 0: small NORB instance 0 is in the training pool.*\[4, 6, 7, 8, 9\]"):
        split_indices(official, rule="smallnorb", groups=instances)
    with pytest.raises(ValueError, match="'box' is not an object instance"):
        split_indices(1, rule="smallnorb", groups=["box"])
    assert parse_group("smallnorb", "/d/train/car/instance7/az02.png") == "7"
    assert parse_group("smallnorb", "/d/train/car/car_instance_4_el3.png") == "4"
    with pytest.raises(ValueError, match="no small NORB instance"):
        parse_group("smallnorb", "/d/train/car/az02.png")


def test_smallnorb_image_folder_reaches_the_task_split_by_object(tmp_path, write_png):
    value = 0
    for instance, split in zip(range(10), _norb_items(1)[1], strict=True):
        for cls in ("car", "plane"):
            for view in range(2):
                value += 1
                write_png(tmp_path / split / cls / f"instance{instance}" / f"view{view}.png", value)
    spec = TaskSpec("norb", f"folder:{tmp_path}", kind=TaskKind.MULTI_CLASS, classes=("car", "plane"), resolution=4,
                    split_rule="smallnorb")  # fmt: skip
    splits = build_stream("s", [spec]).splits(0)
    assert splits.notes["split_sizes"] == {"train": 12, "dev": 4, "dev_test": 4, "test": 20}
    assert splits.notes["split_rule"] == "smallnorb" and splits.notes["official_split"]
