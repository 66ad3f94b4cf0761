"""Measure the beyond-the-paper extensions (lifelong.sortsearch: intervals, rankings, resort) on a zoo matrix.

1. Intervals and the leaderboard: 80 ranking models, the rest of the zoo estimated, per n' in {8, 128, 1024, 4096}
   and per sampling ("uniform": the same evenly spread positions for every model, as Sort & Search does; "random":
   each model its own draw): the share of estimated models whose true accuracy lies inside each method's 95%
   interval and the mean width, pooled over `--splits` random 80/rest splits of the models. Then the leaderboard
   check through a real BenchStore (split 0): the 80 ranking models imported and sorted, every other model added
   with `insert.add_model` from its n' planned outcomes, and `BenchStore.accuracies()` (what `lifelong bench
   status` shows) read back: the share of estimated models whose leaderboard accuracy lies inside its own interval
   (target >= 90%), the share whose true accuracy does (coverage), and the mean |leaderboard accuracy - truth| in
   points (target <= 1.5), beside the same error of the Sort & Search threshold's k/n (what the leaderboard showed
   before issue 11).
2. Rankings: every method on the same half/half split (seed 0) at n' in {1024, 2048, 4096}: sample-level error,
   kappa, aggregate error of |y|/n, Pearson r, and the aggregate error of the model-assisted accuracy (|y|/n plus
   the mean residual on the n' evaluated samples); then mean +- sd of error and kappa over `--rank-splits` splits,
   and a scan of the number of clusters K. "largest share" is the share of held-out models assigned to the most
   chosen candidate order.
3. Re-sort policies: the benchmark grows by whole domains (4 at start, then 1 per step) while models arrive; the
   probes' estimation error under never / always / the policy and its single conditions, with the re-sorts made
   and the extra cells evaluated (% of the whole matrix), averaged over `--growth-seeds` model shuffles.

Run: python benchmarks/bench_beyond.py [--zoo DIR] [--zoo-models 160] [--zoo-test-samples 1000] [--synthetic]
     [--sections intervals,rankings,growth] [--splits 5] [--rank-splits 3] [--growth-seeds 3] [--json PATH] [--quick]
The zoo is built once into DIR (default ~/.cache/lifelong/bench-zoo; `lifelong bench build-zoo` with
--models/--test-samples as given, 2 Ray workers, resumable) and reused by later runs. With --synthetic a
SyntheticBenchmark of the zoo's shape is used instead. --quick: every section on a synthetic 100 x 4,800 matrix
(the zoo is neither read nor built), 1 coverage split, 2 ranking splits, 1 growth seed.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from lifelong.commands.bench_reports import format_coverage, format_rankings
from lifelong.sortsearch.insert import add_full_model, add_model, plan_model, sort_store
from lifelong.sortsearch.intervals import INTERVAL_METHODS, interval_coverage
from lifelong.sortsearch.rankings import ClusterPredictor, compare_rankings, score_rows
from lifelong.sortsearch.resort import ResortPolicy
from lifelong.sortsearch.simulation import simulate_growth
from lifelong.sortsearch.store import BenchStore

COVERAGE_BUDGETS = (8, 128, 1024, 4096)
RANKING_MODELS = 80
DEFAULT_ZOO = Path.home() / ".cache" / "lifelong" / "bench-zoo"
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


def load(zoo: Path, synthetic: bool, models: int, test_samples: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(correctness [models, samples], domain label per sample, description); builds the zoo into `zoo` if absent."""
    if synthetic:
        from lifelong.sortsearch.synthetic import SyntheticBenchmark

        bench = SyntheticBenchmark(models, 16 * test_samples, n_domains=16, seed=0)
        shape = f"SyntheticBenchmark({models}, {16 * test_samples}, 16 domains, seed 0)"
        return bench.block(), bench.sample_domains().astype(str), shape
    if not (zoo / "correctness.npy").is_file():
        from lifelong.sortsearch.zoo import build_zoo

        print(f"building the zoo into {zoo} ({models} models, {test_samples} test samples x 16 domains; resumable)")
        started = time.perf_counter()
        info = build_zoo(zoo, n_models=models, n_test=test_samples, executor="ray", num_cpus=2, on_note=print)
        print(f"zoo built in {time.perf_counter() - started:.0f} s ({info['source']}, {info['n_samples']} samples)")
    A = np.load(zoo / "correctness.npy")
    with (zoo / "samples.csv").open(newline="") as handle:
        domains = np.array([row["domain"] for row in csv.DictReader(handle)])
    source = json.loads((zoo / "zoo.json").read_text()).get("source", "?")
    return A, domains, f"zoo {zoo} ({source})"


