"""Benchmark the fast ImageNet-CoG linear probe against the reference recipe on the same features, in the same run.

Features are synthetic levels: class means drawn uniformly on the unit sphere in D dimensions, each image = its
class mean + isotropic Gaussian noise of std `noise` per dimension, then l2-normalised (a level's features are
l2-normalised). The default noise, 0.7 / sqrt(ln C), keeps top-1 in the realistic 40-80% range at any class
count (classes overlap: a mean-difference direction sees noise of std noise * sqrt(2), and a sample competes
with C - 1 other classes).

Two sets, each run through both probes with the same seed(s), reference first:
  (i)  small:  --small-classes x --small-per-class training images (x --small-test-per-class test) x --small-dim
  (ii) level:  --classes x --per-class (x --test-per-class) x --dim, 1,000 concepts as a level has (the
       default 1,000 x 50 x 64-d took 2,396 s on the reference side, 31 runs x 100 epochs, on a loaded 2-core CPU).
Printed per set: both wall times, both test top-1s, the accuracy difference and the time ratio reference / fast.

--scale writes a full-size level (default 1,000 x 1,300 x 2,048) as a float16 features set in a temp dir, in
chunks, opens it through the CoG stream (the path `lifelong cog run` takes), and runs the fast probe through it
with --scale-epochs and --scale-lr-points (one weight decay), measuring wall time, training throughput and peak
RSS (resource.getrusage); the time of the default fast probe at that size is extrapolated from the measured
throughput and printed as such.

--features DIR runs the same comparison on real features instead: every level (or --levels) of a CoG features set
that `lifelong cog run` wrote (the data root's cog-features/<set>), each split memory-mapped as a run reads it.
--variant NAME=epochs:E,lrs:K,wds:A/B/C,heads:H (repeatable) compares several fast-probe settings against the same
reference runs; SUMMARY lines give each variant's mean and worst difference and its time ratio over all sets.

Run: python benchmarks/bench_probe.py [--quick] [--set small|level|both] [--classes 1000 --per-class 50
     --dim 64 --test-per-class 50] [--seeds 22] [--threads 1] [--device cpu|cuda] [--scale --scale-epochs 1]
     [--features DIR [--levels L1,L5]] [--variant NAME=epochs:20,wds:1e-12/1e-8/1e-4,heads:1 ...]
--quick: both sets and --scale at toy sizes (3 reference trials x 10 epochs): a smoke run, its ratios meaningless.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from lifelong.data.feature_files import FEATURES_FILE, LABELS_FILE, MANIFEST_FILE
from lifelong.data.feature_files import FORMAT as FEATURES_FORMAT
from lifelong.suites.cog import FORMAT as COG_FORMAT
from lifelong.suites.cog import INDEX_FILE, cog_stream, read_index, read_split
from lifelong.training.loop import set_torch_threads
from lifelong.training.probe_fast import FAST_EPOCHS, FINAL_HEADS, LR_POINTS, WEIGHT_DECAYS
from lifelong.training.probes import fast_probe, population_std, reference_probe


def default_noise(classes: int) -> float:
    """Per-dimension noise std that puts a linear probe's top-1 around 50-70% for `classes` classes."""
    return 0.7 / math.sqrt(math.log(classes))


