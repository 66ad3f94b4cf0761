"""Replay buffers of the CLEAR methods: reservoir, biased reservoir, class-balanced, class reservoir
(docs/protocols/clear.md#replay-buffers).

Pure numpy (no torch), immutable and picklable, so a buffer lives in a learner's checkpointed state; every
update takes the caller's seeded `np.random.Generator` and returns a new buffer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

POLICIES = ("reservoir", "biased", "class-balanced", "class-reservoir")
DEFAULT_ALPHA = 1.0


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class ReplayBuffer:
    """A bounded sample of the items seen so far: `items` [n, ...] (images or features), int64 `labels` [n].

    `origin[i]` is the bucket item i came from; `seen` counts every item offered so far. `capacity` None
    means "one bucket": it becomes the size of the first bucket offered (the paper: 2,310 IID / 3,300 streaming).
    Policies:
    - "reservoir": per-sample reservoir sampling; the i-th item overall is kept with probability k / i.
    - "biased": biased reservoir per bucket: n += |B|; the first bucket fills the buffer; later, each new item is
      selected with probability p = min(1, alpha k / n) and replaces a random buffer item (free slots are used
      first; more than k selected: a random k kept). Fixed `alpha` (default 1), or dynamic alpha = c n / k,
      i.e. p = min(1, c) (`c` in (0, 1]; c = 1 keeps only the newest bucket when buckets hold k items).
    - "class-balanced": GDumb's greedy sampler: add while not full; then an item whose class has fewer items
      than the largest class replaces a random item of the largest class (ties: a random largest class).
    - "class-reservoir": the sampler of Avalanche's GDumb (a class-balanced buffer of adaptive size): k is shared
      equally among the m classes seen so far, k // m each, the remainder k - m (k // m) one each to the first
      classes in ascending class index; each class holds a uniform random subset of all its items offered so far,
      of its share (all of them if fewer). A weighted reservoir: every offered item draws an independent key
      U[0, 1); per class the buffer keeps the largest keys among its stored items and its new ones, so a class's
      share shrinking as classes appear still leaves a uniform subset. `keys` [n] holds the kept items' keys and
      `classes` the classes seen (both empty under the other policies).
    """

    policy: str = "reservoir"
    capacity: int | None = None
    alpha: float | None = None
    c: float | None = None
    items: np.ndarray | None = None
    labels: np.ndarray = dataclasses.field(default_factory=lambda: _frozen(np.zeros(0, np.int64)))
    origin: np.ndarray = dataclasses.field(default_factory=lambda: _frozen(np.zeros(0, np.int64)))
    seen: int = 0
    keys: np.ndarray = dataclasses.field(default_factory=lambda: _frozen(np.zeros(0, np.float64)))
    classes: np.ndarray = dataclasses.field(default_factory=lambda: _frozen(np.zeros(0, np.int64)))

    def __setstate__(self, state: dict) -> None:
        """Unpickling: fields added since a buffer was pickled take their defaults (older checkpoints load), and
        the arrays are read-only again (numpy unpickles them writeable)."""
        for field in dataclasses.fields(self):
            if field.name not in state and field.default_factory is not dataclasses.MISSING:
                state[field.name] = field.default_factory()
        for value in state.values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        self.__dict__.update(state)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown buffer policy {self.policy!r}; choose one of {POLICIES}")
        if self.capacity is not None and (isinstance(self.capacity, bool) or int(self.capacity) < 1):
            raise ValueError(f"buffer capacity must be a positive int or None (one bucket), got {self.capacity!r}")
        if self.policy == "biased":
            if self.alpha is not None and self.c is not None:
                raise ValueError(f"give the biased buffer alpha or c, not both (got alpha={self.alpha}, c={self.c})")
            if self.alpha is not None and not self.alpha > 0:
                raise ValueError(f"biased buffer alpha must be > 0 (paper grid 0.5, 1, 2, 5), got {self.alpha}")
            if self.c is not None and not 0 < self.c <= 1:
                raise ValueError(f"biased buffer c must be in (0, 1] (c = 1 is FIFO), got {self.c}")
        elif self.alpha is not None or self.c is not None:
            raise ValueError(
                f"alpha / c apply only to the 'biased' policy, got alpha={self.alpha}, c={self.c} with "
                f"policy {self.policy!r}; drop them or choose policy 'biased'"
            )
        if not len(self.labels) == len(self.origin) == (0 if self.items is None else len(self.items)):
            raise ValueError(
                f"buffer arrays disagree in length: items {None if self.items is None else len(self.items)}, "
                f"labels {len(self.labels)}, origin {len(self.origin)}"
            )
        expected_keys = len(self.labels) if self.policy == "class-reservoir" else 0
        if len(self.keys) != expected_keys:
            raise ValueError(
                f"buffer keys hold {len(self.keys)} entries, need {expected_keys}: one per item under the "
                f"'class-reservoir' policy, none under {self.policy!r}"
            )

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        return (
            f"ReplayBuffer(policy={self.policy!r}, {len(self)}/{self.capacity} items, seen={self.seen}, "
            f"alpha={self.alpha}, c={self.c})"
        )

    @property
    def full(self) -> bool:
        return self.capacity is not None and len(self) >= self.capacity

    def class_counts(self, num_classes: int) -> np.ndarray:
        """Items per class [num_classes]."""
        return np.bincount(self.labels, minlength=num_classes)

    def origin_counts(self, num_buckets: int) -> np.ndarray:
        """Items per bucket of origin [num_buckets]."""
        return np.bincount(self.origin, minlength=num_buckets)

    def selection_probability(self, bucket_size: int) -> float:
        """Biased policy: the probability p that an item of the next bucket of `bucket_size` items is selected."""
        if self.policy != "biased":
            raise ValueError(f"selection_probability is defined for the 'biased' policy, not {self.policy!r}")
        if self.seen == 0:
            return 1.0
        if self.capacity is None:
            raise ValueError("capacity is unset before the first update")
        n = self.seen + bucket_size
        if self.c is not None:
            return min(1.0, self.c)  # dynamic alpha = c n / k gives p = alpha k / n = c
        alpha = DEFAULT_ALPHA if self.alpha is None else self.alpha
        return min(1.0, alpha * self.capacity / n)

    def update(self, items: np.ndarray, labels: np.ndarray, bucket: int, rng: np.random.Generator) -> ReplayBuffer:
        """A new buffer after offering `items` (one bucket, in order) with their `labels`; self is unchanged."""
        items = np.asarray(items)
        labels = np.asarray(labels)
        if labels.ndim != 1 or len(labels) != len(items):
            raise ValueError(f"need labels [N] for {len(items)} items, got shape {labels.shape}")
        if labels.size and labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be integer class indices, got dtype {labels.dtype}")
        labels = labels.astype(np.int64, copy=False)
        if self.items is not None and (items.shape[1:] != self.items.shape[1:] or items.dtype != self.items.dtype):
            raise ValueError(
                f"items {items.dtype} {items.shape[1:]} do not match the buffer's {self.items.dtype} "
                f"{self.items.shape[1:]}; a buffer holds one kind of item (images or features of one encoder)"
            )
        if not isinstance(bucket, int | np.integer) or bucket < 0:
            raise ValueError(f"bucket must be a non-negative int, got {bucket!r}")
        if len(items) == 0:
            return self
        capacity = int(self.capacity if self.capacity is not None else len(items))
        old_items = self.items if self.items is not None else np.zeros((0, *items.shape[1:]), items.dtype)
        origin = np.full(len(items), int(bucket), np.int64)
        kept_keys, classes = self.keys, self.classes
        if self.policy == "reservoir":
            keep = _reservoir(old_items, self.labels, self.origin, items, labels, origin, self.seen, capacity, rng)
        elif self.policy == "biased":
            sized = dataclasses.replace(self, capacity=capacity)
            p = sized.selection_probability(len(items))
            keep = _biased(old_items, self.labels, self.origin, items, labels, origin, p, capacity, rng)
        elif self.policy == "class-balanced":
            keep = _class_balanced(old_items, self.labels, self.origin, items, labels, origin, capacity, rng)
        else:
            classes = np.union1d(self.classes, labels)
            new_keys = rng.random(len(items))  # one independent U[0, 1) key per offered item
            stored = (old_items, self.labels, self.origin, self.keys)
            keep, kept_keys = _class_reservoir(stored, (items, labels, origin, new_keys), classes, capacity)
        new_items, new_labels, new_origin = keep
        return dataclasses.replace(
            self,
            capacity=capacity,
            items=_frozen(new_items),
            labels=_frozen(new_labels),
            origin=_frozen(new_origin),
            seen=self.seen + len(items),
            keys=_frozen(kept_keys),
            classes=_frozen(classes),
        )


Arrays = tuple[np.ndarray, np.ndarray, np.ndarray]


def _reservoir(
    items: np.ndarray,
    labels: np.ndarray,
    origin: np.ndarray,
    new: np.ndarray,
    new_labels: np.ndarray,
    new_origin: np.ndarray,
    seen: int,
    k: int,
    rng: np.random.Generator,
) -> Arrays:
    """Classic reservoir: item number i (1-based, overall) fills a free slot, else takes slot j ~ U{0..i-1} if j < k."""
    free = max(0, k - len(items))
    head = min(free, len(new))
    items = np.concatenate([items, new[:head]])
    labels = np.concatenate([labels, new_labels[:head]])
    origin = np.concatenate([origin, new_origin[:head]])
    rest = np.arange(head, len(new))
    if len(rest):
        position = seen + rest + 1  # 1-based overall index of each remaining item
        slots = rng.integers(0, position)  # one uniform draw per item, vectorised
        chosen = slots < k
        # later items overwrite earlier ones in the same slot: apply in order
        for i, slot in zip(rest[chosen], slots[chosen], strict=True):
            items[slot], labels[slot], origin[slot] = new[i], new_labels[i], new_origin[i]
    return items, labels, origin


def _biased(
    items: np.ndarray,
    labels: np.ndarray,
    origin: np.ndarray,
    new: np.ndarray,
    new_labels: np.ndarray,
    new_origin: np.ndarray,
    p: float,
    k: int,
    rng: np.random.Generator,
) -> Arrays:
    """Select each new item w.p. `p`; drop as many random old items as needed to fit; append the selected ones."""
    selected = np.flatnonzero(rng.random(len(new)) < p) if p < 1 else np.arange(len(new))
    if len(selected) > k:
        selected = np.sort(rng.choice(selected, size=k, replace=False))
    drop = max(0, len(items) + len(selected) - k)
    kept = np.sort(rng.choice(len(items), size=len(items) - drop, replace=False)) if drop else np.arange(len(items))
    return (
        np.concatenate([items[kept], new[selected]]),
        np.concatenate([labels[kept], new_labels[selected]]),
        np.concatenate([origin[kept], new_origin[selected]]),
    )


def _class_balanced(
    items: np.ndarray,
    labels: np.ndarray,
    origin: np.ndarray,
    new: np.ndarray,
    new_labels: np.ndarray,
    new_origin: np.ndarray,
    k: int,
    rng: np.random.Generator,
) -> Arrays:
    """GDumb's greedy class-balanced sampler, one item at a time in order."""
    size = len(items)
    out_items = np.empty((max(k, size), *new.shape[1:]), new.dtype)
    out_items[:size] = items
    out_labels = np.empty(max(k, size), np.int64)
    out_labels[:size] = labels
    out_origin = np.empty(max(k, size), np.int64)
    out_origin[:size] = origin
    counts: dict[int, int] = {}
    for y in labels.tolist():
        counts[y] = counts.get(y, 0) + 1
    for i, y in enumerate(new_labels.tolist()):
        if size < k:
            slot = size
            size += 1
        else:
            largest = max(counts.values())
            if counts.get(y, 0) >= largest:
                continue
            biggest = sorted(c for c, n in counts.items() if n == largest)
            victim_class = biggest[int(rng.integers(len(biggest)))] if len(biggest) > 1 else biggest[0]
            members = np.flatnonzero(out_labels[:size] == victim_class)
            slot = int(members[rng.integers(len(members))])
            counts[victim_class] -= 1
        out_items[slot], out_labels[slot], out_origin[slot] = new[i], y, new_origin[i]
        counts[y] = counts.get(y, 0) + 1
    return out_items[:size], out_labels[:size], out_origin[:size]


