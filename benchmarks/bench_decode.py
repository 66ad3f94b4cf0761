"""Benchmark decoding a folder of image files on threads (`decode_files`) against one after the other, same run.

Synthetic files: `--files` JPEGs (or PNGs) of `--side` px, smooth colour fields with noise (they compress like
photos, not like flat colour), written to a temporary folder once. Measured: `lifelong.data.images.decode_files`
with `workers=1` (the baseline: how every folder, CSV and file-stream source decoded before) and with the default
`decode_workers()` (and any `--workers` given); the images must be identical to the baseline's (else the run
exits 1); best of `--repeat`; the ratio is printed. On this project's 2-core box: 128 px JPEGs 0.97x (small files
gain nothing: Python's share of the work holds the GIL), 256 px JPEGs 1.33x, 512 px JPEGs 1.65x, 256 px PNGs
1.69x. This is the load step of `folder:`, `csv:` and temporal file streams, which on a GPU machine must keep up
with the device.

Run: python benchmarks/bench_decode.py [--quick] [--files 2000] [--side 256] [--format jpeg|png] [--workers 2,4]
     [--repeat 3]
(--quick: 300 files and one timed decode per worker count, unless --files / --repeat are given.)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from _same import require_same
from PIL import Image

from lifelong.data.images import decode_files, decode_workers


def write_files(folder: Path, count: int, side: int, fmt: str, seed: int = 0) -> list[Path]:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side] / side
    paths = []
    for i in range(count):
        a, b, c = rng.uniform(0, 6, 3)
        base = np.stack([np.sin(a * xx + b * yy + c * k) for k in range(3)], axis=-1)
        pixels = np.clip(127 + 100 * base + rng.normal(0, 12, (side, side, 3)), 0, 255).astype(np.uint8)
        path = folder / f"{i:05d}.{'jpg' if fmt == 'jpeg' else 'png'}"
        Image.fromarray(pixels).save(path, quality=90) if fmt == "jpeg" else Image.fromarray(pixels).save(path)
        paths.append(path)
    return paths


def check_identical(images: list[np.ndarray], reference: list[np.ndarray], workers: int) -> str:
    """Exit non-zero unless `workers` threads decoded every image as the baseline did; returns the verdict."""
    require_same(f"workers {workers}: number of images", len(images), len(reference))
    for i, (image, expected) in enumerate(zip(images, reference, strict=True)):
        require_same(f"workers {workers}: image {i}", image, expected)
    return "identical"


def best_time(paths: list[Path], workers: int, repeat: int) -> tuple[float, list[np.ndarray]]:
    best, images = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        images, _, _ = decode_files(paths, skip_corrupt=False, workers=workers)
        best = min(best, time.perf_counter() - start)
    return best, images


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 files, one timed decode per worker count")
    ap.add_argument("--files", type=int, help="files to decode (default 2000; quick 300)")
    ap.add_argument("--side", type=int, default=256)
    ap.add_argument("--format", choices=("jpeg", "png"), default="jpeg")
    ap.add_argument("--workers", default="", help="extra worker counts to time, comma-separated")
    ap.add_argument("--repeat", type=int, help="timed decodes per worker count, best kept (default 3; quick 1)")
    args = ap.parse_args()
    args.files = args.files or (300 if args.quick else 2000)
    args.repeat = args.repeat or (1 if args.quick else 3)

    counts = sorted({decode_workers(), *(int(w) for w in args.workers.split(",") if w.strip())} - {1})
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_files(Path(tmp), args.files, args.side, args.format)
        megabytes = sum(p.stat().st_size for p in paths) / 2**20
        print(
            f"{args.files} {args.format} files of {args.side}x{args.side} px ({megabytes:.1f} MiB); "
            f"{os.cpu_count()} CPU cores; default decode_workers() = {decode_workers()}; best of {args.repeat}"
        )
        base, reference = best_time(paths, 1, args.repeat)
        print(f"workers  1: {base:7.3f} s  {args.files / base:8.0f} images/s  (baseline: one after the other)")
        for workers in counts:
            seconds, images = best_time(paths, workers, args.repeat)
            same = check_identical(images, reference, workers)
            print(
                f"workers {workers:2d}: {seconds:7.3f} s  {args.files / seconds:8.0f} images/s  "
                f"ratio {base / seconds:.2f}x  outputs {same}"
            )


if __name__ == "__main__":
    main()
