"""Accuracy estimators at the full Lifelong-CIFAR10 shape, on bit-packed source rows, in bounded memory.

Shape (defaults = the paper's Lifelong-CIFAR10: 1,697,682 samples in 6 domains): `--sources` models fully
evaluated (6,000, as Sort & Search's ranking models), `--targets` held-out models estimated at n' = `--budget`,
from the seeded item-response generator (lifelong.sortsearch.synthetic). The source rows are held bit-packed
(the packed matrix is the baseline of memory: 6,000 x 1,697,682 bits = 1.27 GB); each method that reads packed
rows (random-mean, stratified-mean, sort-search, ridge, lifelong) runs on them whole, and prints its wall time,
its peak heap memory beyond the packed rows (tracemalloc) and that peak's ratio to the packed matrix, and its
mean absolute error against the targets' true accuracies. Methods that need a dense source (the IRT family, the
k-means anchors, aipw, disco, pca-impute) run with `--subsample` on a stated random subsample of source models
and samples (their truth is then the accuracy on those samples).

Run: python benchmarks/bench_estimators_scale.py [--scale 1.0] [--sources 6000] [--targets 500] [--budget 100]
     [--subsample 1000x50000] [--methods ...] [--json PATH] [--quick]
--quick: a smoke run at scale 0.002 (12 source + 20 target models x 3,395 samples), the dense methods included on a
12x1000 subsample.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from pathlib import Path

import numpy as np

from lifelong.sortsearch.bitmatrix import PackedRows, popcount_rows
from lifelong.sortsearch.estimators.base import EstimationTask, estimator
from lifelong.sortsearch.synthetic import SyntheticBenchmark, lifelong_cifar10_shape

PACKED_METHODS = ("random-mean", "stratified-mean", "sort-search", "ridge", "lifelong")
DENSE_METHODS = ("irt", "p-irt", "gp-irt", "anchor-points", "ridge-anchors", "aipw", "disco", "pca-impute")
MIB = 2**20


def measure(name: str, task: EstimationTask, targets: PackedRows | np.ndarray, truth: np.ndarray) -> dict:
    """Plan + estimate one method: wall time, peak heap memory, mean absolute error (imports not measured)."""
    method = estimator(name)
    tracemalloc.start()
    started = time.perf_counter()
    plan = method.plan(task)
    if isinstance(targets, PackedRows):
        observed = targets.gather(None, np.asarray(plan.items, np.int64))
    else:
        observed = targets[:, plan.items]
    est = plan.estimate(observed)
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "method": name,
        "seconds": seconds,
        "peak_mib": peak / MIB,
        "mae": float(np.mean(np.abs(np.asarray(est.accuracy) - truth))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the samples (and --sources, --targets)")
    parser.add_argument("--sources", type=int, default=6000)
    parser.add_argument("--targets", type=int, default=500)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=",".join(PACKED_METHODS))
    parser.add_argument("--subsample", default=None, metavar="MODELSxSAMPLES", help="e.g. 1000x50000 (dense methods)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="smoke run: scale 0.002, dense methods on 12x1000")
    args = parser.parse_args()
    if args.quick:  # 10,000 targets x 0.002 = 20 target models
        args.scale, args.targets, args.subsample = 0.002, 10_000, args.subsample or "12x1000"
    shape = lifelong_cifar10_shape()
    n = max(args.budget, int(shape.n_samples * args.scale))
    m_src, m_tgt = max(2, int(args.sources * args.scale)), max(1, int(args.targets * args.scale))
    domains = {k: max(1, int(v * args.scale)) for k, v in shape.domains.items()}
    domains[next(iter(domains))] += n - sum(domains.values())
    bench = SyntheticBenchmark(m_src + m_tgt, n, domain_sizes=domains, seed=args.seed)
    t0 = time.perf_counter()
    source = PackedRows(bench.packed_rows(slice(0, m_src)), n)
    targets = PackedRows(bench.packed_rows(slice(m_src, m_src + m_tgt)), n)
    truth = popcount_rows(targets.packed, n) / n
    packed_mib = source.packed.nbytes / MIB
    groups = bench.sample_domains()
    print(
        f"{m_src:,} source + {m_tgt:,} target models x {n:,} samples ({len(domains)} domains), n' = {args.budget}; "
        f"packed source rows {packed_mib:,.0f} MiB; generated in {time.perf_counter() - t0:.0f} s"
    )
    rows = []
    head = f"{'method':<16} {'seconds':>8} {'peak MiB':>9} {'peak / packed':>13} {'MAE pts':>8}  data"
    print(head + "\n" + "-" * len(head))
    for name in [w for w in args.methods.split(",") if w]:
        if name not in PACKED_METHODS:
            print(f"{name:<16} needs a dense source: run it with --subsample --methods {name}")
            continue
        task = EstimationTask(source, args.budget, seed=args.seed, groups=groups)
        row = measure(name, task, targets, truth) | {"data": "full, packed"}
        rows.append(row)
        print(
            f"{name:<16} {row['seconds']:>8.1f} {row['peak_mib']:>9.1f} {row['peak_mib'] / packed_mib:>12.2f}x "
            f"{100 * row['mae']:>8.2f}  {row['data']}",
            flush=True,
        )
    if args.subsample:
        sub_m, sub_n = (int(v) for v in args.subsample.lower().split("x"))
        rng = np.random.default_rng(args.seed)
        models = np.sort(rng.choice(m_src, size=min(sub_m, m_src), replace=False))
        cols = np.sort(rng.choice(n, size=min(sub_n, n), replace=False))
        dense = source.gather(models, cols)
        dense_targets = targets.gather(None, cols)
        sub_truth = dense_targets.mean(axis=1)
        for name in [w for w in args.methods.split(",") if w in DENSE_METHODS] or DENSE_METHODS:
            task = EstimationTask(dense, args.budget, seed=args.seed, groups=groups[cols])
            row = measure(name, task, dense_targets, sub_truth) | {
                "data": f"subsample {dense.shape[0]}x{dense.shape[1]}"
            }
            rows.append(row)
            print(
                f"{name:<16} {row['seconds']:>8.1f} {row['peak_mib']:>9.1f} {row['peak_mib'] / packed_mib:>12.2f}x "
                f"{100 * row['mae']:>8.2f}  {row['data']}",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps({"n": n, "sources": m_src, "targets": m_tgt, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
