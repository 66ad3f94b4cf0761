"""Benchmark the semantic (single-linkage) fact split at the large scale's fact counts, against scipy in the same run.

Synthetic facts: 115,995 SPO + 42,491 SP + 6,664 S (165,150 distinct), words drawn Zipf(a=1.1) by rank from
vocabularies S 8,000, P 1,000, O 5,000; word vectors random unit 300-d (seeded). The S-only facts' words are drawn
uniformly without replacement (so only part of the facts chain at distance 0 to an S-only fact).

Measured: lifelong's exact MST single linkage + cut into 8 tasks (wall time, peak RSS of the process); optionally the
same without the distance-0 dominance reduction (--no-reduce: dense Prim over every fact). Baseline in the same run:
scipy.cluster.hierarchy.linkage(condensed, "single") on a --subset of the facts (condensed matrix built with the same
per-part tables) vs lifelong on that subset; merge heights must agree (within HEIGHT_TOLERANCE, else exit 1); the
ratio is printed. Targets: full scale in <= 600 s and <= 4 GB peak RSS.

Run: python benchmarks/bench_fact_split.py [--scale 1.0] [--subset 5000] [--no-reduce] [--seed 0] [--quick]
--quick: a smoke run at scale 0.02 (3,303 facts), scipy on 1,000 of them, --no-reduce included.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import scipy.cluster.hierarchy as sch

from lifelong.facts.linkage import condensed_distances, cut_mst, dominators, single_linkage_mst
from lifelong.facts.splits import Split, balance_rows, balance_table

COUNTS = {"SPO": 115_995, "SP": 42_491, "S": 6_664}
VOCAB = (8_000, 1_000, 5_000)
ZIPF_A = 1.1
DIM = 300
HEIGHT_TOLERANCE = 1e-9  # both sides read the same float64 per-part tables


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def check_heights(what: str, diff: float) -> None:
    """Exit 1 when two single linkages' sorted merge heights differ by more than HEIGHT_TOLERANCE."""
    if diff > HEIGHT_TOLERANCE:
        raise SystemExit(f"FAIL: {what}: merge heights differ by {diff:.1e} (> {HEIGHT_TOLERANCE:.0e})")


def zipf(rng: np.random.Generator, vocab: int, size: int) -> np.ndarray:
    p = np.arange(1, vocab + 1, dtype=np.float64) ** -ZIPF_A
    return rng.choice(vocab, size=size, p=p / p.sum())


def distinct(rng: np.random.Generator, count: int, columns) -> np.ndarray:
    """`count` distinct rows of Zipf word ids (oversample, unique, keep in draw order)."""
    rows = np.zeros((0, len(columns)), dtype=np.int64)
    while len(rows) < count:
        draw = np.stack([zipf(rng, VOCAB[c], 2 * count) for c in columns], axis=1)
        rows = np.concatenate([rows, draw])
        _, first = np.unique(rows, axis=0, return_index=True)
        rows = rows[np.sort(first)]
    return rows[:count]


def synthetic(scale: float, seed: int) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    n_spo, n_sp, n_s = (max(1, round(COUNTS[k] * scale)) for k in ("SPO", "SP", "S"))
    ids = np.full((n_spo + n_sp + n_s, 3), -1, dtype=np.int64)
    ids[:n_spo] = distinct(rng, n_spo, (0, 1, 2))
    ids[n_spo : n_spo + n_sp, :2] = distinct(rng, n_sp, (0, 1))
    ids[n_spo + n_sp :, 0] = rng.choice(VOCAB[0], size=n_s, replace=False)
    vectors = [rng.normal(size=(v, DIM)) for v in VOCAB]
    vectors = [(x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32) for x in vectors]
    images = np.minimum(rng.zipf(1.8, size=len(ids)), 5_000)  # long-tailed images per fact
    return ids[rng.permutation(len(ids))], vectors, images


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the large scale's fact counts")
    ap.add_argument("--subset", type=int, default=5_000, help="facts in the scipy baseline comparison")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--no-reduce", action="store_true", help="also time dense Prim over every fact (no reduction)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="smoke run: scale 0.02, subset 1000, --no-reduce")
    args = ap.parse_args()
    if args.quick:
        args.scale, args.subset, args.no_reduce = 0.02, 1_000, True

    t0 = time.perf_counter()
    ids, vectors, images = synthetic(args.scale, args.seed)
    n = len(ids)
    print(f"facts: {n:,} (SPO/SP/S scale {args.scale}); vocab S/P/O {VOCAB}, Zipf a={ZIPF_A}, {DIM}-d unit vectors")
    print(f"synthetic set built in {time.perf_counter() - t0:.1f} s; peak RSS so far {peak_rss_mib():.0f} MiB")

    # Baseline in the same run: scipy single linkage on a condensed matrix, subset of the facts.
    sub = ids[np.random.default_rng(args.seed + 1).choice(n, size=min(args.subset, n), replace=False)]
    t = time.perf_counter()
    z = sch.linkage(condensed_distances(sub, vectors), method="single")
    t_scipy = time.perf_counter() - t
    t = time.perf_counter()
    _, _, w_sub = single_linkage_mst(sub, vectors)
    t_ours_sub = time.perf_counter() - t
    err = float(np.abs(np.sort(w_sub) - z[:, 2]).max())
    print(
        f"subset {len(sub):,}: scipy condensed+linkage {t_scipy:.2f} s, lifelong MST {t_ours_sub:.3f} s, "
        f"ratio {t_scipy / t_ours_sub:.1f}x, max |height diff| {err:.1e}"
    )
    check_heights(f"scipy vs lifelong on {len(sub):,} facts", err)
    quad = t_scipy * (n / len(sub)) ** 2
    cond_gb = n * (n - 1) / 2 * 8 / 2**30
    print(f"naive at full n (quadratic extrapolation): ~{quad:.0f} s and a {cond_gb:.0f} GiB condensed matrix")

    roots = dominators(ids)
    print(f"distance-0 dominance leaves {(roots == np.arange(n)).sum():,} of {n:,} facts for Prim")
    t = time.perf_counter()
    u, v, w = single_linkage_mst(ids, vectors)
    task, info = cut_mst(u, v, w, n, args.tasks)
    t_full = time.perf_counter() - t
    split = Split(task, args.tasks, "semantic", "single", balance=balance_rows(task, args.tasks, images), info=info)
    print(f"semantic split, {n:,} facts -> {args.tasks} tasks: {t_full:.1f} s wall, peak RSS {peak_rss_mib():.0f} MiB")
    print(f"cut info: {info}; naive-extrapolated / measured = {quad / t_full:.0f}x")
    print(balance_table(split))

    if args.no_reduce:
        t = time.perf_counter()
        _, _, w_all = single_linkage_mst(ids, vectors, reduce=False)
        t_dense = time.perf_counter() - t
        same = float(np.abs(np.sort(w_all) - np.sort(w)).max())
        print(f"dense Prim over all {n:,} facts (no reduction): {t_dense:.1f} s, max |height diff| {same:.1e}")
        check_heights("dense Prim vs the reduced MST", same)
    print(f"total {time.perf_counter() - t0:.1f} s, peak RSS {peak_rss_mib():.0f} MiB (target <= 600 s, <= 4096 MiB)")


if __name__ == "__main__":
    main()
