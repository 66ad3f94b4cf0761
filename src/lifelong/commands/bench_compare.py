"""`lifelong bench compare` from Python: accuracy estimators from few samples, side by side on the same draws.

Two modes. With `rank` and `evaluate` (`--rank RANK.npy --eval EVAL.npy`), every method is fitted on RANK's rows
(the source models) and estimates each EVAL row's accuracy from its outcomes on the method's `budget` samples, drawn
with `seed`; EVAL's full rows give the truth. With `zoo` (or `matrix`, `models`, `samples`), the protocol: the
zoo's models split into sources and targets (interpolation, extrapolation, shift), `seeds` seeds each, every budget
and method; records go to OUT/records.jsonl as they finish (`resume` continues), the table to OUT/table.json, the
settings (with the preset) to OUT/settings.json. What an estimator needs (`min_sources`) is checked before any work.
Nothing here prints: `bench_console` renders the result as the command prints it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lifelong.commands.bench_inputs import at_least, parse_budgets, toolkit_errors
from lifelong.commands.outputs import SETTINGS_FILE  # OUT/settings.json: what the comparison was started with
from lifelong.commands.presets import apply_preset, check_recorded
from lifelong.core.errors import Interrupted, ResumeRefused, UsageError
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress, progress_bar

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class BenchCompareSpec:
    """`lifelong bench compare`: `rank` + `evaluate` (`--rank`, `--eval`) for one budget and seed, or the protocol on
    `zoo` (or `matrix`, with `models` for the shift split's `family` column and `samples` for each sample's domain)
    into `out`. `methods`: names or a comma-separated list (default: every registered estimator). `preset` (quick or
    full, None: full) sets `seeds` and `budgets` where they are None (`commands.presets`), recorded in
    `out`/settings.json: `resume` refuses another."""

    rank: str | Path | None = None
    evaluate: str | Path | None = None
    budget: int = 100
    seed: int = 0
    zoo: str | Path | None = None
    matrix: str | Path | None = None
    models: str | Path | None = None
    samples: str | Path | None = None
    splits: str | Sequence[str] = "interpolation,extrapolation,shift"
    seeds: int | None = None
    budgets: str | Sequence[int] | None = None
    methods: str | Sequence[str] | None = None
    family: str = "architecture"
    out: str | Path | None = None
    resume: bool = False
    overwrite: bool = False
    preset: str | None = None

    def __post_init__(self) -> None:
        apply_preset(self, "bench compare")


@dataclass(frozen=True)
class BenchCompareResult:
    """What a comparison found. `--rank`/`--eval`: `single`, the interface's data (budget, seed, per method its
    estimates, low, high, mae, seconds, peak_mib; the truth), fitted on `sources` models. The protocol: `rows` (per
    split, budget and method: MAE and its interval, ratio to random-mean, RMSE, tau, coverage, ...) and `paired`
    (`lifelong` against each method), also in `out`/table.json beside the records."""

    single: dict[str, Any] | None = None
    sources: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    paired: list[dict[str, Any]] = field(default_factory=list)
    out: Path | None = None

    def frame(self) -> pd.DataFrame:
        """One row per method (`--rank`/`--eval`: method, mae, seconds, peak_mib) or per protocol table row."""
        import pandas as pd

        if self.single is None:
            return pd.DataFrame(self.rows)
        keep = ("mae", "seconds", "peak_mib")
        return pd.DataFrame(
            [{"method": name} | {k: row[k] for k in keep} for name, row in self.single["methods"].items()]
        )


def bench_compare(spec: BenchCompareSpec, *, progress: Progress = False) -> BenchCompareResult:
    """Run the comparison the spec asks for. `progress` advances once per method (`--rank`/`--eval`) or per record
    of the protocol, its description naming what finished (a callback's: with the seed and its mean absolute
    error); Ctrl-C in the protocol keeps the finished records for `resume`."""
    at_least(spec.budget, 1, "--budget")
    at_least(spec.seed, 0, "--seed")
    at_least(int(spec.seeds or 0), 1, "--seeds")
    with toolkit_errors():
        names = _methods(spec.methods)
        if spec.rank is not None or spec.evaluate is not None:
            if spec.rank is None or spec.evaluate is None:
                raise UsageError("--rank and --eval go together")
            return _single_run(Path(spec.rank), Path(spec.evaluate), spec.budget, spec.seed, names, progress)
        if spec.out is None:
            raise UsageError("the protocol (--zoo or --matrix) writes its records and table to --out DIR")
        out = Path(spec.out)
        if spec.resume and spec.overwrite:
            raise UsageError("--resume and --overwrite exclude each other: give one of them")
        if (out / "records.jsonl").exists() and not (spec.resume or spec.overwrite):
            raise ResumeRefused(f"{out} holds a comparison: --resume continues it, --overwrite starts again")
        splits = spec.splits.split(",") if isinstance(spec.splits, str) else spec.splits
        split_names = [w.strip() for w in splits if w.strip()]
        inputs = _zoo_inputs(spec.zoo, spec.matrix, spec.models, spec.samples)
        budgets = parse_budgets(spec.budgets or "")
        settings = {"preset": spec.preset, "splits": split_names, "seeds": spec.seeds, "budgets": budgets}
        settings |= {"methods": names, "family": spec.family}
        if spec.resume:
            check_recorded(_recorded(out).get("preset"), str(spec.preset), f"the comparison in {out}")
        return _protocol_run(inputs, settings, out, spec.resume, progress)


def _recorded(out: Path) -> dict[str, Any]:
    """The settings a comparison in `out` recorded ({} for one made before they were recorded)."""
    path = out / SETTINGS_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _methods(given: str | Sequence[str] | None) -> list[str]:
    """The estimators' names: every registered one (random-mean first) for none or "all", else the given ones."""
    from lifelong.core.suggest import did_you_mean
    from lifelong.sortsearch.estimators.base import estimator_names

    known = estimator_names()
    if not given or given == "all":
        return sorted(known, key=lambda name: (name != "random-mean", name))
    words = given.split(",") if isinstance(given, str) else given
    names = [w.strip() for w in words if w.strip()]
    for name in names:
        if name not in known:
            raise UsageError(f"unknown method {name!r}{did_you_mean(name, known)}; the methods: {', '.join(known)}")
    return names


