"""`lifelong bench experiment`, `beyond` and `build-zoo` from Python: the paper's experiments on matrices, and the zoo
of trained models that gives them a real correctness matrix. Specs, functions and results; nothing here prints
(`bench_reports` and `bench_console` render the results as the commands print them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.commands.bench_inputs import _one_of, at_least, parse_budgets, toolkit_errors
from lifelong.commands.presets import apply_preset, check_recorded
from lifelong.core.errors import DataError, Interrupted, ResumeRefused, UsageError
from lifelong.core.progress import Progress
from lifelong.core.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd


# -- experiment ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchExperimentSpec:
    """`lifelong bench experiment`: Sort & Search on a ranking matrix (`rank`, `--rank`) and an evaluated one
    (`evaluate`, `--eval`), at each budget n' (m' with `transpose`: samples inserted instead of models)."""

    rank: str | Path
    evaluate: str | Path
    budgets: str | Sequence[int] = "8,16,...,2048"
    sort: str = "sum"
    sampling: str = "uniform"
    rank_confidence: str | Path | None = None
    transpose: bool = False


@dataclass(frozen=True)
class BenchExperimentResult:
    """One row per budget (error, aggregate error, kappa, Pearson r, aleatoric and epistemic parts), and the inputs'
    shapes (models, samples)."""

    rows: list[dict[str, Any]]
    rank_shape: tuple[int, int]
    eval_shape: tuple[int, int]
    sort: str
    sampling: str
    transpose: bool

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame, one per budget."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def bench_experiment(spec: BenchExperimentSpec) -> BenchExperimentResult:
    """Load and check the .npy matrices, then run the paper's experiment at every budget."""
    from lifelong.sortsearch.experiment import SORTS, load_confidence, load_matrix, matrix_size, run_experiment
    from lifelong.sortsearch.search import SAMPLING_METHODS

    sort, sampling = spec.sort, spec.sampling
    if sort not in SORTS:
        raise UsageError(f"unknown --sort {sort!r}{did_you_mean(sort, SORTS)}; choose {', '.join(SORTS)}")
    if sampling not in SAMPLING_METHODS:
        choices = " or ".join(SAMPLING_METHODS)
        raise UsageError(f"unknown --sampling {sampling!r}{did_you_mean(sampling, SAMPLING_METHODS)}; choose {choices}")
    if sort == "confidence" and spec.rank_confidence is None:
        raise UsageError(
            "--sort confidence needs --rank-confidence FILE: the ranking models' true-class probabilities "
            "(a .npy of the --rank matrix's shape, e.g. a zoo's confidence.npy)"
        )
    with toolkit_errors():
        budget_list = parse_budgets(spec.budgets)
        rank, evaluate = load_matrix(spec.rank), load_matrix(spec.evaluate)
        shared, axis = ("models", 0) if spec.transpose else ("samples", 1)
        if rank.shape[axis] != evaluate.shape[axis]:
            raise UsageError(
                f"--rank {spec.rank} has {rank.shape[axis]} {shared} but --eval {spec.evaluate} has "
                f"{evaluate.shape[axis]}: {'with --transpose ' if spec.transpose else ''}both matrices must cover the "
                f"same {shared}"
            )
        confidence = load_confidence(spec.rank_confidence) if spec.rank_confidence is not None else None
        if confidence is not None and confidence.shape != rank.shape:
            raise UsageError(
                f"--rank-confidence {spec.rank_confidence} is {matrix_size(confidence.shape)} but --rank is "
                f"{matrix_size(rank.shape)}: give one probability per cell of --rank"
            )
        rows = run_experiment(
            rank,
            evaluate,
            budgets=budget_list,
            sort=sort,
            sampling=sampling,
            rank_confidence=confidence,
            transpose=spec.transpose,
            validate=False,
        )
    return BenchExperimentResult(rows, tuple(rank.shape), tuple(evaluate.shape), sort, sampling, spec.transpose)


