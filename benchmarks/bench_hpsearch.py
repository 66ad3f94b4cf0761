"""Benchmark hyper-parameter trials on Ray against the same trials run sequentially, in the same run.

The same N trials (random search over lr and label smoothing) of one small FitJob (resnet_mini, 1 torch thread,
a few epochs on ~2,000 32x32 images: Fashion-MNIST where installed, else synthetic colour blobs) run through
`search` with a LocalExecutor, then with RayExecutor(num_cpus); the TrialResults must be identical (weights
included). Printed: wall-clock of each, Ray start-up (ray.init plus warming every worker's imports) apart, and
the speed-up sequential / Ray with start-up included and excluded.

Run: python benchmarks/bench_hpsearch.py [--trials 8] [--epochs 3] [--images 2000] [--num-cpus 2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from lifelong.core.datasets import ArrayDataset
from lifelong.core.executors import LocalExecutor, RayExecutor
from lifelong.core.tasks import TaskKey
from lifelong.data.images import resize_all
from lifelong.training.hpsearch import SearchSpace, identical, sample_trials, search
from lifelong.training.loop import set_torch_threads
from lifelong.training.recipe import FitJob

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")
SIZE = 32


def load_task(n_train: int, n_dev: int) -> tuple[str, ArrayDataset, ArrayDataset]:
    """Train and dev splits of 32x32 RGB images: real Fashion-MNIST (resized) where installed, else synthetic."""
    n = n_train + n_dev
    if FASHION_MNIST_DIR.is_dir():
        from lifelong.data.sources import load_source

        labeled = load_source("fashion-mnist")
        order = np.random.default_rng(0).permutation(len(labeled))[:n]
        images = resize_all(np.asarray(labeled.images)[order], SIZE, 3)
        labels, source = np.asarray(labeled.labels)[order], "fashion-mnist"
    else:
        rng = np.random.default_rng(0)
        labels = rng.integers(0, 10, n)
        colours = rng.integers(0, 256, (10, 3))
        images = np.clip(colours[labels][:, None, None] + rng.normal(0, 60, (n, SIZE, SIZE, 3)), 0, 255)
        images, source = images.astype(np.uint8), f"synthetic: Fashion-MNIST is not installed at {FASHION_MNIST_DIR}"
    key = TaskKey("bench", "multi-class", 10)
    return (
        source,
        ArrayDataset(key, "train", images[:n_train], labels[:n_train]),
        ArrayDataset(key, "dev", images[n_train:], labels[n_train:]),
    )


def warm_worker(index: int) -> int:
    """Import what a trial needs (torch, the recipe) in a Ray worker, and hold it briefly so each worker gets one."""
    import lifelong.training.recipe  # noqa: F401

    time.sleep(1.0)
    return os.getpid()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--images", type=int, default=2000, help="training images (dev: a quarter as many)")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray")
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 trials, 1 epoch, 500 images")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.epochs, args.images = 4, 1, 500
    set_torch_threads(1)

    source, train, dev = load_task(args.images, args.images // 4)
    # the Independent learner's scaled-down recipe for a 2-core CPU: batches of 16..128, 1 warm-up epoch
    job = FitJob(
        "resnet_mini",
        10,
        train.task.kind,
        train,
        dev,
        seed=0,
        epochs=args.epochs,
        max_batch_size=128,
        resolution=SIZE,
        warmup_epochs=1.0,
        threads=1,
    )
    trials = sample_trials(SearchSpace(trials=args.trials), seed=0)
    print(
        f"{args.trials} trials x {args.epochs} epochs of resnet_mini on {len(train)} train + {len(dev)} dev "
        f"{SIZE}x{SIZE} images ({source}); 1 torch thread per trial; torch {torch.__version__}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start, {platform.python_version()}"
    )

    start = time.perf_counter()
    local_best, local = search(job, trials, executor=LocalExecutor())
    sequential = time.perf_counter() - start

    executor = RayExecutor(num_cpus=args.num_cpus)
    try:
        start = time.perf_counter()
        pids = executor.map(warm_worker, list(range(args.num_cpus)))
        startup = time.perf_counter() - start
        start = time.perf_counter()
        ray_best, remote = search(job, trials, executor=executor)
        ray_seconds = time.perf_counter() - start
    finally:
        executor.shutdown()

    same = all(identical(a, b) for a, b in zip(local, remote, strict=True)) and local_best.trial == ray_best.trial
    rows = [
        ("sequential (LocalExecutor)", sequential, 1.0),
        (f"Ray start-up ({len(set(pids))} workers warmed)", startup, None),
        (f"Ray, {args.num_cpus} CPUs, start-up excluded", ray_seconds, sequential / ray_seconds),
        (f"Ray, {args.num_cpus} CPUs, start-up included", startup + ray_seconds, sequential / (startup + ray_seconds)),
    ]
    print(f"\n{'what':<40} {'wall s':>8} {'speed-up':>9}")
    for what, seconds, ratio in rows:
        print(f"{what:<40} {seconds:>8.2f} {'' if ratio is None else f'{ratio:.2f}x':>9}")
    print(
        f"\nper trial (sequential): {sequential / args.trials:.2f} s; best trial {local_best.trial.index} "
        f"(lr {local_best.trial.lr:.2g}, label smoothing {local_best.trial.label_smoothing:.2f}, dev error "
        f"{local_best.dev_error:.3f}); total train FLOPs {sum(r.train_flops for r in local):.3g}"
    )
    print(f"results identical (all {len(local)} TrialResults, weights included): {'PASS' if same else 'FAIL'}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