def synthetic_level(classes, per_class, test_per_class, dim, noise, seed=0):
    """(train_x, train_y, test_x, test_y): float32 l2-normalised features, labels sorted by class."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((classes, dim), dtype=np.float32)
    means /= np.linalg.norm(means, axis=1, keepdims=True)

    def draw(n):
        y = np.repeat(np.arange(classes), n)
        x = means[y] + rng.standard_normal((y.size, dim), dtype=np.float32) * noise
        return x / np.linalg.norm(x, axis=1, keepdims=True), y

    return (*draw(per_class), *draw(test_per_class))


def write_memmap_level(folder, classes, per_class, test_per_class, dim, noise, seed=0, chunk_classes=10):
    """The same kind of level, written class chunk by class chunk as a toolkit features set (the layout `lifelong
    cog run` writes: cog.json + L1/<split>/ features.npy float16, labels.npy, manifest.json) and read back through
    the CoG stream, whose splits memory-map it. Plain file writes, not a writable memmap: pages written through a
    mapping count in this process's RSS, and the point is to measure the reading side's."""
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((classes, dim), dtype=np.float32)
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    root = Path(folder)
    for name, n in (("train", per_class), ("test", test_per_class)):
        where = root / "L1" / name
        where.mkdir(parents=True)
        with open(where / FEATURES_FILE, "wb") as handle:
            header = {"descr": np.dtype(np.float16).str, "fortran_order": False, "shape": (classes * n, dim)}
            np.lib.format.write_array_header_2_0(handle, header)
            for first in range(0, classes, chunk_classes):
                y = np.repeat(np.arange(first, min(classes, first + chunk_classes)), n)
                block = means[y] + rng.standard_normal((y.size, dim), dtype=np.float32) * noise
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                handle.write(block.astype(np.float16).tobytes())
        np.save(where / LABELS_FILE, np.repeat(np.arange(classes, dtype=np.int64), n))
        manifest = {"format": FEATURES_FORMAT, "complete": True, "rows": classes * n, "feature_dim": dim}
        (where / MANIFEST_FILE).write_text(json.dumps(manifest))
    wnids = [f"n{k:08d}" for k in range(classes)]
    index = {"format": COG_FORMAT, "dataset": "synthetic", "levels": [{"name": "L1", "wnids": wnids}]}
    (root / INDEX_FILE).write_text(json.dumps(index))
    splits = cog_stream(str(root)).splits(0)  # checks every row is finite, block by block
    train, test = splits.train_and_dev(), splits.test
    return train.images, train.labels(), test.images, test.labels()


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def parse_variant(text: str) -> tuple[str, dict]:
    """'NAME=epochs:20,lrs:9,wds:1e-12/1e-8/1e-4,heads:1' -> (NAME, fast_probe options); 'default' alone is the
    probe's defaults."""
    name, _, spec = text.partition("=")
    options: dict = {}
    for part in filter(None, spec.split(",")):
        key, _, value = part.partition(":")
        if key == "epochs":
            options["epochs"] = int(value)
        elif key == "lrs":
            options["lr_points"] = int(value)
        elif key == "heads":
            options["final_heads"] = int(value)
        elif key == "wds":
            options["weight_decays"] = tuple(float(v) for v in value.split("/"))
        else:
            raise SystemExit(f"--variant {text!r}: unknown key {key!r} (epochs, lrs, wds, heads)")
    return name, options


def compare(name, sizes, data, args) -> None:
    """The reference and every fast variant on one feature set, per seed; print times, top-1s, differences and
    time ratios (reference / variant), then the means over seeds."""
    noise = f" | noise {args.noise_used:.3f}" if args.noise_used is not None else ""
    print(f"\n== ({name}) {sizes}{noise} | seeds {args.seeds} | {load()}", flush=True)
    options = dict(device=args.device)
    reference_scores, reference_time = [], 0.0
    fast_scores = {label: [] for label, _ in args.variants}
    fast_time = dict.fromkeys(fast_scores, 0.0)
    for seed in args.seeds:
        reference = reference_probe(*data, seed=seed, trials=args.trials, epochs=args.epochs, **options)
        reference_scores.append(reference.test_top1)
        reference_time += reference.wall_seconds
        print(
            f"seed {seed}: reference {reference.wall_seconds:8.1f} s  top-1 {reference.test_top1:6.2f}  "
            f"(lr {reference.lr:.3g}, wd {reference.weight_decay:.2g}, {len(reference.trials)} trials x "
            f"{reference.epochs} ep)",
            flush=True,
        )
        for label, variant in args.variants:
            fast = fast_probe(*data, seed=seed, **variant, **options)
            fast_scores[label].append(fast.test_top1)
            fast_time[label] += fast.wall_seconds
            print(
                f"    fast[{label}] {fast.wall_seconds:7.1f} s  top-1 {fast.test_top1:6.2f}  (lr {fast.lr:.3g}, wd "
                f"{fast.weight_decay:.2g}, {len(fast.trials)} heads x {fast.epochs} ep) | "
                f"diff {fast.test_top1 - reference.test_top1:+.2f} pts  "
                f"ratio {reference.wall_seconds / fast.wall_seconds:.1f}x",
                flush=True,
            )
    ref_mean = float(np.mean(reference_scores))
    print(
        f"({name}) reference {reference_time:.1f} s, top-1 {ref_mean:.2f} +- {population_std(reference_scores):.2f}",
        flush=True,
    )
    for label, scores in fast_scores.items():
        fast_mean = float(np.mean(scores))
        print(
            f"({name}) fast[{label}] {fast_time[label]:.1f} s, top-1 {fast_mean:.2f} +- {population_std(scores):.2f} | "
            f"diff {fast_mean - ref_mean:+.2f} pts | time ratio {reference_time / fast_time[label]:.1f}x | {load()}",
            flush=True,
        )
        args.summary.append((name, label, ref_mean, fast_mean, reference_time, fast_time[label]))