def _mae(record: Any) -> float:
    """A record's mean absolute error over its target models."""
    return float(np.mean(np.abs(np.subtract(record.estimate, record.truth))))


def _single_run(
    rank: Path, evaluate: Path, budget: int, seed: int, methods: list[str], progress: Progress
) -> BenchCompareResult:
    """Every method fitted on RANK, estimating EVAL's rows at one budget and seed."""
    from lifelong.sortsearch.estimators.protocol import Split, run_one
    from lifelong.sortsearch.experiment import load_matrix, matrix_size

    source, target = load_matrix(rank), load_matrix(evaluate)
    if source.shape[1] != target.shape[1]:
        raise UsageError(
            f"--rank holds {matrix_size(source.shape)} but --eval {matrix_size(target.shape)}: the same samples "
            "(columns) are needed"
        )
    matrix = np.concatenate([np.asarray(source), np.asarray(target)]).astype(np.uint8, copy=False)
    m = source.shape[0]
    split = Split("given", int(seed), np.arange(m), np.arange(m, matrix.shape[0]), "--rank")
    check_sources([split], methods, matrix.shape[0])
    out: dict[str, Any] = {"budget": int(budget), "seed": int(seed), "methods": {}}
    with progress_bar(progress, len(methods), description="compare") as advance:
        for method in methods:
            record = run_one(matrix, split, int(budget), method)
            out["methods"][method] = {
                "estimates": record.estimate,
                "low": record.low,
                "high": record.high,
                "mae": _mae(record),
                "seconds": record.seconds,
                "peak_mib": record.peak_mib,
            }
            out["truth"] = record.truth
            advance(1, f"{method}: mean abs error {100 * _mae(record):.2f}%")
    return BenchCompareResult(single=out, sources=m)


def check_sources(splits: Sequence[Any], methods: list[str], models: int) -> None:
    """Refuse, before any work, a split without targets and methods that need more source models than a split has
    (each estimator's `min_sources`): a UsageError naming the methods, what they need and what to give instead."""
    from lifelong.sortsearch.estimators.base import min_sources

    for split in splits:
        if split.target.size == 0:
            raise UsageError(f"the {split.kind} split of {models} models has no target models: give more models")
    need = {name: min_sources(name) for name in methods}
    fewest = min(splits, key=lambda split: split.source.size)
    short = [name for name in methods if need[name] > fewest.source.size]
    if not short:
        return
    needs = "; ".join(
        f"{_names(group)} {'needs' if len(group) == 1 else 'need'} at least {least} source models"
        for least in sorted({need[name] for name in short}, reverse=True)
        for group in [[name for name in short if need[name] == least]]
    )
    kept = [name for name in methods if name not in short]
    if fewest.kind == "given":
        where, fixes = "--rank holds", ["give --rank more models (rows)"]
    else:
        where = f"the {fewest.kind} split ({fewest.note}) leaves"
        fixes = ["give a zoo of more models (`lifelong bench build-zoo --models N`, or --matrix with more rows)"]
    if kept:
        fixes.append(f"leave {'it' if len(short) == 1 else 'them'} out with --methods {','.join(kept)}")
    kinds = list(dict.fromkeys(split.kind for split in splits))
    enough = [k for k in kinds if all(s.source.size >= need[n] for s in splits if s.kind == k for n in short)]
    if enough:
        fixes.append(f"keep to --splits {','.join(enough)}")
    fixes[-1] = f"or {fixes[-1]}" if len(fixes) > 1 else fixes[-1]
    raise UsageError(
        f"too few source models: {needs}, but {where} {fewest.source.size} (of {models} models); {', '.join(fixes)}"
    )


