"""Benchmark the data pipeline and the environment's overhead, each against a baseline measured in the same run.

1. Images per second a learner pays per epoch: `ArrayDataset.batches(shuffle=True)` + `prepare_batch` (without and
   with augmentation) against plain NumPy (permutation, fancy indexing, float32, [-1, 1], NCHW, torch.from_numpy)
   followed, for augmentation, by a random resized crop + mirror of the whole batch with torch ops (affine_grid +
   grid_sample); and `build_task_splits` (dedup + split + resize) against a per-image hashlib + Pillow loop with a
   NumPy permutation split. Ratios are lifelong / baseline (> 1: lifelong is faster). Every baseline's output is
   checked against lifelong's before timing (every batch of an epoch; every kept image); a difference exits 1.
2. The share of wall time a run spends outside the learner's train/predict, for `environment.run` (with a
   checkpoint store) and `runner.execute` (run folder, SQLite, plots); the target is under 5 %.

Torch runs with one thread (`--threads N` to change), for the pipeline and the
learner alike. Run: python benchmarks/bench_pipeline.py [--quick] [--threads N] [--json PATH]
(--quick: 3,000 images, one repeat, the first 2 events of each run at 1 epoch).
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import itertools
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _same import require_same
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
from lifelong.training.inputs import prepare_batch, sample_crop_boxes
from lifelong.training.loop import set_torch_threads
from lifelong.training.models import make_model

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
OVERHEAD_TARGET = 0.05
# no official split (docs/protocols/nevis.md#splits)
SPLIT_PERCENTS = {"train": 56, "dev": 12, "dev_test": 12, "test": 20}
# The augmentation baseline builds its sampling grid with affine_grid in float32, lifelong in float64 then casts:
# grid points differ by ~1e-7 of the image, so pixels (in [-1, 1]) by up to ~2e-5 (measured); allow 1e-4.
AUGMENT_ATOL = 1e-4


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


def lifelong_batches(
    data: ArrayDataset, batch_size: int, seed: int, generator: torch.Generator | None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch as the training loop reads it: shuffled batches, uint8 NHWC -> float NCHW (augmented if generator)."""
    for batch in data.batches(batch_size, shuffle=True, seed=seed):
        x = prepare_batch(batch.images, channels=3, generator=generator)
        yield x, torch.from_numpy(batch.labels)  # the targets, as the loop converts them


def numpy_batches(images: np.ndarray, labels: np.ndarray, batch_size: int, seed: int):
    """The baseline: permutation, fancy indexing, float32 in [-1, 1], NCHW, torch.from_numpy."""
    order = np.random.default_rng(seed).permutation(len(images))
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        x = images[idx].astype(np.float32)
        x /= 127.5
        x -= 1.0
        yield torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2))), torch.from_numpy(labels[idx])


def torch_augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Baseline augmentation of a whole batch with torch ops: random resized crop + mirror via affine_grid.

    The boxes and mirrors are drawn as lifelong draws them (its sampler, the same generator), so both sides crop the
    same boxes and their pixels can be compared; the baseline's own work is the resampling.
    """
    n, _, height, width = x.shape
    top, left, h, w = sample_crop_boxes(n, height, width, generator).to(x.dtype).unbind(dim=1)
    sign = 1.0 - 2.0 * (torch.rand(n, generator=generator) < 0.5).to(x.dtype)
    theta = torch.zeros(n, 2, 3, dtype=x.dtype)
    theta[:, 0, 0], theta[:, 0, 2] = sign * w / width, 2 * (left + w / 2) / width - 1
    theta[:, 1, 1], theta[:, 1, 2] = h / height, 2 * (top + h / 2) / height - 1
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def augmented_batches(
    images: np.ndarray, labels: np.ndarray, batch_size: int, seed: int, generator: torch.Generator
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The augmentation baseline: the NumPy batches, each cropped and mirrored as a batch by `torch_augment`."""
    for x, y in numpy_batches(images, labels, batch_size, seed):
        yield torch_augment(x, generator), y


def epoch(batches: Iterator[tuple[torch.Tensor, torch.Tensor]]) -> int:
    """Consume one epoch of batches; the images seen."""
    return sum(x.shape[0] for x, _ in batches)


def check_epochs(what: str, ours: Iterator, base: Iterator, atol: float = 0.0) -> None:
    """Exit non-zero unless two epochs give the same batches (inputs within `atol`, targets exactly), one at a time."""
    for i, pair in enumerate(itertools.zip_longest(ours, base)):
        if None in pair:
            raise SystemExit(f"{what}: lifelong and the baseline give different numbers of batches per epoch")
        (x, y), (bx, by) = pair
        require_same(f"{what}, batch {i}: inputs", x, bx, atol=atol)
        require_same(f"{what}, batch {i}: targets", y, by)


