"""Fact splits (`lifelong facts split`) from Python: the distinct facts <S,P,O> of a facts CSV split into tasks,
semantic or random, with the balance figures (docs/protocols/facts.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lifelong.commands.outputs import prepare_output
from lifelong.commands.terminal import fail
from lifelong.core.errors import UsageError
from lifelong.core.progress import Progress
from lifelong.facts.facts import Fact
from lifelong.facts.splits import Split

METHODS = ("semantic", "random")


@dataclass(frozen=True)
class FactsSplitSpec:
    """`lifelong facts split FACTS.csv --out SPLIT.csv --tasks T ...`: each field is the option of the same name."""

    facts_csv: str | Path
    out: str | Path
    tasks: int
    method: str = "semantic"
    vectors: str | Path | None = None
    linkage: str = "auto"
    distance: str = "auto"
    seed: int = 0
    oov: str = "error"
    candidates: int = 100
    cache_dir: str | Path | None = None
    resume: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        from lifelong.facts.vectors import OOV_MODES

        if self.method not in METHODS:
            raise UsageError(f"unknown --method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.oov not in OOV_MODES:
            raise UsageError(f"unknown --oov {self.oov!r}; choose one of {', '.join(OOV_MODES)}")


@dataclass
class FactsSplitResult:
    """The split written to `out`: a task per distinct fact (`split.task`), how it was chosen, and its balance.

    `split` and `facts` are None when `resume` found `out` finished (read it with `lifelong.facts.splits.load_split`).
    `score`: the largest relative deviation from the mean of facts and images per task (lower is better); `notes`:
    what the user should know (a word missing from the vectors, an option not used)."""

    out: Path
    method: str
    tasks: int
    split: Split | None = None
    facts: list[Fact] | None = None
    images: int = 0
    score: float | None = None
    seed: int = 0
    candidates: int = 100
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def already_done(self) -> bool:
        """True when `resume` found `out` holding a finished split: nothing was done."""
        return self.split is None

    def frame(self):
        """One row per distinct fact: S, P, O (None = undefined) and its task, as a pandas DataFrame."""
        import pandas as pd

        if self.split is None or self.facts is None:
            raise UsageError(f"{self.out} was finished before (resume): read it with lifelong.facts.splits.load_split")
        rows = [(*fact, int(task)) for fact, task in zip(self.facts, self.split.task, strict=True)]
        return pd.DataFrame(rows, columns=["S", "P", "O", "task"])


def facts_split(spec: FactsSplitSpec, *, progress: Progress = False) -> FactsSplitResult:
    """Split the distinct facts of `spec.facts_csv` into `spec.tasks` tasks and write `spec.out` (S,P,O,task and a
    JSON sidecar); images per fact (its rows) weigh the balance. `progress` follows reading the word vectors."""
    from lifelong.facts.facts import distinct_facts, read_facts_csv
    from lifelong.facts.split_choice import chosen_semantic_split
    from lifelong.facts.splits import balance_score, encode_facts, random_split, save_split
    from lifelong.facts.vectors import cached_part_vectors
    from lifelong.metrics.fact_scores import TOP_K
    from lifelong.suites.facts import require_sentence_model

    started = time.perf_counter()
    out, tasks = Path(spec.out), spec.tasks
    result = FactsSplitResult(out, spec.method, tasks, seed=spec.seed, candidates=spec.candidates)
    if prepare_output(out, resume=spec.resume, overwrite=spec.overwrite, what="split") == "done":
        return result
    if spec.method == "semantic" and spec.vectors is None:  # before any work: the model is an optional extra
        require_sentence_model("or give --vectors FILE (word2vec or GloVe), or split with --method random")
    try:
        table = read_facts_csv(spec.facts_csv)
        facts, index = distinct_facts(table.facts)
        images = np.bincount(index, minlength=len(facts))
        if not 1 <= tasks <= len(facts):
            raise UsageError(
                f"cannot split the {len(facts)} distinct facts of {spec.facts_csv} into {tasks} tasks: every task "
                f"needs at least one fact; use --tasks between 1 and {len(facts)}"
            )
        report = None
        if spec.method == "random":
            if spec.vectors is not None:
                result.notes.append("--vectors is not used by --method random")
            split = random_split(len(facts), tasks, images_per_fact=images, seed=spec.seed, candidates=spec.candidates)
        else:
            part_ids, vocabularies = encode_facts(facts)
            part_vectors, report = cached_part_vectors(
                vocabularies, spec.vectors, oov=spec.oov, seed=spec.seed, cache_dir=spec.cache_dir, progress=progress
            )
            split = chosen_semantic_split(
                part_ids,
                part_vectors,
                tasks,
                images,
                TOP_K,
                distance=spec.distance.lower(),
                linkage=spec.linkage.lower(),
            )
        save_split(split, facts, out)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    if report and report.get("oov_words"):
        words = report["oov_words"]
        done = "left out of their phrases" if spec.oov == "skip" else f"given random vectors (seed {spec.seed})"
        listed = ", ".join(words[:20]) + (" ..." if len(words) > 20 else "")
        result.notes.append(f"{len(words)} word(s) not in the word vectors, {done}: {listed}")
    result.split, result.facts, result.images = split, facts, len(table.facts)
    result.score = split.score if split.score is not None else balance_score(split.task, tasks, images)
    result.seconds = time.perf_counter() - started
    return result


__all__ = ["METHODS", "FactsSplitResult", "FactsSplitSpec", "facts_split"]
