"""One complete run as a picklable spec: build stream and learner, run, write the run folder and database.

Executors map `execute` over specs (one per seed), so the same code runs in-process and on Ray workers.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.commands import portable as portable_mode
from lifelong.commands.provenance import run_info
from lifelong.core.errors import ResumeRefused, UsageError
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import Progress
from lifelong.core.streams import Stream
from lifelong.learners import make_learner, run_options
from lifelong.metrics.base import Metric
from lifelong.metrics.registry import make_metrics
from lifelong.metrics.stream import default_metrics
from lifelong.report.plots import plot_accuracy_matrix, plot_run
from lifelong.results.ids import run_id
from lifelong.results.lock import LOCK_FILE, run_folder_lock
from lifelong.results.loggers import LoggerFactory, Loggers, load_loggers
from lifelong.results.runs import RunData
from lifelong.results.store import PREDICTIONS_DIR, ResultsDB, RunFolder, predictions_file
from lifelong.run.checkpoint import CheckpointStore
from lifelong.run.environment import run
from lifelong.suites import classify_stream, get_stream
from lifelong.training.devices import Accelerator, use_accelerator
from lifelong.training.loop import set_torch_threads

CHECKPOINT_FILE = "checkpoint.pkl"


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run; the run id derives from stream, learner, their options, split and seed."""

    stream: str = "mini"
    learner: str = "independent"
    seed: int = 0
    out: str = "runs"
    learner_options: dict[str, Any] = field(default_factory=dict)
    eval_split: str = "dev_test"
    skip_corrupt: bool = False
    resume: bool = False
    overwrite: bool = False
    progress: Progress = False  # a bar over the events (True), a callback(description, done, total), or none
    stop_after: int | None = None  # end after this many events (the run stays resumable)
    threads: int = 1  # torch threads; results are bit-identical for the same seed AND the same thread count
    data_root: str | None = None  # where streams such as nevis-* find their datasets
    allow_missing: bool = False  # run the tasks that have data and record which ones ran
    stream_options: dict[str, Any] = field(default_factory=dict)  # e.g. ablation, shuffle_seed (nevis-*)
    metrics: tuple[str, ...] = ()  # registered metrics (lifelong.metrics entry points) reported beside the defaults
    save_predictions: bool = True  # raw test scores per evaluation under predictions/ (--no-predictions: off)
    device: str = "auto"  # auto (CUDA when available), cpu, cuda, cuda:N; resolved where the run executes
    precision: str = "auto"  # auto (bf16 autocast on CUDA, fp32 on the CPU), fp32 or bf16
    channels_last: bool | None = None  # None: on for CUDA
    compile: bool = False  # torch.compile the models' forward and backward
    loggers: tuple[str, ...] = ()  # registered loggers (lifelong.loggers entry points) fed each record (--log)
    # the same numbers on any x86-64 CPU with AVX2 (--portable; default: LIFELONG_PORTABLE); not in the run id
    portable: bool = field(default_factory=portable_mode.requested)

    @property
    def accelerator(self) -> Accelerator:
        return Accelerator(
            device=self.device, precision=self.precision, channels_last=self.channels_last, compile=self.compile
        )

    @property
    def run_id(self) -> str:
        """Readable parts plus, when options are set, a short hash of the setup (lifelong.results.ids)."""
        return run_id(
            self.stream,
            self.learner,
            self.seed,
            eval_split=self.eval_split,
            stream_options=self.stream_options,
            learner_options=run_options(self.learner, self.learner_options),  # a renamed option: one id either way
        )

    @property
    def folder(self) -> Path:
        return Path(self.out) / self.run_id


def finished_means_exit_0() -> None:
    """Once a command's runs are done and saved, a late Ctrl-C or SIGTERM (while it prints) ends it with exit 0.

    Before this, SIGINT and SIGTERM interrupt the run (exit 130, resumable); after it, there is nothing left to
    interrupt, so the command stops at once and reports success. Call it from the main thread.
    """
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_0)


