"""Benchmark the data pipeline and the environment's overhead, each against a baseline measured in the same run.

1. Images per second a learner pays per epoch: `ArrayDataset.batches(shuffle=True)` + `prepare_batch` (without and
   with augmentation) against plain NumPy (permutation, fancy indexing, float32, [-1, 1], NCHW, torch.from_numpy)
   and a per-image augmentation loop; and `build_task_splits` (dedup + split + resize) against a per-image
   hashlib + Pillow loop with a NumPy permutation split. Ratios are lifelong / baseline (> 1: lifelong is faster).
2. The share of wall time a run spends outside the learner's train/predict, for `environment.run` (with a
   checkpoint store) and `runner.execute` (run folder, SQLite, plots); the target is under 5 %.

Torch runs with one thread (`--threads N` to change), for the pipeline and the
learner alike. Run: python benchmarks/bench_pipeline.py [--quick] [--threads N] [--json PATH]
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import json
import math
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from lifelong.commands.runner import RunSpec, execute
from lifelong.core.datasets import ArrayDataset
from lifelong.core.tasks import TaskKey, TaskKind
from lifelong.data.build import build_task_splits
from lifelong.data.images import resize_all
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources import load_source
from lifelong.learners.independent import IndependentLearner
from lifelong.run.checkpoint import Checkpoint, CheckpointStore
from lifelong.run.environment import run
from lifelong.suites import get_stream
from lifelong.training.flops import count_training_flops
from lifelong.training.inputs import prepare_batch
from lifelong.training.loop import set_torch_threads
from lifelong.training.models import make_model

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
OVERHEAD_TARGET = 0.05
SPLIT_PERCENTS = {"train": 56, "dev": 12, "dev_test": 12, "test": 20}  # no official split (spec section 5)
CROP_AREA = (0.08, 1.0)
LOG_RATIO = (math.log(3 / 4), math.log(4 / 3))


# -- data ------------------------------------------------------------------------------------------------------


def load_images(source: str, n: int) -> tuple[str, np.ndarray, np.ndarray]:
    """`n` real 28x28 grayscale images (Fashion-MNIST where installed, else the builtin letters) and labels."""
    if source == "auto":
        source = "fashion-mnist" if FASHION_MNIST_DIR.is_dir() else "letters"
    if source == "fashion-mnist":
        labeled = load_source("fashion-mnist")
    else:
        labeled = load_source("builtin:letters", n_per_class=-(-n // 10), seed=0)
    if len(labeled) < n:
        raise SystemExit(f"source {source!r} has {len(labeled)} images, fewer than --images {n}; lower --images")
    images = np.ascontiguousarray(np.asarray(labeled.images)[:n])
    return source, images, np.ascontiguousarray(labeled.labels[:n])


# -- timing ----------------------------------------------------------------------------------------------------


def interleaved(variants: dict[str, Callable[[int], object]], repeats: int) -> dict[str, list[float]]:
    """Seconds of each variant per repeat, alternating variants so that load from other users hits all alike."""
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn(r)
            seconds[name].append(time.perf_counter() - start)
    return seconds


def row(what: str, n: int, ours: list[float], base: list[float], baseline: str) -> dict:
    ours_rate, base_rate = n / statistics.median(ours), n / statistics.median(base)
    return {
        "what": what,
        "images": n,
        "lifelong_images_per_s": ours_rate,
        "baseline_images_per_s": base_rate,
        "ratio": ours_rate / base_rate,
        "baseline": baseline,
        "lifelong_seconds": ours,
        "baseline_seconds": base,
    }


# -- 1a. batches -> model input --------------------------------------------------------------------------------


def lifelong_epoch(data: ArrayDataset, batch_size: int, seed: int, generator: torch.Generator | None) -> int:
    """One epoch as the training loop reads it: shuffled batches, uint8 NHWC -> float NCHW (augmented if generator)."""
    seen = 0
    for batch in data.batches(batch_size, shuffle=True, seed=seed):
        x = prepare_batch(batch.images, channels=3, generator=generator)
        torch.from_numpy(batch.labels)  # the targets, as the loop converts them
        seen += x.shape[0]
    return seen


def numpy_batches(images: np.ndarray, labels: np.ndarray, batch_size: int, seed: int):
    """The baseline: permutation, fancy indexing, float32 in [-1, 1], NCHW, torch.from_numpy."""
    order = np.random.default_rng(seed).permutation(len(images))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        x = images[idx].astype(np.float32)
        x /= 127.5
        x -= 1.0
        yield torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(labels[idx])


def numpy_epoch(images: np.ndarray, labels: np.ndarray, batch_size: int, seed: int) -> int:
    return sum(x.shape[0] for x, _ in numpy_batches(images, labels, batch_size, seed))


def per_image_augment_epoch(images: np.ndarray, labels: np.ndarray, batch_size: int, seed: int) -> int:
    """Naive augmentation baseline: the NumPy batches, then a random resized crop + mirror one image at a time."""
    rng = np.random.default_rng(seed + 1)
    seen = 0
    for x, _ in numpy_batches(images, labels, batch_size, seed):
        _, _, h, w = x.shape
        out = torch.empty_like(x)
        for i in range(x.shape[0]):
            area = h * w * rng.uniform(*CROP_AREA)
            aspect = math.exp(rng.uniform(*LOG_RATIO))
            ch = min(h, max(1, round(math.sqrt(area / aspect))))
            cw = min(w, max(1, round(math.sqrt(area * aspect))))
            top, left = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
            crop = F.interpolate(x[i : i + 1, :, top : top + ch, left : left + cw], size=(h, w), mode="bilinear")
            out[i] = crop[0].flip(-1) if rng.random() < 0.5 else crop[0]
        seen += out.shape[0]
    return seen


def bench_batches(images: np.ndarray, labels: np.ndarray, side: int, batch_size: int, repeats: int) -> list[dict]:
    task = TaskKey("bench", TaskKind.MULTI_CLASS, int(labels.max()) + 1)
    data = ArrayDataset(task, "train", images, labels)
    gen = torch.Generator()

    # Same seed, same order: the first batches must be identical, else the comparison is not like for like.
    ours = prepare_batch(next(data.batches(batch_size, shuffle=True, seed=0)).images, channels=3)
    base, _ = next(numpy_batches(images, labels, batch_size, 0))
    if not torch.equal(ours, base):
        raise SystemExit(f"{side}x{side}: lifelong and baseline batches differ (max {(ours - base).abs().max():.3g})")

    warm = slice(0, 2 * batch_size)  # first calls of torch kernels allocate and dispatch; keep them out
    small = ArrayDataset(task, "train", images[warm], labels[warm])
    lifelong_epoch(small, batch_size, 0, gen.manual_seed(0))
    per_image_augment_epoch(images[warm], labels[warm], batch_size, 0)

    plain = interleaved(
        {
            "lifelong": lambda r: lifelong_epoch(data, batch_size, r, None),
            "numpy": lambda r: numpy_epoch(images, labels, batch_size, r),
        },
        repeats,
    )
    augmented = interleaved(
        {
            "lifelong": lambda r: lifelong_epoch(data, batch_size, r, gen.manual_seed(r)),
            "numpy": lambda r: per_image_augment_epoch(images, labels, batch_size, r),
        },
        repeats,
    )
    n, shape = len(images), f"{side}x{side}x3"
    return [
        row(f"{shape} batches + prepare_batch", n, plain["lifelong"], plain["numpy"], "numpy batches"),
        row(f"{shape} ... + augment", n, augmented["lifelong"], augmented["numpy"], "numpy + per-image crop"),
    ]


# -- 1b. build_task_splits -------------------------------------------------------------------------------------


def naive_build(images: np.ndarray, labels: np.ndarray, size: int, seed: int) -> dict[str, tuple]:
    """Baseline: md5 per image (first copy kept), Pillow resize per image in a loop, permutation split."""
    first: set[bytes] = set()
    kept = []
    for i in range(len(images)):
        digest = hashlib.md5(images[i].tobytes()).digest()
        if digest not in first:
            first.add(digest)
            kept.append(i)
    resized = np.empty((len(kept), size, size, 3), dtype=np.uint8)
    for j, i in enumerate(kept):
        image = images[i] if images.shape[-1] == 3 else images[i, :, :, 0]
        out = np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR))
        resized[j] = out if out.ndim == 3 else out[:, :, None]
    kept_labels = labels[np.asarray(kept)]
    order = np.random.default_rng(seed).permutation(len(kept))
    cuts = (np.cumsum(list(SPLIT_PERCENTS.values())) * len(kept) + 50) // 100
    parts = np.split(order, cuts[:-1])
    return {name: (resized[idx], kept_labels[idx]) for name, idx in zip(SPLIT_PERCENTS, parts, strict=True)}


def bench_build(images: np.ndarray, labels: np.ndarray, sizes: list[int], repeats: int) -> list[dict]:
    num_classes = int(labels.max()) + 1
    names = tuple(str(c) for c in range(num_classes))
    key = TaskKey("bench", TaskKind.MULTI_CLASS, num_classes, names)
    labeled = LabeledImages(images, labels, [f"bench[{i}]" for i in range(len(images))], names, TaskKind.MULTI_CLASS)
    rows = []
    for size in sizes:
        # Both must keep the same images and produce the same pixels (splits differ only in which rows go where).
        ours = build_task_splits(key, labeled, resolution=size, channels=3, seed=0)
        base = naive_build(images, labels, size, 0)
        ours_sum = sum(int(ours.get(s).images.sum(dtype=np.int64)) for s in SPLIT_PERCENTS)
        base_sum = sum(int(v[0].sum(dtype=np.int64)) for v in base.values())
        ours_n, base_n = sum(len(ours.get(s)) for s in SPLIT_PERCENTS), sum(len(v[0]) for v in base.values())
        if (ours_n, ours_sum) != (base_n, base_sum):
            raise SystemExit(
                f"build to {size}: lifelong kept {ours_n} (pixel sum {ours_sum}), baseline {base_n} ({base_sum})"
            )
        seconds = interleaved(
            {
                "lifelong": lambda r, s=size: build_task_splits(key, labeled, resolution=s, channels=3, seed=r),
                "naive": lambda r, s=size: naive_build(images, labels, s, r),
            },
            repeats,
        )
        what = f"build_task_splits -> {size}x{size}x3"
        rows.append(row(what, len(images), seconds["lifelong"], seconds["naive"], "md5 + Pillow loop"))
        rows[-1]["kept"] = ours_n
    return rows


# -- 2. environment overhead -----------------------------------------------------------------------------------


class TimedCheckpointStore(CheckpointStore):
    """A checkpoint store that adds up the time and bytes of its saves."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.seconds = 0.0
        self.saves = 0

    def save(self, checkpoint: Checkpoint) -> None:
        start = time.perf_counter()
        super().save(checkpoint)
        self.seconds += time.perf_counter() - start
        self.saves += 1


