"""Splitting facts into tasks: semantic (hierarchical clustering of fact embeddings) or random (most balanced of many).

Works on plain arrays: `part_ids` int [n, 3] (S, P, O word ids, -1 = undefined) and one word-vector array per part.
Tasks share no fact and each task holds at least one fact. Splits save as CSV `S,P,O,task` (`*` = undefined) plus a
JSON sidecar (method, linkage, seed, score, balance table).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.facts.linkage import LINKAGES, cut_mst, dense_linkage_labels, single_linkage_mst

UNDEFINED = "*"
FactTuple = tuple[str | None, str | None, str | None]


@dataclass
class Split:
    """A task per fact (0..tasks-1), how it was made, and its balance table (facts and images per task).

    `score`: `balance_score`, the largest relative deviation from the per-task mean over facts, training images and
    (where known) test images, lower is better; `info["deviations"]` holds each one. `distance`: the semantic split's
    fact distance (linkage.DISTANCES).
    """

    task: np.ndarray
    tasks: int
    method: str
    linkage: str | None = None
    seed: int | None = None
    score: float | None = None
    balance: list[dict] = field(default_factory=list)
    info: dict = field(default_factory=dict)
    distance: str | None = None

    def __post_init__(self) -> None:
        self.task = np.asarray(self.task, dtype=np.int64)
        if len(self.task) and (self.task.min() < 0 or self.task.max() >= self.tasks):
            raise ValueError(f"task ids must lie in 0..{self.tasks - 1}, got {self.task.min()}..{self.task.max()}")
        counts = np.bincount(self.task, minlength=self.tasks)
        if np.any(counts == 0):
            empty = int(np.flatnonzero(counts == 0)[0])
            raise ValueError(
                f"task {empty} of {self.tasks} has no facts ({len(self.task)} facts in all); "
                "every task needs at least one fact: use fewer tasks or more facts"
            )


def balance_rows(task: np.ndarray, tasks: int, images_per_fact: np.ndarray | None = None) -> list[dict]:
    """One row per task: facts, images, and each as a share of the total."""
    images = _images(images_per_fact, len(task))
    facts = np.bincount(task, minlength=tasks)
    imgs = np.bincount(task, weights=images, minlength=tasks)
    total_f, total_i = max(int(facts.sum()), 1), max(float(imgs.sum()), 1.0)
    return [
        {
            "task": t,
            "facts": int(facts[t]),
            "images": int(imgs[t]),
            "fact_share": round(float(facts[t]) / total_f, 6),
            "image_share": round(float(imgs[t]) / total_i, 6),
        }
        for t in range(tasks)
    ]


def balance_table(split: Split) -> str:
    """The balance rows as an aligned text table (single linkage chains: expect one dominant task)."""
    lines = [f"{'task':>4} {'facts':>9} {'images':>11} {'fact%':>7} {'image%':>7}"]
    for row in split.balance:
        lines.append(
            f"{row['task']:>4} {row['facts']:>9} {row['images']:>11} "
            f"{100 * row['fact_share']:>6.2f}% {100 * row['image_share']:>6.2f}%"
        )
    return "\n".join(lines)


def balance_deviations(
    task: np.ndarray,
    tasks: int,
    images_per_fact: np.ndarray | None = None,
    test_images_per_fact: np.ndarray | None = None,
) -> dict[str, float]:
    """max_t |x_t - mean| / mean for x = facts, training images (default one per fact) and test images (if given)."""
    out = {
        "facts": _deviation(np.bincount(task, minlength=tasks).astype(np.float64)),
        "images": _deviation(np.bincount(task, weights=_images(images_per_fact, len(task)), minlength=tasks)),
    }
    if test_images_per_fact is not None:
        test = _images(test_images_per_fact, len(task))
        out["test_images"] = _deviation(np.bincount(task, weights=test, minlength=tasks))
    return out


def balance_score(
    task: np.ndarray,
    tasks: int,
    images_per_fact: np.ndarray | None = None,
    test_images_per_fact: np.ndarray | None = None,
) -> float:
    """The largest of `balance_deviations` (facts, training images, test images): lower is more balanced."""
    return max(balance_deviations(task, tasks, images_per_fact, test_images_per_fact).values())


def _deviation(x: np.ndarray) -> float:
    mean = x.mean()
    return float(np.abs(x - mean).max() / mean) if mean > 0 else 0.0


def _images(images_per_fact: np.ndarray | None, n: int) -> np.ndarray:
    if images_per_fact is None:
        return np.ones(n)
    images = np.asarray(images_per_fact, dtype=np.float64)
    if images.shape != (n,) or np.any(images < 0):
        raise ValueError(f"images_per_fact must be {n} non-negative counts (one per fact), got shape {images.shape}")
    return images


def _check_tasks(n_facts: int, tasks: int) -> None:
    if tasks < 1 or n_facts < tasks:
        raise ValueError(f"cannot split {n_facts} facts into {tasks} tasks: need 1 <= tasks <= facts")


def semantic_split(
    part_ids: np.ndarray,
    part_vectors: Sequence[np.ndarray],
    tasks: int,
    linkage: str = "single",
    images_per_fact: np.ndarray | None = None,
    distance: str = "eq2",
) -> Split:
    """Agglomerative clustering of facts under `distance` cut into `tasks` clusters; tasks numbered by first fact.

    Single linkage under `eq2`: exact, via an MST (no n x n matrix); the cut removes the tasks - 1 heaviest MST
    edges, ties broken by (smaller fact index, larger fact index): among equal weights the edge with the larger pair
    is cut first. Other linkages, and `padded`: scipy on a condensed matrix, up to linkage.MAX_DENSE_FACTS facts.
    """
    n = len(part_ids)
    _check_tasks(n, tasks)
    if linkage not in LINKAGES:  # an unknown distance is named by linkage.condensed_distances
        raise ValueError(f"unknown linkage {linkage!r}; choose one of {', '.join(LINKAGES)}")
    if linkage == "single" and distance == "eq2":
        u, v, w = single_linkage_mst(part_ids, part_vectors)
        task, info = cut_mst(u, v, w, n, tasks)
    else:
        task, info = dense_linkage_labels(part_ids, part_vectors, tasks, linkage, distance)
    balance = balance_rows(task, tasks, images_per_fact)
    return Split(task, tasks, "semantic", linkage, balance=balance, info=info, distance=distance)


def random_split(
    n_facts: int,
    tasks: int,
    images_per_fact: np.ndarray | None = None,
    seed: int = 0,
    candidates: int = 100,
    test_images_per_fact: np.ndarray | None = None,
) -> Split:
    """Facts assigned uniformly at random to tasks, `candidates` times (candidate c draws from default_rng([seed, c]));
    keeps the candidate with the lowest `balance_score` (the largest relative deviation over facts, training images
    and test images; first on ties); candidates with an empty task are skipped."""
    _check_tasks(n_facts, tasks)
    if candidates < 1:
        raise ValueError(f"candidates must be >= 1, got {candidates}")
    best: tuple[float, int, np.ndarray] | None = None
    skipped = 0
    for c in range(candidates):
        task = np.random.default_rng([seed, c]).integers(0, tasks, n_facts)
        if np.bincount(task, minlength=tasks).min() == 0:
            skipped += 1
            continue
        score = balance_score(task, tasks, images_per_fact, test_images_per_fact)
        if best is None or score < best[0]:
            best = (score, c, task)
    if best is None:
        raise ValueError(
            f"all {candidates} random candidates left a task with no facts ({n_facts} facts, {tasks} tasks): "
            "use fewer tasks or more facts"
        )
    score, c, task = best
    deviations = balance_deviations(task, tasks, images_per_fact, test_images_per_fact)
    info = {"candidate": c, "candidates": candidates, "skipped_empty": skipped, "deviations": deviations}
    return Split(task, tasks, "random", None, seed, score, balance_rows(task, tasks, images_per_fact), info)


def encode_facts(
    facts: Sequence[FactTuple], vocabularies: Sequence[Sequence[str]] | None = None
) -> tuple[np.ndarray, list[list[str]]]:
    """Word ids [n, 3] (-1 = undefined) for (S, P, O) tuples of strings/None; vocabularies default to sorted words."""
    if vocabularies is None:
        vocabularies = [sorted({f[c] for f in facts if f[c] is not None}) for c in range(3)]
    lookup = [{word: i for i, word in enumerate(vocab)} for vocab in vocabularies]
    ids = np.full((len(facts), 3), -1, dtype=np.int64)
    for i, fact in enumerate(facts):
        for c in range(3):
            word = fact[c]
            if word is None:
                continue
            if word not in lookup[c]:
                raise ValueError(f"fact {i} {tuple(fact)}: word {word!r} is not in the {'SPO'[c]} vocabulary")
            ids[i, c] = lookup[c][word]
    return ids, [list(v) for v in vocabularies]


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def save_split(split: Split, facts: Sequence[FactTuple], path: str | Path) -> Path:
    """Write `path` (CSV S,P,O,task; one row per distinct fact) and its JSON sidecar (same stem, .json), atomically."""
    path = Path(path)
    if len(facts) != len(split.task):
        raise ValueError(f"{len(facts)} facts for a split of {len(split.task)}; pass the facts the split was made on")
    keys = [tuple(UNDEFINED if p is None else p for p in f) for f in facts]
    if len(set(keys)) != len(keys):
        dup = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise ValueError(f"fact {dup} appears twice; a split has one row per distinct fact")
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(["S", "P", "O", "task"])
    writer.writerows([*k, int(t)] for k, t in zip(keys, split.task, strict=True))
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    meta = {
        "method": split.method,
        "linkage": split.linkage,
        "distance": split.distance,
        "seed": split.seed,
        "score": split.score,
        "tasks": split.tasks,
        "facts": len(keys),
        "balance": split.balance,
        "info": split.info,
    }
    atomic_write_bytes(_sidecar(path), (json.dumps(meta, indent=2) + "\n").encode("utf-8"))
    return path


def load_split(path: str | Path) -> tuple[Split, list[FactTuple]]:
    """Read a split written by `save_split`: (Split, facts as (S, P, O) tuples with None for `*`)."""
    path = Path(path)
    meta_path = _sidecar(path)
    if not meta_path.exists():
        raise FileNotFoundError(f"{meta_path} (the JSON sidecar of {path}) is missing; save splits with save_split")
    meta = json.loads(meta_path.read_text())
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if rows and list(rows[0]) != ["S", "P", "O", "task"]:
        raise ValueError(f"{path}: columns {list(rows[0])}, expected S,P,O,task")
    facts: list[FactTuple] = [tuple(None if r[p] == UNDEFINED else r[p] for p in "SPO") for r in rows]  # type: ignore[misc]
    task = np.array([int(r["task"]) for r in rows], dtype=np.int64)
    if len(rows) != meta["facts"]:
        raise ValueError(f"{path} has {len(rows)} facts but its sidecar says {meta['facts']}; the files do not match")
    score = meta["score"]
    if isinstance(score, dict):  # sidecars before the one-number score: (images, facts) deviations
        score = max(float(v) for v in score.values())
    return (
        Split(
            task,
            int(meta["tasks"]),
            meta["method"],
            meta["linkage"],
            meta["seed"],
            None if score is None else float(score),
            meta["balance"],
            meta["info"],
            meta.get("distance"),
        ),
        facts,
    )