def _exit_0(signum: int, frame: object) -> None:
    raise SystemExit(0)


class RunExistsError(ResumeRefused, FileExistsError):
    """The run folder already holds a run and neither --resume nor --overwrite was given."""


def execute(spec: RunSpec, metrics: Sequence[Metric] = ()) -> dict:
    """Run `spec` to the end (or to `stop_after`), returning the summary with run id and folder.

    Every run reports the default metrics (lifelong.metrics.stream.default_metrics), then the registered metrics
    named in `spec.metrics`, then `metrics` given here (Metric objects, as dm_nevis's environment receives them).
    Everything that can refuse the run (options, learner, stream, data, label space, an existing run) is checked
    before the run folder is made: a refused run leaves nothing behind.
    """
    if spec.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {spec.threads}")
    out = Path(spec.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file; give the folder that holds (or will hold) run folders")
    check_folder(spec)  # an existing run without --resume/--overwrite, or a resume with another setup
    check_numerics_mode(spec)
    progress, spec = spec.progress, dataclasses.replace(spec, progress=bool(spec.progress))  # recorded as a flag
    set_torch_threads(spec.threads)  # same seed AND same threads give identical numbers
    use_accelerator(spec.accelerator)  # on this machine: a Ray worker without a GPU runs "auto" on its CPU
    stream, learner, registered = _build(spec)
    loggers = load_loggers(spec.loggers)  # an unknown logger, or one whose package is missing
    with run_folder_lock(spec.folder):
        run_metrics = [*default_metrics(stream), *registered, *metrics]
        return _execute_held(spec, stream, learner, run_metrics, loggers, progress)


def check_numerics_mode(spec: RunSpec) -> None:
    """Portable mode on for a portable run (checked: it must have come before numpy and torch computed); a default
    run refused in a process already in portable mode, which cannot switch back (docs/run.md#portable-numbers)."""
    if spec.portable:
        acc = spec.accelerator
        if acc.on_cuda or acc.resolved_precision != "fp32" or acc.compile:
            used = f"--device {acc.device}" if acc.on_cuda else "--compile" if acc.compile else "--precision bf16"
            raise UsageError(
                f"--portable is for CPU runs in fp32 without --compile (GPUs, bf16 kernels and compiled code differ "
                f"by machine), got {used}: add --device cpu and leave --precision and --compile at their defaults"
            )
        portable_mode.ensure()
    elif portable_mode.active():
        raise UsageError(
            "this process computes in portable mode (LIFELONG_PORTABLE=1, or an earlier portable run) and cannot "
            "leave it: run the default mode in a process started without LIFELONG_PORTABLE"
        )


def check_learner(spec: RunSpec) -> None:
    """Refuse an unknown learner or option, or a bad option value, before anything is written (builds it once)."""
    make_learner(spec.learner, **spec.learner_options)


def _build(spec: RunSpec) -> tuple[Stream, Any, list[Metric]]:
    """The run's stream, learner (checked against the stream's label space) and registered metrics."""
    stream = get_stream(
        spec.stream,
        eval_split=spec.eval_split,
        skip_corrupt=spec.skip_corrupt,
        data_root=spec.data_root,
        allow_missing=spec.allow_missing,
        **_stream_options(spec),
    )
    learner = make_learner(spec.learner, **spec.learner_options)
    check_tasks = getattr(learner, "check_tasks", None)
    if check_tasks is not None:
        check_tasks([t.key for t in stream.tasks])  # a learner that cannot learn this stream says so now
    return stream, learner, list(make_metrics(spec.metrics, stream))


def _execute_held(
    spec: RunSpec,
    stream: Stream,
    learner: Any,
    run_metrics: list[Metric],
    logger_factories: dict[str, LoggerFactory],
    progress: Progress,
) -> dict:
    """`execute` while this process holds the run folder's lock."""
    folder_path = spec.folder
    checkpoint = CheckpointStore(folder_path / CHECKPOINT_FILE)
    _prepare_folder(spec, folder_path)
    folder = RunFolder(folder_path)
    db = ResultsDB(Path(spec.out))
    resuming = spec.resume and checkpoint.exists()
    db.start_run(spec.run_id, stream.name, learner.name, spec.seed, str(folder_path), dataclasses.asdict(spec))
    unlogged: list[dict] = []  # records a crash kept from events.jsonl, and so from the loggers
    if resuming:
        unlogged = _realign_records(folder, db, spec.run_id, checkpoint.load().records)
    else:
        db.truncate_events(spec.run_id, 0)  # a run started over (--overwrite) keeps no stale events
        folder.write_json("run.json", run_info(spec, stream))
    loggers = Loggers()

    def sink(record: dict) -> None:
        folder.append_record(record)
        db.add_event(spec.run_id, record)
        loggers.log(record)

    def save_predictions(record: dict, scores: np.ndarray, labels: np.ndarray) -> None:
        """predictions/event<index>-<task>.npz: the raw test scores (float32) and labels, as the reference keeps."""
        buffer = io.BytesIO()
        np.savez(buffer, scores=scores.astype(np.float32), labels=labels)  # float scores barely compress
        atomic_write_bytes(folder_path / PREDICTIONS_DIR / predictions_file(record), buffer.getvalue())

    try:
        if logger_factories:  # they continue after the records they already saw (those of a resumed run)
            records = folder.read_records()
            seen = RunData(folder_path, folder.read_json("run.json"), records[: len(records) - len(unlogged)])
            loggers = Loggers.open(logger_factories, seen)
            for record in unlogged:
                loggers.log(record)
        result = run(
            learner,
            stream,
            run_metrics,
            checkpoint=checkpoint,
            seed=spec.seed,
            resume=spec.resume,
            run_id=spec.run_id,
            on_record=sink,
            on_predictions=save_predictions if spec.save_predictions else None,
            progress=progress,
            stop_after=spec.stop_after,
        )
    except KeyboardInterrupt:
        db.finish_run(spec.run_id, "interrupted", None)
        loggers.close("interrupted", quiet=True)
        raise
    except BaseException as exc:
        db.finish_run(spec.run_id, "failed", {"error": f"{type(exc).__name__}: {exc}"})
        loggers.close("failed", quiet=True)
        raise
    finished = result.summary["events_done"] == result.summary["events_total"]
    summary = {
        **result.summary,
        "run_id": spec.run_id,
        "seed": spec.seed,
        "path": str(folder_path),
        "timing": result.timing,
    }
    summary["tasks_ran"] = [t.key.uid for t in stream.tasks]
    summary["tasks_missing"] = list(getattr(stream, "missing_tasks", ()))
    folder.write_json("summary.json", summary)
    if finished:
        summary["plots"] = [str(p) for p in plot_run(_own_task_records(result.records), folder_path)]
        if summary.get("accuracy_matrix") is not None:
            summary["plots"].append(str(_write_matrix(folder, summary, stream)))
    db.finish_run(spec.run_id, "finished" if finished else "interrupted", summary)
    loggers.close("finished" if finished else "interrupted")  # last: a logger's failure cannot spoil the run's files
    summary["records"] = result.records
    return summary


def _stream_options(spec: RunSpec) -> dict[str, Any]:
    """The spec's stream options; temporal (CLEAR) streams split their buckets with the run's seed by default."""
    options = dict(spec.stream_options)
    if classify_stream(spec.stream).is_temporal:
        options.setdefault("split_seed", spec.seed)
    return options


def _own_task_records(records: list[dict]) -> list[dict]:
    """Train records and the predictions on the task just trained (the diagonal of an accuracy matrix)."""
    return [r for r in records if r["type"] == "train" or r.get("after_task_index") in (None, r.get("task_index"))]


def _write_matrix(folder: RunFolder, summary: dict, stream: Stream) -> Path:
    """accuracy_matrix.csv and its heatmap accuracy_matrix.png in the run folder."""
    labels = [t.key.uid for t in stream.tasks]
    rows = ["after," + ",".join(labels)]
    for label, row in zip(labels, summary["accuracy_matrix"], strict=True):
        rows.append(label + "," + ",".join("" if v is None else f"{v:.6f}" for v in row))
    folder.write_text("accuracy_matrix.csv", "\n".join(rows) + "\n")
    matrix = [[float("nan") if v is None else v for v in row] for row in summary["accuracy_matrix"]]
    title = f"{summary['run_id']} ({stream.protocol} protocol)"
    return plot_accuracy_matrix(matrix, folder.path / "accuracy_matrix.png", labels=labels, title=title)


def check_folder(spec: RunSpec) -> bool:
    """Whether `spec` continues the checkpoint in its folder; raises RunExistsError or a config mismatch first.

    Writes nothing: a driver checks its own folder before it sends the run to a Ray worker.
    """
    folder = spec.folder
    if spec.overwrite or not (folder / CHECKPOINT_FILE).exists():
        return False
    if not spec.resume:
        raise RunExistsError(
            f"{folder} already holds run {spec.run_id!r}; pass --resume to continue it, --overwrite to start "
            "over, or --out to write elsewhere"
        )
    _check_same_config(spec, folder)
    return True


def _prepare_folder(spec: RunSpec, folder: Path) -> None:
    if not folder.exists():
        return
    if spec.overwrite:  # empty the folder, keeping the lock this process holds
        for entry in folder.iterdir():
            if entry.name == LOCK_FILE:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        return
    check_folder(spec)


# What makes two runs the same run: a resume must not change any of these (the rest says where and how to run).
SAME_RUN_FIELDS = (
    "stream",
    "learner",
    "seed",
    "learner_options",
    "stream_options",
    "eval_split",
    "skip_corrupt",
    "threads",
    "allow_missing",
    "metrics",
    "precision",
    "compile",
    "channels_last",
    "portable",
)  # the speed options and portable mode change the numbers; not the device: a GPU run may resume on a CPU and back


def _check_same_config(spec: RunSpec, folder: Path) -> None:
    """Refuse to resume with a config that differs from the run's run.json, naming every difference."""
    try:
        stored = RunFolder(folder).read_json("run.json").get("config", {})
    except (FileNotFoundError, ValueError):
        return  # no run.json yet: the run was killed before writing it, nothing to compare
    given = dataclasses.asdict(spec)
    defaults = dataclasses.asdict(RunSpec(portable=False))  # a run.json without the field was made before the mode
    differ = []
    for name in SAME_RUN_FIELDS:
        before = stored.get(name, defaults[name])
        now = given[name]
        if name == "learner_options":  # a renamed option given by either name is the same run
            before, now = run_options(spec.learner, before), run_options(spec.learner, now)
        if isinstance(now, tuple):
            now, before = list(now), list(before)
        if before != now:
            differ.append(f"{name} {before!r} -> {now!r}")
    if differ:
        raise ResumeRefused(
            f"cannot resume {spec.run_id!r} with a different setup ({'; '.join(differ)}): the run's run.json "
            "records the original; resume with the same options, or start over with --overwrite"
        )


def _realign_records(folder: RunFolder, db: ResultsDB, run_id: str, records: list[dict]) -> list[dict]:
    """Make events.jsonl and the database hold exactly the checkpoint's records (a crash may leave them apart).

    Returns the records appended to events.jsonl here: a crash kept them from the sink, and so from the loggers.
    """
    on_disk = folder.read_records()
    if len(on_disk) > len(records):
        folder.truncate_records(len(records))
        on_disk = on_disk[: len(records)]
    appended = records[len(on_disk) :]
    for record in appended:
        folder.append_record(record)
    db.truncate_events(run_id, len(records))
    for record in records:
        db.add_event(run_id, record)
    return appended
