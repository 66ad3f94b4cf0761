"""Benchmark Sort & Search (lifelong.sortsearch) against a straightforward dense NumPy implementation, in the same run.

Data: a planted item-response matrix (model ability vs sample difficulty), R ranking + E evaluated models x N
samples, written once to a temporary folder as dense uint8 .npy (read by the baseline) and bit-packed .npy
(read by lifelong, row chunks by positioned reads: no memory map, no whole-file load).

The baseline is the paper's algorithm written plainly: load the dense matrix, column sums and a full stable
argsort; gather the n' sampled columns of the evaluated matrix in ranked order, a dense DP per row (2b-1 on int,
cumsum, first argmax with S(0)=0); then full unpacked step predictions scattered back to sample order and scored
(error, aggregate error, kappa). The search baseline is bound by loading the dense file, so its ratio is mostly
the 8x of bit-packing plus lifelong's streaming. A naive search that permutes the whole evaluated matrix into
ranked order (A P) first is printed as an extra line, outside the PASS line. Every baseline's output must equal
lifelong's (orders and thresholds exactly, metrics to 1e-12), else the run exits non-zero.

Each (stage, side) runs in its own subprocess: once timed (best of --repeats), once under tracemalloc for the
peak of Python/NumPy heap allocations; peak RSS growth of that process is printed too (memory-mapped or
page-cached file pages are not heap allocations; the baseline's np.load copy is). Target: >= 10x faster and
>= 8x less peak memory per stage; PASS/FAIL is printed as measured. The sort's first call in a fresh process is
printed apart: lifelong computes the ids in tie-key order once per process (`sort.ids_in_tie_order`).

Run: python benchmarks/bench_sort_search.py [--rank-models 2000] [--eval-models 2000] [--samples 200000]
     [--budget 2048] [--repeats 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _same import require_same

MIB = 2**20
STAGES = ("sort", "search", "search_full", "score")
HEADLINE = ("sort", "search", "score")  # the stages of the PASS line, each against its fairest baseline
LABELS = {
    "sort": "sort (column sums)",
    "search": "search n'={budget}",
    "search_full": "  naive: full A P",
    "score": "predict + score",
}
# (baseline output, lifelong output) that must agree, per stage
OUTPUTS = {
    "sort": [("order", "order")],
    "search": [("k", "k")],
    "search_full": [("k_full", "k")],
    "score": [("error", "error"), ("aggregate", "aggregate"), ("kappa", "kappa")],
}


def generate(folder: Path, rank_models: int, eval_models: int, n: int, seed: int = 0) -> None:
    """Write the planted matrices: P(correct) = sigmoid(1.7 (theta_model - difficulty_sample)), 8-bit noise."""
    rng = np.random.default_rng(seed)
    levels = np.linspace(-2.5, 2.5, 256)
    difficulty = rng.integers(0, 256, n)  # per sample, one of 256 levels
    for name, m in (("rank", rank_models), ("eval", eval_models)):
        theta = rng.normal(0.3, 1.0, m)
        dense = np.lib.format.open_memmap(folder / f"{name}_dense.npy", "w+", np.uint8, (m, n))
        packed = np.lib.format.open_memmap(folder / f"{name}_packed.npy", "w+", np.uint8, (m, (n + 7) // 8))
        for i0 in range(0, m, 64):
            th = theta[i0 : i0 + 64]
            table = np.round(256 / (1 + np.exp(-1.7 * (th[:, None] - levels[None, :])))).astype(np.int16)
            noise = rng.integers(0, 256, (th.size, n), dtype=np.uint8)
            rows = (noise < np.take_along_axis(table, np.broadcast_to(difficulty, (th.size, n)), axis=1)).view(np.uint8)
            dense[i0 : i0 + th.size] = rows
            packed[i0 : i0 + th.size] = np.packbits(rows, axis=1)
        dense.flush()
        packed.flush()
        del dense, packed


# ---------------------------------------------------------------- baseline: plain dense NumPy


def base_sort(folder: Path, budget: int) -> dict:
    """Dense matrix, column sums, full lexsort (descending sum, ties by the samples' fixed tie keys)."""
    from lifelong.sortsearch.sort import tie_keys

    A = np.load(folder / "rank_dense.npy")
    sums = A.sum(axis=0).astype(np.int64)
    return {"order": np.lexsort((tie_keys(sums.size), -sums))}


def base_search_full(folder: Path, budget: int) -> dict:
    """The naive search: A P in full, n' uniform positions, dense DP per row, midpoint extrapolation."""
    E = np.load(folder / "eval_dense.npy")
    order = np.load(folder / "order_base.npy")
    m, n = E.shape
    ranked = E[:, order]
    idx = ((2 * np.arange(budget) + 1) * n) // (2 * budget)
    k = np.empty(m, np.int64)
    for i in range(m):
        q = ranked[i, idx].astype(np.int64)
        q[q == 0] = -1
        scores = np.concatenate(([0], np.cumsum(q)))
        kp = int(np.argmax(scores))  # first maximum; index 0 is S(0) = 0
        lo = idx[kp - 1] + 1 if kp > 0 else 0
        hi = idx[kp] if kp < budget else n
        k[i] = (lo + hi) // 2
    return {"k_full": k}


def base_search(folder: Path, budget: int) -> dict:
    """The fair search: gather only the n' sampled columns of the dense matrix (no full A P), the same DP."""
    E = np.load(folder / "eval_dense.npy")
    order = np.load(folder / "order_base.npy")
    m, n = E.shape
    idx = ((2 * np.arange(budget) + 1) * n) // (2 * budget)
    sampled = E[:, order[idx]]
    k = np.empty(m, np.int64)
    for i in range(m):
        q = sampled[i].astype(np.int64)
        q[q == 0] = -1
        kp = int(np.argmax(np.concatenate(([0], np.cumsum(q)))))
        k[i] = ((idx[kp - 1] + 1 if kp > 0 else 0) + (idx[kp] if kp < budget else n)) // 2
    return {"k": k}


def base_score(folder: Path, budget: int) -> dict:
    """Full unpacked step predictions, scattered to sample order, scored against the dense truth."""
    E = np.load(folder / "eval_dense.npy")
    order, k = np.load(folder / "order_base.npy"), np.load(folder / "k_base.npy")
    n = E.shape[1]
    Y = (np.arange(n)[None, :] < k[:, None]).astype(np.uint8)
    Yo = np.empty_like(Y)
    Yo[:, order] = Y
    err = (E != Yo).mean(axis=1)
    a, y = E.mean(axis=1), Yo.mean(axis=1)
    pe = a * y + (1 - a) * (1 - y)
    return {"error": err, "aggregate": np.abs(y - a), "kappa": ((1 - err) - pe) / (1 - pe)}


# ---------------------------------------------------------------- lifelong.sortsearch


def _packed(folder: Path, name: str):  # noqa: ANN202 - PackedRows
    """The bit-packed matrix as PackedRows over positioned reads of the .npy file."""
    from lifelong.sortsearch.bitmatrix import NpyRows, PackedRows

    n = int(json.loads((folder / "shape.json").read_text())["n"])
    return PackedRows(NpyRows(folder / f"{name}_packed.npy"), n)


def ours_sort(folder: Path, budget: int) -> dict:
    """sort_by_sum on the packed ranking matrix (bit-sliced column counts)."""
    from lifelong.sortsearch.sort import sort_by_sum

    return {"order": sort_by_sum(_packed(folder, "rank"))}


def ours_search(folder: Path, budget: int) -> dict:
    """Gather the n' sampled bits per row, DP, extrapolate."""
    from lifelong.sortsearch.search import dp_threshold, extrapolate, sample_positions

    rows = _packed(folder, "eval")
    order = np.load(folder / "order_ours.npy")
    pos = sample_positions(rows.shape[1], budget)
    sampled = rows.gather(None, order[pos])
    return {"k": extrapolate(dp_threshold(sampled), pos, rows.shape[1])}


def ours_score(folder: Path, budget: int) -> dict:
    """step_agreement: the metrics' counts from packed rows, order and thresholds, without building predictions."""
    from lifelong.sortsearch.row_metrics import step_agreement

    order, k = np.load(folder / "order_ours.npy"), np.load(folder / "k_ours.npy")
    agreement = step_agreement(_packed(folder, "eval"), order, k)
    return {"error": agreement.error, "aggregate": agreement.aggregate_error, "kappa": agreement.kappa}


RUNNERS = {
    ("base", "sort"): base_sort,
    ("base", "search"): base_search,
    ("base", "search_full"): base_search_full,
    ("base", "score"): base_score,
    ("ours", "sort"): ours_sort,
    ("ours", "search"): ours_search,
    ("ours", "score"): ours_score,
}


def _peak_rss_bytes() -> int:
    """Peak resident set size of this process so far (VmHWM: ru_maxrss is inherited from the parent on Linux)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def child(side: str, stage: str, folder: Path, budget: int, measure: str, repeats: int) -> None:
    """Run one (side, stage) and print a JSON line: best time, or tracemalloc peak and RSS growth."""
    import lifelong.sortsearch.row_metrics  # noqa: F401 - imports are not part of any measurement
    import lifelong.sortsearch.sort  # noqa: F401

    fn = RUNNERS[(side, stage)]
    if measure == "time":
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fn(folder, budget)
            times.append(time.perf_counter() - t0)
            del out
        print(json.dumps({"seconds": min(times), "first": times[0]}))
        return
    rss0 = _peak_rss_bytes()
    tracemalloc.start()
    out = fn(folder, budget)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss = _peak_rss_bytes() - rss0
    for key, value in out.items():
        np.save(folder / f"{key}_{side}.npy", value)
    print(json.dumps({"peak": peak, "rss": rss}))


def run_child(side: str, stage: str, folder: Path, budget: int, measure: str, repeats: int) -> dict:
    """One measurement in a fresh interpreter."""
    cmd = [sys.executable, __file__, "--child", side, stage, measure, "--dir", str(folder)]
    cmd += ["--budget", str(budget), "--repeats", str(repeats)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"{side} {stage} {measure} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_equal(folder: Path, stage: str) -> str:
    """Exit non-zero unless the baseline produced lifelong's result for a stage; returns the verdict."""
    verdicts = set()
    for base_key, ours_key in OUTPUTS[stage]:
        base, ours = np.load(folder / f"{base_key}_base.npy"), np.load(folder / f"{ours_key}_ours.npy")
        # orders and thresholds are integers: exact; the metrics are float ratios of the same counts, computed as
        # means of 0/1 arrays by the baseline and from popcounts by lifelong, so they may differ in the last bits
        tol = 0.0 if ours_key in ("order", "k") else 1e-12
        verdicts.add(require_same(f"{stage}: {base_key}", ours, base, atol=tol, rtol=tol))
    return verdicts.pop() if len(verdicts) == 1 else ", ".join(sorted(verdicts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rank-models", type=int, default=2000)
    parser.add_argument("--eval-models", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--budget", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per (stage, side); the best is kept")
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 + 300 models x 30,000 samples")
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=3, metavar=("SIDE", "STAGE", "MEASURE"), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    if args.child:
        side, stage, measure = args.child
        child(side, stage, args.dir, args.budget, measure, args.repeats)
        return
    if args.quick:
        args.rank_models, args.eval_models, args.samples = 300, 300, 30_000
    budget = min(args.budget, args.samples)

    with tempfile.TemporaryDirectory(prefix="bench_sort_search_") as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        generate(folder, args.rank_models, args.eval_models, args.samples)
        (folder / "shape.json").write_text(json.dumps({"n": args.samples}))
        dense_mb = (args.rank_models + args.eval_models) * args.samples / 2**20
        print(
            f"Sort & Search: {args.rank_models} ranking + {args.eval_models} evaluated models x {args.samples:,} "
            f"samples (dense {dense_mb:,.0f} MiB, packed {dense_mb / 8:,.0f} MiB), n'={budget}; "
            f"data written in {time.perf_counter() - t0:.1f} s; best of {args.repeats} timed runs"
        )
        rows = []
        for stage in STAGES:
            measured = {}
            for side in ("base", "ours"):
                if (side, stage) not in RUNNERS:  # the naive search baseline is compared with the same lifelong run
                    measured[side] = rows[-1][1][side]
                    continue
                memory = run_child(side, stage, folder, budget, "memory", 1)  # also writes the outputs
                timing = run_child(side, stage, folder, budget, "time", args.repeats)
                measured[side] = {**memory, **timing}
            agree = check_equal(folder, stage)
            rows.append((stage, measured, agree))

    head = (
        f"{'stage':<20} {'base s':>8} {'ours s':>8} {'speed-up':>9} {'base MiB':>9} {'ours MiB':>9} "
        f"{'mem ratio':>9} {'base RSS+':>9} {'ours RSS+':>9}  {'outputs':<14} result"
    )
    print(head)
    print("-" * len(head))
    verdicts = {}
    for stage, m, agree in rows:
        base, ours = m["base"], m["ours"]
        speed = base["seconds"] / ours["seconds"]
        mem = base["peak"] / max(1, ours["peak"])
        ok = verdicts[stage] = speed >= 10 and mem >= 8
        print(
            f"{LABELS[stage].format(budget=budget):<20} {base['seconds']:>8.3f} {ours['seconds']:>8.3f} "
            f"{speed:>8.1f}x {base['peak'] / MIB:>9.1f} {ours['peak'] / MIB:>9.1f} {mem:>8.1f}x "
            f"{base['rss'] / MIB:>9.1f} {ours['rss'] / MIB:>9.1f}  "
            f"{agree:<14} {_verdict(ok)}"
        )
    sort_base, sort_ours = rows[0][1]["base"], rows[0][1]["ours"]
    print(
        f"sort, first call in a fresh process (lifelong computes its ids in tie-key order once per process): "
        f"base {sort_base['first']:.3f} s, ours {sort_ours['first']:.3f} s, "
        f"{sort_base['first'] / sort_ours['first']:.1f}x"
    )
    headline = all(verdicts[stage] for stage in HEADLINE)
    print(
        f"target >= 10x faster and >= 8x less peak heap memory, sort / search (gather-only baseline) / score: "
        f"{_verdict(headline)}"
    )
    print(f"  (extra) same target for search against the naive full A P baseline: {_verdict(verdicts['search_full'])}")
    if args.json:
        args.json.write_text(json.dumps({stage: m for stage, m, _ in rows}, indent=2))
    print("(MiB: tracemalloc peak of heap allocations; RSS+: growth of the process's peak resident memory in MiB)")


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


if __name__ == "__main__":
    main()