def summarise(summary) -> None:
    """Per fast variant over every compared set: mean difference, worst difference, total time ratio."""
    for label in dict.fromkeys(row[1] for row in summary):
        rows = [row for row in summary if row[1] == label]
        diffs = [fast - ref for _, _, ref, fast, _, _ in rows]
        ratio = sum(row[4] for row in rows) / sum(row[5] for row in rows)
        print(
            f"SUMMARY fast[{label}] over {len(rows)} sets: mean diff {np.mean(diffs):+.2f} pts, worst "
            f"{min(diffs):+.2f}, best {max(diffs):+.2f} | reference/fast time {ratio:.1f}x",
            flush=True,
        )


def real_levels(folder: Path, levels: str | None):
    """[(level name, (train_x, train_y, test_x, test_y))] of a CoG features set (`lifelong cog run` writes them into
    the data root's cog-features/), each split memory-mapped as the probe gets it in a run."""
    index = read_index(folder)
    names = [level["name"] for level in index["levels"]]
    chosen = levels.split(",") if levels else names
    unknown = sorted(set(chosen) - set(names))
    if unknown:
        raise SystemExit(f"--levels {unknown} not in {folder} (it has {names})")
    return [(name, (*read_split(folder, name, "train"), *read_split(folder, name, "test"))) for name in chosen]


