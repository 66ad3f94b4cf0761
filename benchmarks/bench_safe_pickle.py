"""Benchmark the cost of reading a pickle from elsewhere within budgets: `load_data_pickle` (opcode pre-scan, checked
arrays, a walk of the result) against an allow-list unpickler that bounds nothing, same run, same files.

Files shaped like the real ones the toolkit reads: ImageNet-CoG's split file (a dict of `--wnids` wnids to lists of
`--paths` image paths each, protocol 2 as the authors' Python 2 wrote it; the full size is the real file's 5,000 x
~1,300 = 6.5M paths) and a CIFAR batch (a 10,000 x 3,072 uint8 array and 10,000 labels, protocol 2, loaded with
encoding="bytes"). Measured: the best of `--repeat` loads of each; both readers' results must be equal (else the run
exits 1); the ratio checked / unchecked is printed, with the file's size and objects.

Run: python benchmarks/bench_safe_pickle.py [--quick] [--wnids 5000] [--paths 1300] [--repeat 3]
(--quick: 5,000 x 20 paths and one timed load each, unless --paths / --repeat are given.)
"""

from __future__ import annotations

import argparse
import pickle
import tempfile
import time
from pathlib import Path

import numpy as np
from _same import require_same

from lifelong.core.safe_pickle import load_data_pickle

ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): np.ndarray.__reduce__(np.zeros(1))[0],
    ("numpy._core.multiarray", "_reconstruct"): np.ndarray.__reduce__(np.zeros(1))[0],
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): __import__("codecs").encode,
}


class AllowListUnpickler(pickle.Unpickler):
    """The baseline: refuses classes outside an allow-list (no code runs) and bounds nothing else."""

    def find_class(self, module: str, name: str):  # noqa: ANN201 (pickle's signature)
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} refused")
        return ALLOWED[(module, name)]


def unchecked(path: Path, encoding: str) -> object:
    with open(path, "rb") as f:
        return AllowListUnpickler(f, encoding=encoding).load()


def split_file(folder: Path, wnids: int, paths: int) -> Path:
    data = {f"n{i:08d}": [f"n{i:08d}/n{i:08d}_{j}.JPEG" for j in range(paths)] for i in range(wnids)}
    path = folder / "split.pkl"
    path.write_bytes(pickle.dumps(data, protocol=2))
    return path


def cifar_batch(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    batch = {
        b"data": rng.integers(0, 256, (10_000, 3072), dtype=np.uint8),
        b"labels": rng.integers(0, 10, 10_000).tolist(),
    }
    path = folder / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=2))
    return path


def best(load, repeat: int) -> tuple[float, object]:  # noqa: ANN001 (a loader)
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = load()
        times.append(time.perf_counter() - start)
    return min(times), value


def same(what: str, ours: object, base: object) -> str:
    if isinstance(ours, dict):
        require_same(f"{what}: keys", len(ours), len(base))  # type: ignore[arg-type]
        for key, value in ours.items():
            other = base[key]  # type: ignore[index]
            if isinstance(value, np.ndarray):
                require_same(f"{what}: {key!r}", value, other)
            elif value != other:
                raise SystemExit(f"{what}: {key!r} differs between the two readers")
        return "identical"
    raise SystemExit(f"{what}: expected a dict, got {type(ours).__name__}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--wnids", type=int, default=5000)
    parser.add_argument("--paths", type=int)
    parser.add_argument("--repeat", type=int)
    args = parser.parse_args(argv)
    paths = args.paths or (20 if args.quick else 1300)
    repeat = args.repeat or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-pickle-") as tmp:
        folder = Path(tmp)
        files = [
            (f"CoG split file ({args.wnids:,} x {paths:,} paths)", split_file(folder, args.wnids, paths), "latin1"),
            ("CIFAR batch (10,000 x 3,072 uint8)", cifar_batch(folder), "bytes"),
        ]
        print(f"{'file':<40} {'MB':>7} {'unchecked s':>12} {'checked s':>10} {'ratio':>6}  outputs")
        for name, path, encoding in files:
            base_s, base = best(lambda p=path, e=encoding: unchecked(p, e), repeat)
            ours_s, ours = best(lambda p=path, e=encoding: load_data_pickle(p, encoding=e), repeat)
            verdict = same(name, ours, base)
            size = path.stat().st_size / 1e6
            print(f"{name:<40} {size:>7.1f} {base_s:>12.3f} {ours_s:>10.3f} {ours_s / base_s:>5.2f}x  {verdict}")


if __name__ == "__main__":
    main()