def _names(names: list[str]) -> str:
    """The names as "a", "a and b" or "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _zoo_inputs(
    zoo: str | Path | None, matrix: str | Path | None, models: str | Path | None, samples: str | Path | None
) -> tuple[Path, Path | None, Path | None]:
    """(matrix, models.csv, samples.csv): the zoo's files, or those given."""
    if zoo is not None:
        zoo = Path(zoo)
        matrix, models, samples = zoo / "correctness.npy", zoo / "models.csv", zoo / "samples.csv"
    if matrix is None:
        raise UsageError("give --zoo DIR, or --matrix FILE (with --models and --samples for the shift split)")
    return Path(matrix), None if models is None else Path(models), None if samples is None else Path(samples)


def _column(path: Path | None, column: str, rows: int, what: str) -> list[str] | None:
    """The `column` of a CSV of one row per matrix row (or column), or None without the file."""
    if path is None or not path.exists():
        return None
    with path.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    if table and column not in table[0]:
        raise ValueError(f"{path} has no column {column!r} ({what}); its columns: {', '.join(table[0])}")
    if len(table) != rows:
        raise ValueError(f"{path} lists {len(table)} rows; the matrix has {rows}")
    return [row[column] for row in table]


def _protocol_run(
    inputs: tuple[Path, Path | None, Path | None], settings: dict[str, Any], out: Path, resume: bool, progress: Progress
) -> BenchCompareResult:
    """The protocol of `settings` (preset, splits, seeds, budgets, methods, family; recorded in OUT/settings.json
    before the first record): records appended to OUT/records.jsonl as they finish, the table to OUT/table.json."""
    from lifelong.sortsearch.estimators.protocol import make_splits, run_comparison
    from lifelong.sortsearch.estimators.scoring import paired, summarize
    from lifelong.sortsearch.experiment import load_matrix

    splits, seeds, budgets = settings["splits"], settings["seeds"], settings["budgets"]
    methods, family = settings["methods"], settings["family"]
    matrix_path, models_path, samples_path = inputs
    matrix = np.ascontiguousarray(load_matrix(matrix_path))
    families = _column(models_path, family, matrix.shape[0], "the model family of the shift split")
    domains = _column(samples_path, "domain", matrix.shape[1], "each sample's domain")
    groups = None if domains is None else np.unique(domains, return_inverse=True)[1]
    if "shift" in splits and families is None:
        raise UsageError("the shift split needs --models (or --zoo) with each model's family column")
    if min(budgets) < 1 or max(budgets) > matrix.shape[1]:
        raise UsageError(f"budgets must lie between 1 and the {matrix.shape[1]} samples")
    all_splits = make_splits(matrix.mean(axis=1), splits, seeds, families)
    check_sources(all_splits, methods, matrix.shape[0])
    out.mkdir(parents=True, exist_ok=True)
    if not resume or not (out / SETTINGS_FILE).exists():
        atomic_write_bytes(out / SETTINGS_FILE, json.dumps(settings, indent=1).encode())
    total = len(all_splits) * len(budgets) * len(methods)
    records_path = out / "records.jsonl"
    with progress_bar(progress, total, description="compare") as advance:

        def finished(record: Any) -> None:
            if not callable(progress):  # the bar's column: where the protocol is, whole in 40 characters
                advance(1, f"{record.split} n'={record.budget} {record.method}")
                return
            what = f"{record.split} seed {record.seed} n'={record.budget} {record.method}"
            advance(1, f"{what}: mean abs error {100 * _mae(record):.2f}%")

        try:
            records = run_comparison(
                matrix, all_splits, budgets, methods, records_path, resume=resume, groups=groups, on_record=finished
            )
        except KeyboardInterrupt:
            raise Interrupted(f"Finished records are kept in {records_path}: add --resume to continue.") from None
    rows = summarize(records)
    versus = paired(records, "lifelong") if "lifelong" in methods else []
    (out / "table.json").write_text(json.dumps({"rows": rows, "paired": versus}, indent=1))
    return BenchCompareResult(rows=rows, paired=versus, out=out)