def scale(args) -> None:
    """A full-size float16 memmap level through the fast probe: wall time, throughput, peak RSS."""
    classes, per_class, test_per_class, dim = args.scale_classes, args.scale_per_class, 50, args.scale_dim
    noise = default_noise(classes)
    gib = classes * (per_class + test_per_class) * dim * 2 / 2**30
    print(
        f"\n== (scale) {classes} classes x {per_class} train (+{test_per_class} test) x {dim}-d float16 memmap "
        f"({gib:.2f} GiB) | noise {noise:.3f} | {load()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench_probe_") as folder:
        started = time.perf_counter()
        data = write_memmap_level(folder, classes, per_class, test_per_class, dim, noise)
        print(
            f"wrote the features set and opened its splits through the CoG stream (memmaps, every row checked "
            f"finite) in {time.perf_counter() - started:.1f} s; peak RSS so far {peak_rss_gib():.2f} GiB",
            flush=True,
        )
        assert isinstance(data[0], np.memmap), "the stream must hand over the memmap, not a copy"
        weight_decays = WEIGHT_DECAYS[1:2]
        result = fast_probe(
            *data,
            seed=args.seeds[0],
            epochs=args.scale_epochs,
            min_steps=0,
            lr_points=args.scale_lr_points,
            weight_decays=weight_decays,
            device=args.device,
        )
    heads = args.scale_lr_points * len(weight_decays)
    rows = classes * per_class
    measured_work = result.epochs * (0.8 * heads + min(heads, FINAL_HEADS)) * rows  # head-images trained
    rate = measured_work / result.wall_seconds
    print(
        f"measured: fast probe, {heads} head(s) x {result.epochs} epoch(s) on the 80% split + the final run on all "
        f"rows: {result.wall_seconds:.1f} s wall (input checks, split, validation and test included), test top-1 "
        f"{result.test_top1:.2f} after {result.epochs} epoch(s)"
        f"{' (NOT a probe result: too few epochs, the per-epoch cosine never decays)' if result.epochs < 10 else ''}; "
        f"{rate:,.0f} head-images/s, i.e. one epoch of "
        f"{rows:,} images takes {rows / rate:.0f} s per head ({rate:,.0f} images/s per epoch per head); "
        f"peak RSS {peak_rss_gib():.2f} GiB | {load()}",
        flush=True,
    )
    fast_work = FAST_EPOCHS * (0.8 * LR_POINTS * len(WEIGHT_DECAYS) + FINAL_HEADS) * rows
    reference_work = 100 * (0.8 * 30 + 1) * rows
    print(
        f"EXTRAPOLATED from the measured rate (not measured): the default fast probe ({LR_POINTS * len(WEIGHT_DECAYS)} "
        f"heads x {FAST_EPOCHS} epochs + {FINAL_HEADS} final) ~{fast_work / rate / 3600:.1f} h; the reference "
        f"(30 trials + retrain, 100 epochs) ~{reference_work / rate / 3600:.0f} h at the same rate "
        f"({reference_work / fast_work:.0f}x more head-epochs) on {args.threads} thread(s) of this machine",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("small", "level", "both", "none"), default="both")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--per-class", type=int, default=50, help="training images per class (20%% validate)")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--test-per-class", type=int, default=50)
    parser.add_argument("--small-classes", type=int, default=100)
    parser.add_argument("--small-per-class", type=int, default=150)
    parser.add_argument("--small-dim", type=int, default=64)
    parser.add_argument("--small-test-per-class", type=int, default=50)
    parser.add_argument("--noise", type=float, default=None, help="per-dimension noise std (default 0.7/sqrt(ln C))")
    parser.add_argument("--trials", type=int, default=30, help="reference trials (the recipe: 30)")
    parser.add_argument("--epochs", type=int, default=100, help="reference epochs (the recipe: 100)")
    parser.add_argument("--seeds", default="22", help="comma-separated; the protocol's are 22,37,45,77,93")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    parser.add_argument("--scale", action="store_true", help="also run a full-size memmap level (fast probe only)")
    parser.add_argument("--scale-classes", type=int, default=1000)
    parser.add_argument("--scale-per-class", type=int, default=1300)
    parser.add_argument("--scale-dim", type=int, default=2048)
    parser.add_argument("--scale-epochs", type=int, default=1)
    parser.add_argument("--scale-lr-points", type=int, default=1, help="heads in the measured run (one wd each)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run in seconds (sizes and trials cut down), --scale included"
    )
    parser.add_argument(
        "--features", type=Path, default=None, help="a CoG features set folder (real features): probe its levels"
    )
    parser.add_argument("--levels", default=None, help="with --features: comma-separated levels (default: all)")
    parser.add_argument(
        "--variant",
        action="append",
        default=None,
        help="fast probe settings to compare, repeatable: NAME=epochs:E,lrs:K,wds:A/B/C,heads:H (default: the "
        "probe's defaults)",
    )
    args = parser.parse_args()
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.variants = [parse_variant(v) for v in (args.variant or ["default"])]
    args.summary = []
    if args.quick:
        args.classes, args.per_class, args.dim, args.test_per_class = 50, 20, 16, 10
        args.small_classes, args.small_per_class, args.small_dim, args.small_test_per_class = 10, 30, 16, 20
        args.trials, args.epochs = 3, 10
        args.scale, args.scale_classes, args.scale_per_class, args.scale_dim = True, 20, 50, 32
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    set_torch_threads(args.threads)
    print(
        f"bench_probe: python {platform.python_version()}, torch {torch.__version__}, device {args.device}, "
        f"{args.threads} torch thread(s), {os.cpu_count()} CPUs | reference: {args.trials} trials x {args.epochs} "
        f"epochs + retrain | fast: {LR_POINTS} lr x {len(WEIGHT_DECAYS)} wd heads x {FAST_EPOCHS} epochs + "
        f"{FINAL_HEADS} best retrained and averaged"
        + (" | QUICK smoke run: sizes and trials cut, ratios meaningless" if args.quick else ""),
        flush=True,
    )
    if args.features is not None:  # real features instead of the synthetic sets
        args.noise_used, args.set = None, "none"
        for level, data in real_levels(args.features, args.levels):
            classes, dim = int(data[1].max()) + 1, data[0].shape[1]
            rows = f"{len(data[1])} train, {len(data[3])} test"
            compare(level, f"{args.features.name} {level}: {classes} classes, {rows}, {dim}-d", data, args)
    sets = {"small": ("i", "small"), "level": ("ii", "level")}
    for key in ("small", "level"):
        if args.set not in (key, "both"):
            continue
        prefix = "small_" if key == "small" else ""
        c, n, d, t = (getattr(args, prefix + f) for f in ("classes", "per_class", "dim", "test_per_class"))
        args.noise_used = args.noise if args.noise is not None else default_noise(c)
        data = synthetic_level(c, n, t, d, args.noise_used)
        label, _ = sets[key]
        compare(label, f"{c} classes x {n} train (+{t} test) x {d}-d", data, args)
    if args.summary:
        summarise(args.summary)
    if args.scale:
        scale(args)
    print(f"peak RSS {peak_rss_gib():.2f} GiB", file=sys.stderr)


if __name__ == "__main__":
    main()
