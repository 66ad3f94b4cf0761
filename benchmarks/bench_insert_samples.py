"""The paper's Fig. 7(a) on the toolkit's zoo: how well new samples' difficulty is estimated from m' models.

A sample's difficulty is how many of the m models get it right. Sort & Search's insert_D evaluates a new sample on
m' models spread over the models ranked most accurate first and extrapolates the DP threshold of those outcomes to
all m (`lifelong bench plan-samples` / `add-samples`, `insert.plan_samples` and `insert.sample_thresholds`). Per
seed, `--held-out` samples of the zoo's matrix are held out, the other samples go into a real BenchStore (every
model fully observed: the ranking), and the held-out samples are inserted by estimation at each m'. Printed per m':
the mean absolute error of the estimated difficulty as a fraction of the m models, |k - true count| / m (mean and
spread over seeds), the paper's MAE (its Eq. 2, the Hamming distance of the predicted column to the true one, / m),
the cost (model evaluations per new sample) and its ratio to the baseline in the same run: evaluating every model on
the new samples (MAE 0, cost m). `m' = m` is the estimator on every model: the step's own (aleatoric) error.

A cross-check runs the commands' workflows on the first seed (`lifelong.api.bench_plan_samples` with a plan file,
then `bench_add_samples` with a results CSV: what `bench plan-samples --out` and `bench add-samples` run) and reads
the store back: the planned cells must be the truth and every other cell the step the estimate predicts, else exit
1.

Run: python benchmarks/bench_insert_samples.py [--zoo DIR] [--zoo-models 160] [--zoo-test-samples 1000]
     [--synthetic MODELSxSAMPLES] [--budgets 4,8,...,128] [--held-out 1000] [--seeds 5] [--json PATH] [--quick]
The zoo is `benchmarks/bench_beyond.py`'s (default ~/.cache/lifelong/bench-zoo: `lifelong bench build-zoo` with
--models/--test-samples, built there when absent, resumable). `--synthetic 2000x20000` uses a SyntheticBenchmark of
that shape instead (m' much smaller than m, as on Lifelong-CIFAR10's 31,250 models). --quick: a synthetic
100 x 4,800 matrix, m' up to 64, 2 seeds, 400 held-out samples (the zoo is neither read nor built).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _reproduce_common import this_machine
from bench_beyond import DEFAULT_ZOO, load

from lifelong import api
from lifelong.commands.bench_inputs import parse_budgets
from lifelong.sortsearch.experiment import run_experiment
from lifelong.sortsearch.insert import plan_samples, sample_thresholds
from lifelong.sortsearch.search import global_threshold
from lifelong.sortsearch.store import BenchStore

PAPER_M_PRIME, PAPER_MAE = 64, 0.15  # Fig. 7(a), Lifelong-CIFAR10: MAE below 0.15 at m' = 64 of 31,250 models


def build_store(path: Path, A: np.ndarray, columns: np.ndarray) -> BenchStore:
    """A store of every model of A (fully observed) on `columns`; its accuracies rank the models."""
    with BenchStore.building(path) as store:
        store.add_samples([dict(source="zoo", domain="-", label=0, content_hash=f"s{j}") for j in columns.tolist()])
        store.add_models([f"model-{i}" for i in range(A.shape[0])], rows=np.packbits(A[:, columns], axis=1))
    return BenchStore.open(path)


def errors(store: BenchStore, A: np.ndarray, held: np.ndarray, budget: int, sampling: str, seed: int) -> dict:
    """Difficulty MAE and the paper's (Hamming) MAE, as fractions of the models, of inserting `held` at m'."""
    plan = plan_samples(store, budget, sampling=sampling, seed=seed)
    outcomes = A[plan.model_ids][:, held]
    k = sample_thresholds(plan, outcomes)
    m = A.shape[0]
    truth = A[:, held].sum(axis=0, dtype=np.int64)
    predicted = np.arange(m)[:, None] < k[None, :]  # ranked models x samples
    hamming = (predicted != A[plan.ranked_models][:, held].astype(bool)).mean()
    count = global_threshold(outcomes.T, plan.positions, m)  # the m' outcomes' count, extrapolated
    return {
        "difficulty_mae": float(np.abs(k - truth).mean() / m),
        "paper_mae": float(hamming),
        "count_mae": float(np.abs(count - truth).mean() / m),
    }


def cross_check(store_path: Path, A: np.ndarray, held: np.ndarray, budget: int, work: Path) -> str:
    """Run `bench plan-samples --out` and `bench add-samples` (their API functions) on the store; the cells read back
    must be the planned models' outcomes and the estimate's step elsewhere. Returns a line saying so, or exits 1."""
    plan_file, new, results = work / "plan.json", work / "new.csv", work / "results.csv"
    try:
        api.bench_plan_samples(api.BenchPlanSamplesSpec(store_path, budget, out=plan_file))
    except api.LifelongError as error:
        sys.exit(f"cross-check: plan-samples failed: {error}")
    plan = json.loads(plan_file.read_text())
    planned = np.asarray(plan["model_ids"])
    with new.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["source", "domain", "label", "content_hash"])
        writer.writerows([["zoo", "held-out", 0, f"new{j}"] for j in held.tolist()])
    with results.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model", "sample_id", "correct"])
        for name, i in zip(plan["models"], planned.tolist(), strict=True):
            writer.writerows([name, j, int(A[i, column])] for j, column in enumerate(held.tolist()))
    started = time.perf_counter()
    try:
        api.bench_add_samples(api.BenchAddSamplesSpec(store_path, new, results, plan=plan_file))
    except api.LifelongError as error:
        sys.exit(f"cross-check: add-samples failed: {error}")
    seconds = time.perf_counter() - started
    with BenchStore.open(store_path) as store:
        n, m = store.size()
        cells = np.unpackbits(store.read_rows(np.arange(m)), axis=1, count=n)[:, n - held.size :]
        ranking = np.asarray(plan["ranking"])
        from lifelong.sortsearch.insert import SamplePlan

        k = sample_thresholds(SamplePlan(planned, np.asarray(plan["positions"]), ranking), A[planned][:, held])
    expected = np.empty_like(cells)
    expected[ranking] = (np.arange(m)[:, None] < k[None, :]).astype(np.uint8)
    expected[planned] = A[planned][:, held]
    if not np.array_equal(cells, expected):
        sys.exit(f"cross-check FAILED: {int((cells != expected).sum())} cells differ from the planned step and facts")
    return (
        f"cross-check: `bench plan-samples --out` + `bench add-samples` at m' = {budget} on {held.size} samples "
        f"({seconds:.1f} s): the store holds the planned outcomes and the estimate's step, cell for cell: ok"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zoo", type=Path, default=DEFAULT_ZOO)
    parser.add_argument("--zoo-models", type=int, default=160)
    parser.add_argument("--zoo-test-samples", type=int, default=1000)
    parser.add_argument("--synthetic", default=None, metavar="MODELSxSAMPLES")
    parser.add_argument("--budgets", default="4,8,...,128")
    parser.add_argument("--sampling", default="uniform,random")
    parser.add_argument("--held-out", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.synthetic, args.budgets, args.seeds, args.held_out = args.synthetic or "100x4800", "4,8,...,64", 2, 400
    started = time.perf_counter()
    if args.synthetic:
        from lifelong.sortsearch.synthetic import SyntheticBenchmark

        models, samples = (int(v) for v in args.synthetic.lower().split("x"))
        A = SyntheticBenchmark(models, samples, n_domains=16, seed=0).block()
        what = f"SyntheticBenchmark({models}, {samples}, 16 domains, seed 0)"
    else:
        A, _, what = load(args.zoo, False, args.zoo_models, args.zoo_test_samples)
    A = np.ascontiguousarray(A, dtype=np.uint8)
    m, n = A.shape
    budgets = [b for b in parse_budgets(args.budgets) if b < m] + [m]
    samplings = [s.strip() for s in args.sampling.split(",") if s.strip()]
    print(f"{what}: {m} models x {n} samples; {args.held_out} held-out samples per seed, {args.seeds} seeds")
    print(f"printed on {this_machine()}")
    table: dict[tuple[str, int], list[dict]] = {}
    check, gap = "", 0.0
    with tempfile.TemporaryDirectory(prefix="bench-insert-samples-") as tmp:
        for seed in range(args.seeds):
            held = np.sort(np.random.default_rng(seed).choice(n, size=args.held_out, replace=False))
            rest = np.setdiff1d(np.arange(n), held)
            path = Path(tmp) / f"store{seed}"
            with build_store(path, A, rest) as store:
                for sampling in samplings:
                    for budget in budgets if sampling == samplings[0] else budgets[:-1]:  # m' = m: one plan
                        table.setdefault((sampling, budget), []).append(errors(store, A, held, budget, sampling, seed))
            if "uniform" in samplings:  # `bench experiment --transpose` computes the same on the plain matrices
                same = run_experiment(A[:, rest], A[:, held], budgets=budgets, transpose=True, validate=False)
                for row in same:
                    ours = table["uniform", row["budget"]][-1]
                    pairs = (("error", "paper_mae"), ("aggregate_error", "difficulty_mae"))
                    pairs += (("global_aggregate_error", "count_mae"),)
                    gap = max(gap, *(abs(row[theirs] - ours[key]) for theirs, key in pairs))
            if seed == 0:
                cut = max(b for b in budgets if b <= max(1, m // 2))
                check = cross_check(path, A, held, min(PAPER_M_PRIME, cut), Path(tmp))
    rows = []
    for (sampling, budget), runs in table.items():
        row = {"sampling": sampling, "m_prime": budget, "models": m, "cost": budget, "seeds": len(runs)}
        for key in ("difficulty_mae", "paper_mae", "count_mae"):
            values = np.array([r[key] for r in runs])
            row[key], row[key + "_sd"] = float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0
        rows.append(row)
    print_table(rows, m)
    print(check)
    if "uniform" in samplings:
        if gap > 1e-9:
            sys.exit(f"`bench experiment --transpose` disagrees with the store's path by {gap:.2e}: FAILED")
        print(
            f"`bench experiment --transpose` on the same split gives the same uniform rows (max difference {gap:.1e})"
        )
    print(f"wall time {time.perf_counter() - started:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"matrix": what, "rows": rows, "cross_check": check}, indent=2))


def print_table(rows: list[dict], m: int) -> None:
    """Per sampling and m': the MAEs (mean +- sd over seeds), cost and its ratio to evaluating all m models."""
    head = f"{'sampling':>8} {'m_prime':>7} {'difficulty MAE':>17} {'Eq. 2 MAE':>17} {'count MAE':>17}"
    head += f" {'cost':>6} {'cost / all':>10}"
    print(
        "\nMAE as a fraction of the models (mean +- sd over seeds). difficulty: |k - true count| / m, k the DP step "
        "that add-samples stores;\nEq. 2: cells of the new column predicted wrong; count: the m' outcomes' count "
        "extrapolated (the paper's 'global' estimator, not stored).\ncost: model evaluations per new sample"
    )
    print(head)
    print("-" * len(head))
    exact = "0 (exact)"
    print(f"{'all':>8} {m:>7} {exact:>17} {exact:>17} {exact:>17} {m:>6} {1:>10.3f}   <- baseline: every model")
    for r in rows:
        note = "   (the step on every model)" if r["m_prime"] == m else ""
        cells = " ".join(
            f"{r[key]:>8.4f} +- {r[key + '_sd']:.4f}" for key in ("difficulty_mae", "paper_mae", "count_mae")
        )
        print(f"{r['sampling']:>8} {r['m_prime']:>7} {cells} {r['cost']:>6} {r['cost'] / m:>10.3f}{note}")
    floor = {r["sampling"]: r["paper_mae"] for r in rows if r["m_prime"] == m}.get("uniform")
    for r in (r for r in rows if r["sampling"] == "uniform" and r["m_prime"] == PAPER_M_PRIME):
        below = {key: "below" if r[key] < PAPER_MAE else "NOT below" for key in ("difficulty_mae", "paper_mae")}
        print(
            f"m' = {PAPER_M_PRIME} of {m} models ({m / PAPER_M_PRIME:.1f}x fewer evaluations than all): difficulty MAE "
            f"{r['difficulty_mae']:.4f} ({below['difficulty_mae']} the paper's {PAPER_MAE}), Eq. 2 MAE "
            f"{r['paper_mae']:.4f} ({below['paper_mae']}; {floor:.4f} with every model); the paper: below "
            f"{PAPER_MAE} at m' = {PAPER_M_PRIME} of 31,250 models on Lifelong-CIFAR10"
        )


if __name__ == "__main__":
    main()