def warm_up_learner() -> None:
    """Pay torch's one-time costs (FlopCounterMode's imports, first kernels) before either run is timed."""
    model = make_model("resnet_mini", 2, seed=0)
    count_training_flops(model, (torch.zeros(4, 3, 16, 16), torch.zeros(4, dtype=torch.int64)))


def bench_run(epochs: int | None, stop_after: int | None, workdir: Path) -> dict:
    stream = get_stream("mini")
    store = TimedCheckpointStore(workdir / "checkpoint.pkl")
    learner = IndependentLearner() if epochs is None else IndependentLearner(epochs=epochs)
    result = run(learner, stream, checkpoint=store, stop_after=stop_after)
    timing = result.timing
    return {
        "what": "environment.run + checkpoint",
        "events": len(result.records),
        "total_seconds": timing["total_seconds"],
        "learner_seconds": timing["learner_seconds"],
        "data_seconds": timing["data_seconds"],
        "overhead_seconds": timing["overhead_seconds"],
        "share": timing["overhead_seconds"] / timing["total_seconds"],
        "data_share": timing["data_seconds"] / timing["total_seconds"],
        "checkpoint_seconds": store.seconds,
        "checkpoint_saves": store.saves,
        "checkpoint_bytes": store.path.stat().st_size,
    }


