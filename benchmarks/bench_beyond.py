"""Measure the beyond-the-paper extensions (lifelong.sortsearch: intervals, rankings, resort) on a zoo matrix.

1. Interval coverage: seeded half/half splits of the zoo's models (ranking / held-out); for every held-out model,
   the 90% and 95% intervals of its accuracy at n' in {64, 256, 1024, 2048}; the fraction of held-out models whose
   true accuracy lies inside, pooled over the splits, and the mean width. Two samplings: "uniform" (the same
   evenly spread positions for every model, as Sort & Search does) and "random" (each model its own draw).
2. Rankings: every method on the same split (seed 0) at n' in {1024, 2048, 4096}: sample-level error, kappa,
   aggregate error of |y|/n, Pearson r, and the aggregate error of the model-assisted accuracy (|y|/n plus the
   mean residual on the n' evaluated samples); then mean +- sd of error and kappa over `--rank-splits` splits, and
   a scan of the number of clusters K (K = 60 with 60 ranking models: one order per ranking model). "largest
   share" is the share of held-out models assigned to the most chosen candidate order.
3. Re-sort policies: the benchmark grows by whole domains (4 at start, then 1 per step) while models arrive; the
   probes' estimation error under never / always / the policy and its single conditions, with the re-sorts made
   and the extra cells evaluated (% of the whole matrix), averaged over `--growth-seeds` model shuffles.

Run: python benchmarks/bench_beyond.py [--zoo /work/exp/zoo] [--synthetic] [--splits 10] [--rank-splits 3]
     [--growth-seeds 3] [--json PATH]
Without OUT/correctness.npy (or with --synthetic) a SyntheticBenchmark of the zoo's shape is used instead.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import numpy as np

from lifelong.commands.bench_reports import format_coverage, format_rankings
from lifelong.sortsearch.intervals import interval_coverage
from lifelong.sortsearch.rankings import ClusterPredictor, compare_rankings, score_rows
from lifelong.sortsearch.resort import ResortPolicy
from lifelong.sortsearch.simulation import simulate_growth

COVERAGE_BUDGETS = (64, 256, 1024, 2048)
RANK_BUDGETS = (1024, 2048, 4096)
CLUSTER_SCAN = (1, 2, 4, 8, 16, 30, 60)
METHODS = (
    "sum",
    "recursive",
    "cluster2",
    "cluster4",
    "cluster8",
    "domain",
    "cluster4+domain",
    "rasch",
    "2pl",
    "2pl-dp",
)


def load(zoo: Path, synthetic: bool) -> tuple[np.ndarray, np.ndarray, str]:
    """(correctness [models, samples], domain label per sample, description)."""
    if not synthetic and (zoo / "correctness.npy").is_file():
        A = np.load(zoo / "correctness.npy")
        with (zoo / "samples.csv").open(newline="") as handle:
            domains = np.array([row["domain"] for row in csv.DictReader(handle)])
        return A, domains, f"zoo {zoo}"
    from lifelong.sortsearch.synthetic import SyntheticBenchmark

    bench = SyntheticBenchmark(120, 32000, n_domains=16, seed=0)
    return bench.block(), bench.sample_domains().astype(str), "SyntheticBenchmark(120, 32000, 16 domains, seed 0)"


def split(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(m)
    return np.sort(perm[: m // 2]), np.sort(perm[m // 2 :])


def coverage(A: np.ndarray, splits: int) -> list[dict]:
    pooled: dict[tuple, dict] = {}
    for sampling in ("uniform", "random"):
        for s in range(splits):
            r, e = split(A.shape[0], s)
            for row in interval_coverage(A[r], A[e], COVERAGE_BUDGETS, sampling=sampling, seed=s):
                key = (row["sampling"], row["budget"], row["method"])
                acc = pooled.setdefault(key, {k: 0 for k in row if k not in ("budget", "method", "sampling")})
                m = row["models"]
                for k, v in row.items():
                    if k in ("budget", "method", "sampling"):
                        continue
                    acc[k] += v if k == "models" or k.startswith("hits") else v * m
    out = []
    for (sampling, budget, method), acc in pooled.items():
        m = acc["models"]
        row = {"budget": budget, "method": method, "sampling": sampling}
        row |= {k: (v if k == "models" or k.startswith("hits") else v / m) for k, v in acc.items()}
        out.append(row)
    return out


def growth(A: np.ndarray, domains: np.ndarray, seeds: int, budget: int) -> list[dict]:
    window = 6
    policies = {
        "never": "never",
        "always": "always",
        "policy f=.25 g=1 tol=.03": ResortPolicy(0.25, 1.0, 0.03, window),
        "samples f=.25": ResortPolicy(0.25, None, None, window),
        "samples f=.5": ResortPolicy(0.5, None, None, window),
        "models g=1": ResortPolicy(None, 1.0, None, window),
        "fit tol=.03": ResortPolicy(None, None, 0.03, window),
    }
    out = []
    for promote in (True, False):
        for name, policy in policies.items():
            runs = [
                simulate_growth(
                    A,
                    domains,
                    policy,
                    initial_domains=4,
                    initial_ranking=10,
                    probe_models=30,
                    budget=budget,
                    sample_budget=4,
                    promote=promote,
                    seed=seed,
                )
                for seed in range(seeds)
            ]
            out.append(
                {
                    "policy": name,
                    "promote": promote,
                    **{
                        key: float(np.mean([r[key] for r in runs]))
                        for key in (
                            "resorts",
                            "extra_cells",
                            "mean_error",
                            "mean_aggregate_error",
                            "mean_kappa",
                            "final_error",
                            "insertion_error",
                        )
                    },
                    "extra_pct": float(np.mean([r["extra_cells"] / r["full_cells"] for r in runs])),
                }
            )
    return out


def format_growth(rows: list[dict]) -> str:
    head = (
        f"{'policy':>26} {'promote':>7} {'resorts':>7} {'extra cells %':>13} {'probe err %':>11} {'agg err %':>9}"
        f" {'kappa':>6} {'final err %':>11} {'insert err %':>12}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['policy']:>26} {str(r['promote']):>7} {r['resorts']:>7.2f} {100 * r['extra_pct']:>13.1f}"
            f" {100 * r['mean_error']:>11.2f} {100 * r['mean_aggregate_error']:>9.2f} {r['mean_kappa']:>6.3f}"
            f" {100 * r['final_error']:>11.2f} {100 * r['insertion_error']:>12.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", type=Path, default=Path("/work/exp/zoo"))
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--rank-splits", type=int, default=3)
    parser.add_argument("--growth-seeds", type=int, default=3)
    parser.add_argument("--growth-budget", type=int, default=256)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    A, domains, what = load(args.zoo, args.synthetic)
    print(f"matrix: {what}: {A.shape[0]} models x {A.shape[1]} samples, {np.unique(domains).size} domains")
    results: dict = {"matrix": what, "shape": list(A.shape)}

    t = time.perf_counter()
    cov = coverage(A, args.splits)
    print(f"\n1. interval coverage, {args.splits} half/half splits pooled ({time.perf_counter() - t:.1f} s)")
    print(format_coverage(sorted(cov, key=lambda r: (r["sampling"] != "uniform", r["budget"]))))
    results["coverage"] = cov

    t = time.perf_counter()
    r, e = split(A.shape[0], 0)
    ranks = compare_rankings(A, r, e, RANK_BUDGETS, methods=METHODS, domains=domains)
    print(f"\n2. rankings, split seed 0: {r.size} ranking / {e.size} held-out models ({time.perf_counter() - t:.1f} s)")
    print(format_rankings(ranks))
    results["rankings"] = ranks
    if args.rank_splits > 1:
        t = time.perf_counter()
        per_split = [ranks] + [
            compare_rankings(A, *split(A.shape[0], s), RANK_BUDGETS, methods=METHODS, domains=domains)
            for s in range(1, args.rank_splits)
        ]
        print(f"\n2b. mean +- sd over split seeds 0..{args.rank_splits - 1} ({time.perf_counter() - t:.1f} s)")
        head = f"{'budget':>7} {'method':>10} {'error %':>14} {'kappa':>14} {'agg+res %':>10}"
        print(head + "\n" + "-" * len(head))
        summary = []
        for budget in RANK_BUDGETS:
            for method in METHODS:
                rows = [x for run in per_split for x in run if x["method"] == method and x["budget"] == budget]
                err = np.array([x["error"] for x in rows]) * 100
                kap = np.array([x["kappa"] for x in rows])
                agg = np.array([x["corrected_aggregate_error"] for x in rows]) * 100
                print(
                    f"{budget:>7} {method:>10} {err.mean():>7.2f} +-{err.std():>4.2f}"
                    f" {kap.mean():>7.3f} +-{kap.std():>5.3f} {agg.mean():>10.2f}"
                )
                summary.append({"budget": budget, "method": method, "error": err.tolist(), "kappa": kap.tolist()})
        results["rankings_splits"] = summary

    t = time.perf_counter()
    r, e = split(A.shape[0], 0)
    head = f"{'K':>3} {'budget':>7} {'error %':>8} {'kappa':>7} {'largest share %':>15}"
    scan_lines, scan = [head, "-" * len(head)], []
    for k in CLUSTER_SCAN:
        predictor = ClusterPredictor(A[r], k, seed=0)
        for budget in (256, 1024, 2048):
            predicted = predictor.predict(A[e][:, predictor.sample_ids(budget)], budget)
            score = score_rows(A[e], predicted)
            share = np.bincount(predictor.last_choice).max() / e.size
            scan_lines.append(
                f"{k:>3} {budget:>7} {100 * score['error']:>8.2f} {score['kappa']:>7.3f} {100 * share:>15.1f}"
            )
            scan.append({"k": k, "budget": budget, **score, "largest_share": float(share)})
    print(f"\n2c. number of clusters K (plus the global order), split seed 0 ({time.perf_counter() - t:.1f} s)")
    print("\n".join(scan_lines))
    results["cluster_scan"] = scan

    t = time.perf_counter()
    grow = growth(A, domains, args.growth_seeds, args.growth_budget)
    print(
        f"\n3. re-sort policies, n'={args.growth_budget}, m'=4, 10 initial ranking models, 30 probes, "
        f"{args.growth_seeds} seeds ({time.perf_counter() - t:.1f} s)"
    )
    print(format_growth(grow))
    results["growth"] = grow
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