def bench_batches(images: np.ndarray, labels: np.ndarray, side: int, batch_size: int, repeats: int) -> list[dict]:
    task = TaskKey("bench", TaskKind.MULTI_CLASS, int(labels.max()) + 1)
    data = ArrayDataset(task, "train", images, labels)
    gen, base_gen = torch.Generator(), torch.Generator()

    # Same seed, same order, same crops: every batch of an epoch must match, else the comparison is not like for
    # like (untimed; this also pays the torch kernels' first calls before timing).
    shape = f"{side}x{side}x3"
    check_epochs(
        f"{shape} batches", lifelong_batches(data, batch_size, 0, None), numpy_batches(images, labels, batch_size, 0)
    )
    check_epochs(
        f"{shape} augmented batches",
        lifelong_batches(data, batch_size, 0, gen.manual_seed(0)),
        augmented_batches(images, labels, batch_size, 0, base_gen.manual_seed(0)),
        atol=AUGMENT_ATOL,
    )

    plain = interleaved(
        {
            "lifelong": lambda r: epoch(lifelong_batches(data, batch_size, r, None)),
            "numpy": lambda r: epoch(numpy_batches(images, labels, batch_size, r)),
        },
        repeats,
    )
    augmented = interleaved(
        {
            "lifelong": lambda r: epoch(lifelong_batches(data, batch_size, r, gen.manual_seed(r))),
            "numpy": lambda r: epoch(augmented_batches(images, labels, batch_size, r, base_gen.manual_seed(r))),
        },
        repeats,
    )
    n = len(images)
    return [
        row(f"{shape} batches + prepare_batch", n, plain["lifelong"], plain["numpy"], "numpy batches"),
        row(f"{shape} ... + augment", n, augmented["lifelong"], augmented["numpy"], "numpy + torch batch crop"),
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


def sorted_pairs(splits: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Every split's (image, label) pairs as byte rows [N, pixels + 8], in sorted order (which split: ignored)."""
    rows = np.concatenate(
        [
            np.concatenate([x.reshape(len(x), -1), np.asarray(y, np.int64).view(np.uint8).reshape(len(y), -1)], axis=1)
            for x, y in splits
        ]
    )
    rows = np.ascontiguousarray(rows)
    return rows[np.argsort(rows.view(f"V{rows.shape[1]}").ravel(), kind="stable")]


def bench_build(images: np.ndarray, labels: np.ndarray, sizes: list[int], repeats: int) -> list[dict]:
    num_classes = int(labels.max()) + 1
    names = tuple(str(c) for c in range(num_classes))
    key = TaskKey("bench", TaskKind.MULTI_CLASS, num_classes, names)
    labeled = LabeledImages(images, labels, [f"bench[{i}]" for i in range(len(images))], names, TaskKind.MULTI_CLASS)
    rows = []
    for size in sizes:
        # Both must keep the same (image, label) pairs with the same pixels; the splits differ only in which rows go
        # where (each side draws its own permutation), so the pairs are compared sorted.
        ours = build_task_splits(key, labeled, resolution=size, channels=3, seed=0)
        base = naive_build(images, labels, size, 0)
        ours_rows = sorted_pairs([(ours.get(s).images, ours.get(s).labels()) for s in SPLIT_PERCENTS])
        require_same(f"build to {size}: kept images and labels", ours_rows, sorted_pairs(list(base.values())))
        ours_n = len(ours_rows)
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
    parser.add_argument("--quick", action="store_true", help="small sizes, one repeat, 2 events at 1 epoch")
    parser.add_argument("--images", type=int, help="images per pipeline measurement (default 20000; quick 3000)")
    parser.add_argument("--repeats", type=int, help="timed epochs per variant, median reported (default 3; quick 1)")
    parser.add_argument("--batch-size", type=int, default=128, help="batch size (IndependentLearner's largest)")
    parser.add_argument("--source", choices=("auto", "fashion-mnist", "letters"), default="auto")
    parser.add_argument("--epochs", type=int, help="IndependentLearner epochs (default: its config; quick 1)")
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
    epochs = args.epochs if args.epochs is not None else (1 if args.quick else None)

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
                bench_run(epochs, stop_after, Path(tmp) / "run"),
                bench_execute(epochs, stop_after, threads, Path(tmp) / "execute", args.profile),
            ]
        print_overhead(overhead, epochs)
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