def bench_execute(epochs: int | None, stop_after: int | None, threads: int, workdir: Path, profile: bool) -> dict:
    options = {} if epochs is None else {"epochs": epochs}
    spec = RunSpec(stream="mini", learner="independent", out=str(workdir), learner_options=options)
    spec = dataclasses.replace(spec, stop_after=stop_after, threads=threads)  # execute pins the thread count
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    summary = execute(spec)
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - start
    learner = sum(r["seconds"] for r in summary["records"])
    data = summary["timing"]["data_seconds"]
    if profiler is not None:
        print("\ncProfile of execute(), functions of lifelong.run / lifelong.report, by cumulative time:")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(r"lifelong[/\\](run|report)", 25)
    return {
        "what": "runner.execute(RunSpec)",
        "events": len(summary["records"]),
        "total_seconds": wall,
        "learner_seconds": learner,
        "data_seconds": data,
        "overhead_seconds": wall - learner - data,
        "share": (wall - learner - data) / wall,
        "data_share": data / wall,
        "inside_run_seconds": summary["timing"]["overhead_seconds"],
        "outside_run_seconds": wall - summary["timing"]["total_seconds"],
        "plots": len(summary.get("plots", [])),
    }


# -- report ----------------------------------------------------------------------------------------------------


def print_throughput(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    print(f"{'':40} {'lifelong img/s':>15} {'baseline img/s':>15} {'ratio':>7}  baseline")
    for r in rows:
        print(
            f"{r['what']:40} {r['lifelong_images_per_s']:>15,.0f} {r['baseline_images_per_s']:>15,.0f} "
            f"{r['ratio']:>6.2f}x  {r['baseline']}"
        )


def print_overhead(rows: list[dict], epochs: int | None) -> None:
    config = "default config" if epochs is None else f"epochs={epochs}"
    print(f"\nEnvironment overhead: mini stream, IndependentLearner({config}); target < {OVERHEAD_TARGET:.0%}")
    print("(share = time outside learner train/predict and outside task loading; data loading shown apart)")
    print(
        f"{'':32} {'events':>6} {'total s':>9} {'learner s':>10} {'data s':>7} {'overhead s':>11} {'share':>7}"
        f" {'data':>6}  verdict"
    )
    for r in rows:
        verdict = "PASS" if r["share"] < OVERHEAD_TARGET else "FAIL"
        print(
            f"{r['what']:32} {r['events']:>6} {r['total_seconds']:>9.2f} {r['learner_seconds']:>10.2f} "
            f"{r['data_seconds']:>7.2f} {r['overhead_seconds']:>11.2f} {r['share']:>6.2%} "
            f"{r['data_share']:>6.1%}  {verdict}"
        )
        r["verdict"] = verdict
    first, second = rows
    print(
        f"  run(): {first['checkpoint_saves']} checkpoint saves took {first['checkpoint_seconds']:.2f} s "
        f"(last {first['checkpoint_bytes'] / 1e6:.1f} MB)"
    )
    print(
        f"  execute(): {second['inside_run_seconds']:.2f} s inside run() (checkpoint, events.jsonl, SQLite, metrics), "
        f"{second['outside_run_seconds']:.2f} s outside it (imports, stream, folder, run.json, {second['plots']} plots)"
    )


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat, the first 2 events only")
    parser.add_argument("--images", type=int, help="images per pipeline measurement (default 20000; quick 3000)")
    parser.add_argument("--repeats", type=int, help="timed epochs per variant, median reported (default 3; quick 1)")
    parser.add_argument("--batch-size", type=int, default=128, help="batch size (IndependentLearner's largest)")
    parser.add_argument("--source", choices=("auto", "fashion-mnist", "letters"), default="auto")
    parser.add_argument("--epochs", type=int, default=None, help="IndependentLearner epochs (default: its config)")
    parser.add_argument("--events", type=int, help="stop the runs after this many events (default all; quick 2)")
    parser.add_argument("--skip-pipeline", action="store_true", help="only measure the environment overhead")
    parser.add_argument("--skip-overhead", action="store_true", help="only measure the data pipeline")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: torch's one thread per core stalls badly when other processes share "
        "the cores)",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile execute() and print where its time goes")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this path")
    args = parser.parse_args(argv)
    n = args.images or (3000 if args.quick else 20000)
    repeats = args.repeats or (1 if args.quick else 3)
    stop_after = args.events if args.events is not None else (2 if args.quick else None)

    threads = set_torch_threads(args.threads)
    started = time.perf_counter()
    results: dict = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_threads": threads,
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "images": n,
        "repeats": repeats,
    }
    print(f"lifelong pipeline benchmark: {n} images, {repeats} repeat(s), batch {args.batch_size}, ", end="")
    print(f"torch {torch.__version__} with {threads} thread(s) on {os.cpu_count()} CPUs; ratio = lifelong / baseline")
    print(f"load average before: {_load()} (other users add noise: compare ratios)")

    if not args.skip_pipeline:
        source, gray, labels = load_images(args.source, n)
        rgb28 = np.ascontiguousarray(np.repeat(gray, 3, axis=-1))
        rgb64 = resize_all(rgb28, 64, 3)  # upscaled once, up front
        results["source"] = source
        batches = bench_batches(rgb28, labels, 28, args.batch_size, repeats)
        batches += bench_batches(rgb64, labels, 64, args.batch_size, repeats)
        build = bench_build(gray, labels, [32, 64], repeats)
        print_throughput(f"Per-epoch input pipeline ({source}, shuffled, batch {args.batch_size})", batches)
        print_throughput(f"Task building ({source} 28x28x1: dedup + split + resize)", build)
        results["batches"], results["build"] = batches, build

    if not args.skip_overhead:
        with tempfile.TemporaryDirectory(prefix="lifelong-bench-") as tmp:
            (Path(tmp) / "run").mkdir()
            warm_up_learner()
            overhead = [
                bench_run(args.epochs, stop_after, Path(tmp) / "run"),
                bench_execute(args.epochs, stop_after, threads, Path(tmp) / "execute", args.profile),
            ]
        print_overhead(overhead, args.epochs)
        if stop_after is not None:
            print(f"  (partial runs: first {stop_after} events; execute() draws no plots for an unfinished run)")
        results["overhead"] = overhead

    results["wall_seconds"] = time.perf_counter() - started
    results["load_average_end"] = os.getloadavg()
    print(f"\nbenchmark wall time {results['wall_seconds']:.1f} s; load average after: {_load()}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