def split(m: int, seed: int, ranking: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of m models into `ranking` ranking models (default half) and the held-out rest."""
    perm = np.random.default_rng(seed).permutation(m)
    cut = m // 2 if ranking is None else ranking
    return np.sort(perm[:cut]), np.sort(perm[cut:])


def coverage(A: np.ndarray, splits: int, ranking: int = RANKING_MODELS) -> list[dict]:
    """Interval coverage per sampling, budget and method, pooled over `splits` seeded ranking/held-out splits."""
    pooled: dict[tuple, dict] = {}
    for sampling in ("uniform", "random"):
        for s in range(splits):
            r, e = split(A.shape[0], s, ranking)
            for row in interval_coverage(
                A[r], A[e], COVERAGE_BUDGETS, confidences=(0.95,), methods=INTERVAL_METHODS, sampling=sampling, seed=s
            ):
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


def leaderboard(A: np.ndarray, ranking: int = RANKING_MODELS, seed: int = 0) -> list[dict]:
    """The leaderboard check through a real store: per sampling and budget, every held-out model added from its
    planned outcomes and read back with `BenchStore.accuracies()`, against its true accuracy."""
    rank_ids, held = split(A.shape[0], seed, ranking)
    truth = A[held].mean(axis=1)
    n = A.shape[1]
    out = []
    with tempfile.TemporaryDirectory(prefix="bench-beyond-") as tmp:
        for sampling in ("uniform", "random"):
            for budget in COVERAGE_BUDGETS:
                with BenchStore.building(Path(tmp) / f"{sampling}-{budget}") as store:
                    records = [dict(source="zoo", domain="-", label=0, content_hash=str(j)) for j in range(n)]
                    store.add_samples(records)
                    for i in rank_ids:
                        add_full_model(store, f"rank{i}", A[i])
                    sort_store(store)
                    started = time.perf_counter()
                    ids = []
                    for j, i in enumerate(held):
                        plan = plan_model(store, budget, sampling=sampling, seed=j)
                        ids.append(add_model(store, f"model{i}", plan, A[i, plan.sample_ids])[0])
                    seconds = (time.perf_counter() - started) / len(held)
                    board = store.accuracies(ids)
                acc = np.array([board[i].accuracy for i in ids])
                low, high = np.array([board[i].low for i in ids]), np.array([board[i].high for i in ids])
                threshold = np.array([board[i].threshold_accuracy for i in ids])
                out.append(
                    {
                        "sampling": sampling,
                        "budget": budget,
                        "models": len(ids),
                        "inside_own_interval": float(np.mean((low <= acc) & (acc <= high))),
                        "truth_covered": float(np.mean((low - 1e-12 <= truth) & (truth <= high + 1e-12))),
                        "mae_points": float(100 * np.abs(acc - truth).mean()),
                        "threshold_inside_interval": float(np.mean((low <= threshold) & (threshold <= high))),
                        "threshold_mae_points": float(100 * np.abs(threshold - truth).mean()),
                        "mean_width_points": float(100 * (high - low).mean()),
                        "add_model_seconds": seconds,
                    }
                )
    return out


def format_leaderboard(rows: list[dict]) -> str:
    head = (
        f"{'sampling':>8} {'budget':>6} {'models':>6} {'acc in own CI %':>15} {'truth in CI %':>13}"
        f" {'|acc-truth|':>11} {'width':>6} {'k/n in CI %':>11} {'|k/n-truth|':>11} {'add_model s':>11}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['sampling']:>8} {r['budget']:>6} {r['models']:>6} {100 * r['inside_own_interval']:>15.1f}"
            f" {100 * r['truth_covered']:>13.1f} {r['mae_points']:>11.2f} {r['mean_width_points']:>6.2f}"
            f" {100 * r['threshold_inside_interval']:>11.1f} {r['threshold_mae_points']:>11.2f}"
            f" {r['add_model_seconds']:>11.3f}"
        )
    for r in rows:
        if r["budget"] == 1024:
            ok = r["inside_own_interval"] >= 0.9 and r["mae_points"] <= 1.5
            lines.append(
                f"targets at n' = 1,024, {r['sampling']}: acc in own CI {100 * r['inside_own_interval']:.1f}% "
                f"(>= 90%), |acc-truth| {r['mae_points']:.2f} points (<= 1.5): {'met' if ok else 'NOT met'}"
            )
    return "\n".join(lines)


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
    parser.add_argument("--zoo", type=Path, default=DEFAULT_ZOO, help="zoo folder (built there if absent)")
    parser.add_argument("--zoo-models", type=int, default=160)
    parser.add_argument("--zoo-test-samples", type=int, default=1000)
    parser.add_argument("--synthetic", action="store_true")
    parser.add_argument("--sections", default="intervals,rankings,growth")
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--rank-splits", type=int, default=3)
    parser.add_argument("--growth-seeds", type=int, default=3)
    parser.add_argument("--growth-budget", type=int, default=256)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="smoke run: small synthetic matrix, fewer splits")
    args = parser.parse_args()
    if args.quick:
        args.synthetic, args.zoo_models, args.zoo_test_samples = True, 100, 300
        args.splits, args.rank_splits, args.growth_seeds = 1, 2, 1
        print("--quick: the zoo is skipped (building it trains 160 models); a synthetic matrix stands in")
    sections = {s.strip() for s in args.sections.split(",")}

    A, domains, what = load(args.zoo, args.synthetic, args.zoo_models, args.zoo_test_samples)
    print(f"matrix: {what}: {A.shape[0]} models x {A.shape[1]} samples, {np.unique(domains).size} domains")
    results: dict = {"matrix": what, "shape": list(A.shape)}

    if "intervals" in sections:
        t = time.perf_counter()
        cov = coverage(A, args.splits)
        held = A.shape[0] - RANKING_MODELS
        print(
            f"\n1. interval coverage (95%): {RANKING_MODELS} ranking / {held} estimated models, {args.splits} splits "
            f"pooled ({time.perf_counter() - t:.1f} s)"
        )
        print(format_coverage(sorted(cov, key=lambda r: (r["sampling"] != "uniform", r["budget"]))))
        results["coverage"] = cov
        t = time.perf_counter()
        board = leaderboard(A)
        print(
            f"\n1b. leaderboard check through a BenchStore (split 0, {held} models added with add_model per row, "
            f"{time.perf_counter() - t:.1f} s); k/n: Sort & Search's threshold, what the leaderboard showed before"
        )
        print(format_leaderboard(board))
        results["leaderboard"] = board

    if "rankings" in sections:
        rankings_sections(A, domains, args, results)

    if "growth" in sections:
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


def rankings_sections(A: np.ndarray, domains: np.ndarray, args: argparse.Namespace, results: dict) -> None:
    """Sections 2, 2b and 2c: ranking methods on half/half splits, and the scan of the number of clusters."""
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
    head = f"{'K':>3} {'budget':>7} {'error %':>8} {'kappa':>7} {'largest share %':>15}"
    scan_lines, scan = [head, "-" * len(head)], []
    for k in [k for k in CLUSTER_SCAN if k <= r.size]:
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


if __name__ == "__main__":
    main()
