"""From a loaded source to a task's four splits: de-duplicate, split, resize, wrap as ArrayDatasets."""

from __future__ import annotations

from lifelong.core.datasets import ArrayDataset
from lifelong.core.streams import TaskSplits
from lifelong.core.tasks import TaskKey
from lifelong.data.dedup import deduplicate
from lifelong.data.images import resize_all
from lifelong.data.labeled import LabeledImages
from lifelong.data.splits import GROUP_RULES, SPLIT_NAMES, parse_group, split_indices


def build_task_splits(
    key: TaskKey,
    labeled: LabeledImages,
    *,
    resolution: int,
    channels: int = 3,
    seed: int = 0,
    split_rule: str = "auto",
) -> TaskSplits:
    """De-duplicate `labeled`, split it by `split_rule` (docs/protocols/nevis.md#splits, `seed`), crop-resize, wrap
    per split.

    De-duplication comes first, so no image reaches two splits. Group rules (coil100, domainnet) read
    each item's group from notes["groups"] (item id -> value) when the source gives one, else from its id.
    TaskSplits.notes records the source's notes, the de-duplication report, the rule and the split sizes,
    so that skipped files and dropped duplicates stay visible in results.
    """
    _check_matches(key, labeled)
    kept, report = deduplicate(labeled)
    unique = labeled.subset(kept)
    items = len(unique) if unique.official_split is None else unique.official_split
    try:
        parts = split_indices(items, seed=seed, rule=split_rule, groups=item_groups(unique, split_rule))
    except ValueError as exc:
        raise ValueError(f"task {key.uid!r}: {exc}") from exc
    empty = [name for name in SPLIT_NAMES if len(parts[name]) == 0]
    if empty:
        sizes = {name: len(parts[name]) for name in SPLIT_NAMES}
        raise ValueError(
            f"task {key.uid!r}: split(s) {empty} would be empty (split sizes {sizes} from {len(unique)} unique "
            f"items of {len(labeled)}, {report.duplicates_removed + report.conflicting_labels} duplicates "
            "removed); give the task more items"
        )
    images = resize_all(unique.images, resolution, channels)
    datasets = {name: ArrayDataset(key, name, images[idx], unique.labels[idx]) for name, idx in parts.items()}
    notes = {
        "source": {k: v for k, v in labeled.notes.items() if k != "groups"},  # per-item groups stay out of results
        "dedup": report.to_dict(),
        "corrupt_skipped": int(labeled.notes.get("corrupt_skipped", 0)),
        "split_sizes": {name: len(idx) for name, idx in parts.items()},
        "official_split": unique.official_split is not None,
        "split_rule": split_rule,
        "resolution": resolution,
        "channels": channels,
        "seed": seed,
    }
    return TaskSplits(**datasets, notes=notes)


def item_groups(labeled: LabeledImages, rule: str) -> list[str] | None:
    """Each item's group for a group split rule (None for others): notes["groups"][id], else read from the id."""
    if rule not in GROUP_RULES:
        return None
    given = labeled.notes.get("groups")
    if given is None:
        return [parse_group(rule, item) for item in labeled.ids]
    missing = [item for item in labeled.ids if item not in given]
    if missing:
        raise ValueError(f"the source gives groups but none for {len(missing)} item(s), e.g. {missing[0]!r}")
    return [str(given[item]) for item in labeled.ids]


def _check_matches(key: TaskKey, labeled: LabeledImages) -> None:
    if key.kind is not labeled.kind:
        raise ValueError(f"task {key.uid!r} is {key.kind.value} but its data is {labeled.kind.value}")
    if key.num_classes != labeled.num_classes:
        raise ValueError(
            f"task {key.uid!r} declares {key.num_classes} classes but its data has {labeled.num_classes} "
            f"({list(labeled.class_names)[:10]}...)"
        )
    if key.class_names and tuple(key.class_names) != labeled.class_names:
        raise ValueError(
            f"task {key.uid!r}: class names {list(key.class_names)} differ from the data's {list(labeled.class_names)}"
        )