# -- beyond --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchBeyondSpec:
    """`lifelong bench beyond`: rankings beyond sum-sort and the intervals' coverage, on one matrix split half/half
    (`matrix`, seeded by `split_seed`) or on a ranking and a held-out matrix (`rank`, `evaluate`: `--rank`, `--eval`).
    `samples`: a samples CSV with a domain column (the domain-aware methods). Python only: `methods` (default: every
    ranking method, `sortsearch.rankings.RANKING_METHODS`) and the intervals' `confidence`."""

    matrix: str | Path | None = None
    rank: str | Path | None = None
    evaluate: str | Path | None = None
    samples: str | Path | None = None
    budgets: str | Sequence[int] = "1024,2048,4096"
    split_seed: int = 0
    methods: str | Sequence[str] | None = None
    confidence: float = 0.95


@dataclass(frozen=True)
class BenchBeyondResult:
    """Interval coverage rows (uniform and random sampling) and ranking-method rows on the held-out models, the
    inputs (`matrix`, or `rank` and `evaluate`, with their shapes) and the methods left out for too few models."""

    shape: tuple[int, int]
    split_seed: int
    coverage: list[dict[str, Any]]
    rankings: list[dict[str, Any]]
    ranking_models: int
    held_out_models: int
    matrix: str | None = None
    rank: str | None = None
    evaluate: str | None = None
    rank_shape: tuple[int, int] | None = None
    eval_shape: tuple[int, int] | None = None
    left_out: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The tables as `--json` prints them: shape, split_seed, coverage, rankings."""
        return {
            "shape": list(self.shape),
            "split_seed": self.split_seed,
            "coverage": self.coverage,
            "rankings": self.rankings,
        }


def bench_beyond(spec: BenchBeyondSpec) -> BenchBeyondResult:
    """Ranking and held-out models from the split or the two matrices; coverage and rankings compared on them."""
    from lifelong.sortsearch.experiment import load_matrix
    from lifelong.sortsearch.intervals import interval_coverage
    from lifelong.sortsearch.rankings import RANKING_METHODS, compare_rankings

    matrix, rank_path, eval_path = spec.matrix, spec.rank, spec.evaluate
    if (matrix is None) == (rank_path is None and eval_path is None) or (
        matrix is None and (rank_path is None or eval_path is None)
    ):
        raise UsageError("give either --matrix FILE, or both --rank FILE and --eval FILE")
    with toolkit_errors():
        shapes: dict[str, Any] = {}
        if matrix is not None:
            A = np.asarray(load_matrix(matrix))
            perm = np.random.default_rng(spec.split_seed).permutation(A.shape[0])
            rank_ids, eval_ids = np.sort(perm[: A.shape[0] // 2]), np.sort(perm[A.shape[0] // 2 :])
        else:
            rank, held = np.asarray(load_matrix(rank_path)), np.asarray(load_matrix(eval_path))
            if rank.shape[1] != held.shape[1]:
                raise UsageError(
                    f"{rank_path} has {rank.shape[1]} samples (columns) but {eval_path} has {held.shape[1]}: "
                    "both matrices must cover the same samples in the same order"
                )
            A = np.concatenate([rank, held])
            rank_ids, eval_ids = np.arange(rank.shape[0]), np.arange(rank.shape[0], A.shape[0])
            shapes = {"rank_shape": tuple(rank.shape), "eval_shape": tuple(held.shape)}
        if rank_ids.size == 0 or eval_ids.size == 0:
            raise UsageError(
                f"need at least one ranking and one held-out model; got {rank_ids.size} and {eval_ids.size}"
            )
        budget_list = parse_budgets(spec.budgets)
        bad = [b for b in budget_list if not 1 <= b <= A.shape[1]]
        if not budget_list or bad:
            raise UsageError(
                f"budgets {', '.join(map(str, bad or budget_list))} must be integers in 1..{A.shape[1]} (the samples)"
            )
        methods = RANKING_METHODS if spec.methods is None else spec.methods
        method_list = [m.strip() for m in methods.split(",")] if isinstance(methods, str) else list(methods)
        domains = _domains_from_csv(spec.samples, A.shape[1]) if spec.samples is not None else None
        if domains is None:  # the domain-aware methods need a samples CSV
            method_list = [m for m in method_list if "domain" not in m]
        too_few = [m for m in method_list if _clusters(m) > rank_ids.size]  # k-means needs at least k ranking models
        method_list = [m for m in method_list if m not in too_few]
        coverage = [
            row
            for sampling in ("uniform", "random")
            for row in interval_coverage(
                A[rank_ids],
                A[eval_ids],
                budget_list,
                confidences=(spec.confidence,),
                sampling=sampling,
                seed=spec.split_seed,
            )
        ]
        rankings = compare_rankings(A, rank_ids, eval_ids, budget_list, methods=method_list, domains=domains)
    return BenchBeyondResult(
        shape=tuple(A.shape),
        split_seed=spec.split_seed,
        coverage=coverage,
        rankings=rankings,
        ranking_models=int(rank_ids.size),
        held_out_models=int(eval_ids.size),
        matrix=None if matrix is None else str(matrix),
        rank=None if rank_path is None else str(rank_path),
        evaluate=None if eval_path is None else str(eval_path),
        left_out=too_few,
        **shapes,
    )


def _domains_from_csv(path: str | Path, n: int) -> np.ndarray:
    """The domain label of every sample, from a samples CSV with a `domain` column (one row per matrix column)."""
    from lifelong.sortsearch.samples_csv import read_samples_csv

    return np.asarray([row["domain"] for row in read_samples_csv(path, require=("domain",), n=n)])


def _clusters(method: str) -> int:
    """The K of a clusterK or clusterK+domain ranking method, 0 for the others."""
    digits = method.removeprefix("cluster").removesuffix("+domain")
    return int(digits) if method.startswith("cluster") and digits.isdigit() else 0


# -- build-zoo -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchBuildZooSpec:
    """`lifelong bench build-zoo OUT`: train and evaluate `models` varied models on `test_samples` clean samples of
    `source` plus a corrupted copy per corruption and severity; `resume` reuses OUT's finished models (a larger
    `models` grows the zoo), `overwrite` builds it again. The accelerator fields are `lifelong run`'s. `preset`
    (quick or full, None: full) sets `models` and `test_samples` where they are None (`commands.presets`)."""

    out: str | Path
    models: int | None = None
    source: str = "fashion-mnist"
    fallback_source: str | None = None
    test_samples: int | None = None
    corruptions: str | Sequence[str] = "noise,blur,contrast,rotation,occlusion"
    severities: str | Sequence[int] = "1,2,3"
    seed: int = 0
    resume: bool = False
    overwrite: bool = False
    skip_corrupt: bool = False
    executor: str = "local"
    num_cpus: int | None = None
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    channels_last: str = "auto"
    gpus_per_trial: float = 0.0
    preset: str | None = None

    def __post_init__(self) -> None:
        apply_preset(self, "bench build-zoo")


@dataclass(frozen=True)
class BenchBuildZooResult:
    """The zoo written to `out` (correctness.npy, samples.csv, models.csv, confidence.npy, images.npy) and its
    summary, `summary` (OUT/zoo.json: sizes, the source that ran, notes, accuracies, the settings)."""

    out: Path
    summary: dict[str, Any]

    @property
    def notes(self) -> list[str]:
        """Notes on the data, e.g. that a fallback source ran."""
        return list(self.summary.get("notes", []))


def bench_build_zoo(
    spec: BenchBuildZooSpec, *, progress: Progress = False, on_note: Callable[[str], None] | None = None
) -> BenchBuildZooResult:
    """Train the zoo's models (each kept in OUT/models/ as it finishes) and write its matrices; Ctrl-C keeps the
    finished models for `resume`. `on_note` receives each note on the data as it happens (also in the summary)."""
    from lifelong.commands.device_options import accelerator_from
    from lifelong.sortsearch.zoo import FALLBACK_SOURCE, SourceMissing, ZooSettings, build_zoo

    at_least(spec.models, 1, "--models")
    at_least(spec.test_samples, 1, "--test-samples")
    at_least(spec.seed, 0, "--seed")
    at_least(spec.gpus_per_trial, 0.0, "--gpus-per-trial")
    out = Path(spec.out)
    with toolkit_errors():
        try:
            accelerator_from(spec.device, spec.precision, spec.compile, spec.channels_last)
            settings = ZooSettings(
                n_models=spec.models,
                source=spec.source,
                n_test=spec.test_samples,
                corruptions=_names(spec.corruptions),
                severities=_severities(spec.severities),
                seed=spec.seed,
                source_options={"skip_corrupt": True} if spec.skip_corrupt else None,
                fallback_source=spec.fallback_source,
                preset=spec.preset,
            )
            if spec.executor not in ("local", "ray"):
                raise UsageError(
                    f"unknown --executor {spec.executor!r}{did_you_mean(spec.executor, ('local', 'ray'))}: local or ray"
                )
            _zoo_output(out, spec.resume, spec.overwrite)
            if spec.resume:
                check_recorded(recorded_preset(out), str(spec.preset), f"the zoo in {out}")
            try:
                summary = build_zoo(
                    out,
                    settings,
                    executor=spec.executor,
                    num_cpus=spec.num_cpus,
                    gpus_per_model=spec.gpus_per_trial,
                    progress=progress,
                    on_note=on_note,
                    start_over=spec.overwrite,
                )
            except KeyboardInterrupt:
                finished = any((out / "models").glob("*.npz"))
                raise Interrupted("Finished models are kept: add --resume to continue." if finished else "") from None
        except SourceMissing as exc:
            fallback = f"; or pass --fallback-source {FALLBACK_SOURCE} to build on rendered letters instead"
            raise DataError(f"{exc}{fallback}") from exc
    return BenchBuildZooResult(out, summary)


def recorded_preset(out: Path) -> str | None:
    """The preset a zoo in `out` was built with: its zoo.json's settings, or those its build recorded before
    training (models/settings.json); None for a zoo built before presets were recorded."""
    import json

    for path in (out / "zoo.json", out / "models" / "settings.json"):
        if path.is_file():
            text = json.loads(path.read_text())
            return (text.get("settings", text) or {}).get("preset")
    return None


def _names(text: str | Sequence[str]) -> tuple[str, ...]:
    """Names from a comma-separated list ("noise,blur"), blanks dropped."""
    words = text.split(",") if isinstance(text, str) else text
    return tuple(c.strip() for c in words if c.strip())


def _severities(text: str | Sequence[int]) -> tuple[int, ...]:
    """Severities from a comma-separated list of integers ("1,2,3")."""
    if not isinstance(text, str):
        return tuple(int(s) for s in text)
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise UsageError(f"severities must be comma-separated integers such as 1,2,3, got {text!r}") from None


def _zoo_output(out: Path, resume: bool, overwrite: bool) -> None:
    """Refuse an existing non-empty OUT without --resume or --overwrite (or with both)."""
    _one_of(resume, overwrite)
    if out.exists() and not out.is_dir():
        raise ResumeRefused(f"{out} exists and is not a folder: pick another output folder")
    if out.is_dir() and any(out.iterdir()) and not (resume or overwrite):
        raise ResumeRefused(
            f"{out} already holds files; pass --resume to continue the zoo there (finished models are reused, and "
            "a larger --models grows it), --overwrite to build it again from scratch, or pick another folder"
        )