def _class_shares(classes: np.ndarray, k: int) -> np.ndarray:
    """Each seen class's share of k (`classes` ascending): k // m each, the remainder one each to the first."""
    m = len(classes)
    shares = np.full(m, k // m, np.int64)
    shares[: k - m * (k // m)] += 1
    return shares


def _class_reservoir(
    old: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    new: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    classes: np.ndarray,
    k: int,
) -> tuple[Arrays, np.ndarray]:
    """Per class, the items with the largest keys among its stored and new ones, up to its share; (items, labels,
    origin, keys) each, the kept ones in their order (stored first, then new in offered order)."""
    labels = np.concatenate([old[1], new[1]])
    keys = np.concatenate([old[3], new[3]])
    order = np.lexsort((-keys, labels))  # by class, then key descending
    sorted_labels = labels[order]
    first = np.searchsorted(sorted_labels, sorted_labels, side="left")  # start of each item's class run
    rank = np.arange(len(order)) - first
    share = _class_shares(classes, k)[np.searchsorted(classes, sorted_labels)]
    keep = np.zeros(len(labels), bool)
    keep[order[rank < share]] = True
    stored, fresh = keep[: len(old[1])], keep[len(old[1]) :]
    kept = tuple(np.concatenate([a[stored], b[fresh]]) for a, b in zip(old, new, strict=True))
    return (kept[0], kept[1], kept[2]), kept[3]


__all__ = ["DEFAULT_ALPHA", "POLICIES", "ReplayBuffer"]
