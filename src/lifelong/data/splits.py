"""Deterministic split rules of docs/protocols/nevis.md#splits: train / dev / dev_test / test for one task.

A rule is named by a string (a task's `split_rule`, see SPLIT_RULES):

- `auto`: the official split when the data carries one (train+test -> `train_test`, train+val+test ->
  `train_val_test`), else `random`. Other combinations are refused.
- `random` (no official split): every item, 56 / 12 / 12 / 20 %; an official split in the data is ignored.
- `train_test`: the official train pool -> train / dev / dev_test 70 / 15 / 15 %, test = the official test.
  An official val joins the train pool when a test exists (e.g. FGVC Aircraft's train+val); with no test
  the official val is the test (datasets whose test labels are private, e.g. Tiny ImageNet).
- `train_val_test`: official train -> train / dev 80 / 20 %, dev_test = official val, test = official test.
- `train_val` (Pascal 2012 [ref], test labels private): official train -> train / dev 80 / 20 %, the
  official val halved 50 / 50 % into dev_test / test.
- `imagenet`: official train -> train / dev / dev_test 90 / 5 / 5 %, test = the official validation set
  (named `val`, or `test` when the data calls it so).
- `coil100`: by viewing angle (each item's group is its turntable angle in degrees, 0-355 in 5-degree steps,
  72 bins of 5 degrees): train = the frontal bins 350-14 degrees, dev = 80-104, dev_test = 250-274,
  test = every other angle (the bins follow the reference's split). An official split is ignored.
- `smallnorb`: by object instance (each item's group is its small NORB instance, 0-9), as the reference
  (dm_nevis `benchmarker/datasets/builders/smallnorb.py`): of the official train instances 4, 6, 7, 8, 9,
  dev = instance 4, dev_test = instance 6, train = 7, 8, 9; test = the official test (instances 0, 1, 2, 3, 5).
  Without an official split the instances alone decide (0, 1, 2, 3, 5 are the test). The seed is unused.
- `domainnet`: by domain (each item's group is its DomainNet domain): items of the five source domains
  (clipart, infograph, painting, quickdraw, real) form train / dev, the sketch domain dev_test / test.
  With an official split: source-domain train -> train, source-domain test -> dev, sketch train -> dev_test,
  sketch test -> test (as the reference); without one, source domains 80 / 20 % and sketch 50 / 50 %.

Dividing a pool: the pool's indices (ascending) are shuffled with `np.random.default_rng(seed).permutation`
and consecutive runs go to the splits in the order listed, with boundaries round_half_up(n * cumulative
percent / 100): every split is within one item of its share, and the same seed gives the same assignment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import PurePath

import numpy as np

from lifelong.data.labeled import OFFICIAL_SPLIT_NAMES

SPLIT_NAMES = ("train", "dev", "dev_test", "test")
SPLIT_RULES = (
    "auto",
    "random",
    "train_test",
    "train_val_test",
    "train_val",
    "imagenet",
    "coil100",
    "smallnorb",
    "domainnet",
)
GROUP_RULES = ("coil100", "smallnorb", "domainnet")

# Percentages (integers, so boundaries are exact) of each pool that goes to each split.
NO_OFFICIAL_SPLIT = {"train": 56, "dev": 12, "dev_test": 12, "test": 20}
FROM_OFFICIAL_TRAIN = {"train": 70, "dev": 15, "dev_test": 15}  # official train/test
FROM_OFFICIAL_TRAIN_WITH_VAL = {"train": 80, "dev": 20}  # official train/val/test
IMAGENET_TRAIN = {"train": 90, "dev": 5, "dev_test": 5}
HALVES = {"dev_test": 50, "test": 50}

# COIL-100: 5-degree angle bins (bin = angle // 5) per split; every other bin is test.
COIL100_ANGLE_BINS = {"train": (70, 71, 0, 1, 2), "dev": (16, 17, 18, 19, 20), "dev_test": (50, 51, 52, 53, 54)}
COIL100_NAME = re.compile(r"__(?P<angle>\d{1,3})(?:\.[A-Za-z0-9]+)?$")  # obj12__355.png
# small NORB: 5 categories x 10 toy instances; the official train holds instances 4, 6, 7, 8, 9.
SMALLNORB_INSTANCES = {"train": (7, 8, 9), "dev": (4,), "dev_test": (6,), "test": (0, 1, 2, 3, 5)}
SMALLNORB_GROUP = re.compile(r"^(?:instance[_-]?)?(?P<instance>\d)$", re.IGNORECASE)  # "4", "instance4"
SMALLNORB_NAME = re.compile(r"(?:^|[^a-z])instance[_-]?(?P<instance>\d)(?!\d)", re.IGNORECASE)
DOMAINNET_DOMAINS = ("clipart", "infograph", "painting", "quickdraw", "real", "sketch")
DOMAINNET_TEST_DOMAIN = "sketch"


def split_indices(
    items: int | np.ndarray | Sequence[str],
    seed: int = 0,
    *,
    rule: str = "auto",
    groups: np.ndarray | Sequence[str | int] | None = None,
) -> dict[str, np.ndarray]:
    """Assign every item to exactly one of train / dev / dev_test / test by `rule` (see the module docstring).

    `items` is the number of items (no official split) or each item's official split ("train" / "val" /
    "test"). `groups` holds each item's group value for the rules that need one (coil100: angle in
    degrees; domainnet: domain name). Returned indices are sorted ascending; the dict always has all four splits.
    """
    if rule not in SPLIT_RULES:
        raise ValueError(f"unknown split rule {rule!r}; expected one of {SPLIT_RULES}")
    n, official = _parse_items(items)
    if rule == "auto":
        rule = "random" if official is None else _official_rule(official)
    if rule in GROUP_RULES:
        if groups is None:
            raise ValueError(f"split rule {rule!r} needs each item's group value; pass groups=")
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise ValueError(f"split rule {rule!r}: {len(groups)} group values for {n} items")
        return _complete(_GROUP_RULES[rule](groups, official, seed))
    if rule == "random":
        return _complete(_divide(np.arange(n), NO_OFFICIAL_SPLIT, seed))
    if official is None:
        raise ValueError(
            f"split rule {rule!r} needs each item's official split (train/val/test) but the data has none; "
            "provide the data with its official split (train/ test/ sub-folders, a `split` column, an IDX "
            "train/t10k pair, ...) or use the rule 'random'"
        )
    return _complete(_OFFICIAL_RULES[rule](official, seed))


def parse_group(rule: str, item_id: str) -> str:
    """An item's group value read from its id (a file path) for a group rule, or a ValueError naming the item.

    coil100: the angle in COIL's file names (obj12__355.png -> "355"); smallnorb: "instance<k>" in a folder or
    file name (.../car/instance4/x.png or car_instance4_az02.png -> "4"); domainnet: the path folder that
    names a DomainNet domain (.../sketch/airplane/x.jpg -> "sketch").
    """
    if rule == "coil100":
        match = COIL100_NAME.search(PurePath(item_id).name)
        if match:
            return match["angle"]
        raise ValueError(
            f"item {item_id!r}: no viewing angle in its name; COIL-100 files are named objK__ANGLE.png "
            "(e.g. obj12__355.png), or give each item a group value (the angle in degrees)"
        )
    if rule == "smallnorb":
        for part in reversed(PurePath(item_id).parts):
            match = SMALLNORB_NAME.search(part)
            if match:
                return match["instance"]
        raise ValueError(
            f"item {item_id!r}: no small NORB instance in its path; put each image in a folder (or name it) "
            "instance<k> (k = 0-9, e.g. car/instance4/x.png), or give each item a group value (its instance)"
        )
    if rule == "domainnet":
        for part in reversed(PurePath(item_id).parts[:-1]):
            if part.lower() in DOMAINNET_DOMAINS:
                return part.lower()
        raise ValueError(
            f"item {item_id!r}: no DomainNet domain folder in its path; put images under one of "
            f"{list(DOMAINNET_DOMAINS)}/<class>/, or give each item a group value (its domain)"
        )
    raise ValueError(f"split rule {rule!r} uses no groups; group rules are {GROUP_RULES}")


def _parse_items(items: int | np.ndarray | Sequence[str]) -> tuple[int, np.ndarray | None]:
    """(number of items, official split array or None), validated."""
    if isinstance(items, int | np.integer):
        n = int(items)
        if n < 0:
            raise ValueError(f"the number of items must be >= 0, got {n}")
        return n, None
    official = np.asarray(items)
    if official.ndim != 1:
        raise ValueError(f"official splits must be a 1-D sequence of strings, got shape {official.shape}")
    official = official.astype(str)
    bad = ~np.isin(official, OFFICIAL_SPLIT_NAMES)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"item {row}: official split {str(official[row])!r} is not one of {OFFICIAL_SPLIT_NAMES}")
    return len(official), official


def _official_rule(official: np.ndarray) -> str:
    present = {str(s) for s in np.unique(official)}
    if present == {"train", "test"}:
        return "train_test"
    if present == {"train", "val", "test"}:
        return "train_val_test"
    raise ValueError(
        f"official splits {sorted(present)} are not a supported combination: expected train+test or "
        "train+val+test; pass the number of items instead to split without an official split, or name a "
        f"split rule (one of {SPLIT_RULES})"
    )


def _require(official: np.ndarray, rule: str, needed: set[str], allowed: set[str]) -> None:
    present = {str(s) for s in np.unique(official)}
    if not needed <= present or not present <= allowed:
        raise ValueError(
            f"split rule {rule!r} needs official splits {sorted(needed)} (allowed: {sorted(allowed)}), "
            f"but the data has {sorted(present)}; provide the dataset's official split or choose another rule"
        )


def _train_test(official: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    _require(official, "train_test", {"train"}, {"train", "val", "test"})
    has_test = (official == "test").any()
    if not has_test and not (official == "val").any():
        raise ValueError("split rule 'train_test' needs an official test (or val) split; the data has only train")
    pool = np.flatnonzero(np.isin(official, ["train", "val"] if has_test else ["train"]))
    splits = _divide(pool, FROM_OFFICIAL_TRAIN, seed)
    splits["test"] = np.flatnonzero(official == ("test" if has_test else "val"))
    return splits


def _train_val_test(official: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    _require(official, "train_val_test", {"train", "val", "test"}, {"train", "val", "test"})
    splits = _divide(np.flatnonzero(official == "train"), FROM_OFFICIAL_TRAIN_WITH_VAL, seed)
    splits["dev_test"] = np.flatnonzero(official == "val")
    splits["test"] = np.flatnonzero(official == "test")
    return splits


def _train_val(official: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    _require(official, "train_val", {"train", "val"}, {"train", "val"})
    splits = _divide(np.flatnonzero(official == "train"), FROM_OFFICIAL_TRAIN_WITH_VAL, seed)
    splits.update(_divide(np.flatnonzero(official == "val"), HALVES, seed))
    return splits


def _imagenet(official: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    _require(official, "imagenet", {"train"}, {"train", "val", "test"})
    held_out = [name for name in ("val", "test") if (official == name).any()]
    if len(held_out) != 1:
        raise ValueError(
            f"split rule 'imagenet' uses the official validation set as test and needs exactly one of val/test "
            f"besides train; the data has {held_out or 'neither'} (ImageNet's test labels are not public: drop them)"
        )
    splits = _divide(np.flatnonzero(official == "train"), IMAGENET_TRAIN, seed)
    splits["test"] = np.flatnonzero(official == held_out[0])
    return splits


def _coil100(groups: np.ndarray, official: np.ndarray | None, seed: int) -> dict[str, np.ndarray]:
    angles = np.empty(len(groups), dtype=np.int64)
    for i, value in enumerate(groups):
        text = str(value).strip()
        if not text.isdigit() or not 0 <= int(text) < 360:
            raise ValueError(f"item {i}: COIL-100 group {text!r} is not a viewing angle in degrees (0-359)")
        angles[i] = int(text)
    bins = angles // 5
    splits = {name: np.flatnonzero(np.isin(bins, chosen)) for name, chosen in COIL100_ANGLE_BINS.items()}
    splits["test"] = np.flatnonzero(~np.isin(bins, sum(COIL100_ANGLE_BINS.values(), ())))
    return splits


def _smallnorb(groups: np.ndarray, official: np.ndarray | None, seed: int) -> dict[str, np.ndarray]:
    instances = np.empty(len(groups), dtype=np.int64)
    for i, value in enumerate(groups):
        match = SMALLNORB_GROUP.match(str(value).strip())
        if not match:
            raise ValueError(f"item {i}: small NORB group {str(value)!r} is not an object instance (0-9)")
        instances[i] = int(match["instance"])
    held_out = np.isin(instances, SMALLNORB_INSTANCES["test"])
    if official is None:
        train_pool = ~held_out
    else:
        _require(official, "smallnorb", {"train", "test"}, {"train", "test"})
        train_pool = official == "train"
        held_out = ~train_pool
    pool_instances = sorted(sum((SMALLNORB_INSTANCES[name] for name in ("train", "dev", "dev_test")), ()))
    stray = np.flatnonzero(train_pool & ~np.isin(instances, pool_instances))
    if len(stray):
        raise ValueError(
            f"item {int(stray[0])}: small NORB instance {int(instances[stray[0]])} is in the training pool, which "
            f"holds instances {pool_instances} only; check the items' instances (or their official split)"
        )
    splits = {
        name: np.flatnonzero(train_pool & np.isin(instances, SMALLNORB_INSTANCES[name]))
        for name in ("train", "dev", "dev_test")
    }
    splits["test"] = np.flatnonzero(held_out)
    return splits


def _domainnet(groups: np.ndarray, official: np.ndarray | None, seed: int) -> dict[str, np.ndarray]:
    domains = np.char.lower(groups.astype(str))
    unknown = sorted(set(np.unique(domains)) - set(DOMAINNET_DOMAINS))
    if unknown:
        raise ValueError(f"DomainNet groups {unknown} are not domains; expected {list(DOMAINNET_DOMAINS)}")
    held_out = domains == DOMAINNET_TEST_DOMAIN
    if official is None:
        splits = _divide(np.flatnonzero(~held_out), FROM_OFFICIAL_TRAIN_WITH_VAL, seed)
        splits.update(_divide(np.flatnonzero(held_out), HALVES, seed))
        return splits
    _require(official, "domainnet", {"train", "test"}, {"train", "test"})
    train = official == "train"
    return {
        "train": np.flatnonzero(~held_out & train),
        "dev": np.flatnonzero(~held_out & ~train),
        "dev_test": np.flatnonzero(held_out & train),
        "test": np.flatnonzero(held_out & ~train),
    }


_OFFICIAL_RULES: dict[str, Callable[[np.ndarray, int], dict[str, np.ndarray]]] = {
    "train_test": _train_test,
    "train_val_test": _train_val_test,
    "train_val": _train_val,
    "imagenet": _imagenet,
}
_GROUP_RULES: dict[str, Callable[[np.ndarray, np.ndarray | None, int], dict[str, np.ndarray]]] = {
    "coil100": _coil100,
    "smallnorb": _smallnorb,
    "domainnet": _domainnet,
}


def _divide(pool: np.ndarray, percents: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Shuffle `pool` with the seed and cut it at round-half-up cumulative percentage boundaries."""
    n = len(pool)
    shuffled = pool[np.random.default_rng(seed).permutation(n)]
    out: dict[str, np.ndarray] = {}
    start = cumulative = 0
    for name, percent in percents.items():
        cumulative += percent
        stop = (n * cumulative * 2 + 100) // 200  # round half up of n * cumulative / 100, in integers
        out[name] = np.sort(shuffled[start:stop])
        start = stop
    if cumulative != 100:
        raise AssertionError(f"split percentages {percents} sum to {cumulative}, not 100")
    return out


def _complete(splits: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.sort(splits.get(name, np.empty(0, dtype=np.int64))).astype(np.int64) for name in SPLIT_NAMES}
