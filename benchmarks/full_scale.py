"""Sort & Search at the paper's full Lifelong-CIFAR10 scale, through the on-disk BenchStore, in bounded memory.

Shape (defaults = the paper's Lifelong-CIFAR10 split): 31,250 models x 1,697,682 samples in 6 domains; 6,000 ranking
models evaluated on every sample, the other 25,250 inserted at a budget of n' = 2,048 evaluations each. The matrix
comes from the seeded item-response generator (lifelong.sortsearch.synthetic), block by block; nothing holds more than a
few hundred rows at a time.

Stages (each timed, wall and CPU):
1. register: the n samples (their domain as `domain`, synthetic content hashes), in chunks of add_samples.
2. ranking: generate the ranking models' rows in batches (background threads) and add each batch with its fully
   observed packed rows (one atomic add_models per batch).
3. sort: sort_store (store-backed, chunked column sums over the ranking rows), saved as a sort version; cross-checked
   against the column sums of the generated rows. plan_model picks the n' planned samples.
4. estimate: per batch of the other models, the generated rows are used once for both the n' observed cells and the
   true rows: DP threshold on the observed cells, extrapolated k, predicted rows (the step [1_k 0_{n-k}] scattered
   through the order) with the observed cells' outcomes in place, added with their observed mask in one add_models
   (what add_models of the predictions plus write_rows of the facts would store, in one write), and the estimate
   entries (threshold, sort version, budget) recorded in one record_estimates; scores streamed with
   metrics.step_agreement (no prediction row is built for scoring).
5. check: store.status() (observed fraction must be exactly the evaluations done / m n), a few rows read back and
   compared with the library's own scatter(predict_rows) path, disk size.

Memory: ru_maxrss of the process and its children, and RSS (the process and its descendants) sampled in a thread.
The cost comparison of the paper (evaluations done against exhaustive evaluation) is printed at the end.

Run: python benchmarks/full_scale.py [--scale 0.01] [--workdir DIR] [--json PATH] [--quick]
--quick: a smoke run at --scale 0.01 (312 models x 16,977 samples), every stage and check included.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.sortsearch.bitmatrix import PackedRows, packed_width
from lifelong.sortsearch.insert import plan_model, sort_store
from lifelong.sortsearch.row_metrics import Agreement, agreement, pearson, step_agreement
from lifelong.sortsearch.search import dp_threshold, extrapolate, predict_rows, scatter
from lifelong.sortsearch.sort import descending_order
from lifelong.sortsearch.store import BenchStore
from lifelong.sortsearch.synthetic import SyntheticBenchmark, lifelong_cifar10_shape

MIB = 2**20
GB = 10**9
MEMORY_LIMIT_BYTES = 8 * GB  # the 8 GB limit the run is held to (decimal GB: stricter than 8 GiB)
METHOD = "dp-uniform"


# ---------------------------------------------------------------- measurement helpers


class RssMonitor(threading.Thread):
    """Samples the resident memory of this process and all its descendants every `interval` seconds."""

    def __init__(self, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.t0 = time.perf_counter()
        self.samples: list[tuple[float, int]] = []
        self.peak = 0
        self._stop_event = threading.Event()

    def _descendants(self, pid: int) -> list[int]:
        found, todo = [], [pid]
        while todo:
            current = todo.pop()
            try:
                tasks = os.listdir(f"/proc/{current}/task")
            except OSError:
                continue
            for tid in tasks:
                try:
                    children = Path(f"/proc/{current}/task/{tid}/children").read_text().split()
                except OSError:
                    continue
                found += [int(c) for c in children]
                todo += [int(c) for c in children]
        return found

    def rss(self) -> int:
        """Resident bytes of this process plus its descendants, now."""
        total = 0
        for pid in [os.getpid(), *self._descendants(os.getpid())]:
            try:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * self.page
            except (OSError, IndexError, ValueError):
                continue
        return total

    def run(self) -> None:
        while not self._stop_event.is_set():
            value = self.rss()
            self.peak = max(self.peak, value)
            self.samples.append((time.perf_counter() - self.t0, value))
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def series(self, points: int = 400) -> list[list[float]]:
        """[seconds, MiB] pairs, thinned to about `points` (keeping the maximum of each stretch)."""
        if not self.samples:
            return []
        step = max(1, len(self.samples) // points)
        out = []
        for i in range(0, len(self.samples), step):
            part = self.samples[i : i + step]
            t, v = max(part, key=lambda s: s[1])
            out.append([round(t, 1), round(v / MIB, 1)])
        return out


class Clock:
    """Wall and CPU time per stage, and accumulated wall time per operation inside stages."""

    def __init__(self) -> None:
        self.stages: dict[str, dict[str, float]] = {}
        self.ops: Counter[str] = Counter()
        self.t0 = time.perf_counter()

    @contextmanager
    def stage(self, name: str) -> Iterator[dict[str, float]]:
        record: dict[str, float] = {}
        w0, c0 = time.perf_counter(), time.process_time()
        print(f"[{time.perf_counter() - self.t0:8.1f} s] stage {name} ...", flush=True)
        yield record
        record["wall_s"] = time.perf_counter() - w0
        record["cpu_s"] = time.process_time() - c0
        self.stages[name] = record
        print(f"[{time.perf_counter() - self.t0:8.1f} s] stage {name} done in {record['wall_s']:.1f} s", flush=True)

    @contextmanager
    def op(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        yield
        self.ops[name] += time.perf_counter() - t


def disk_usage(path: Path) -> dict[str, int]:
    """Allocated bytes (st_blocks) and apparent bytes of every file under path, and the number of files."""
    allocated = apparent = files = 0
    for root, _, names in os.walk(path):
        for name in names:
            st = os.lstat(os.path.join(root, name))
            allocated += st.st_blocks * 512
            apparent += st.st_size
            files += 1
    return {"allocated_bytes": allocated, "apparent_bytes": apparent, "files": files}


# ---------------------------------------------------------------- shape and generation


def scaled_domains(n: int) -> dict[str, int]:
    """Lifelong-CIFAR10's six domains, resized proportionally to n samples (largest remainder, each >= 1)."""
    paper = lifelong_cifar10_shape().domains
    total = sum(paper.values())
    if n == total:
        return dict(paper)
    if n < len(paper):
        raise ValueError(f"need at least {len(paper)} samples for the 6 domains, got {n}")
    exact = np.array([size * n / total for size in paper.values()])
    sizes = np.maximum(1, np.floor(exact).astype(np.int64))
    while sizes.sum() < n:
        sizes[np.argmax(exact - sizes)] += 1
    while sizes.sum() > n:
        sizes[np.argmax(np.where(sizes > 1, sizes - exact, -np.inf))] -= 1
    return dict(zip(paper, sizes.tolist(), strict=True))


def batches(start: int, stop: int, size: int) -> list[tuple[int, int]]:
    """[a, b) row ranges of at most `size` rows covering [start, stop)."""
    return [(a, min(stop, a + size)) for a in range(start, stop, size)]


def generated(
    gen: SyntheticBenchmark, spans: list[tuple[int, int]], threads: int, clock: Clock
) -> Iterator[tuple[int, int, np.ndarray]]:
    """(a, b, packed rows a..b) in order, generated ahead by `threads` background threads (at most threads + 1
    batches in flight, so memory stays at a few batches)."""

    def make(span: tuple[int, int]) -> tuple[np.ndarray, float]:
        t = time.perf_counter()
        rows = gen.packed_rows(slice(*span))
        return rows, time.perf_counter() - t

    with ThreadPoolExecutor(max(1, threads)) as pool:
        todo = iter(spans)
        flight: deque = deque()
        for span in todo:
            flight.append((span, pool.submit(make, span)))
            if len(flight) > threads:
                break
        while flight:
            span, future = flight.popleft()
            with clock.op("wait for generator"):
                rows, seconds = future.result()
            clock.ops["generate (thread time)"] += seconds
            nxt = next(todo, None)
            if nxt is not None:
                flight.append((nxt, pool.submit(make, nxt)))
            yield span[0], span[1], rows
            del rows


# ---------------------------------------------------------------- stages


def register_samples(store: BenchStore, gen: SyntheticBenchmark, seed: int, chunk: int) -> None:
    """All samples, in chunks: source 'synthetic', domain name, label = id % 10, a synthetic content hash."""
    domains = gen.sample_domains()
    names = gen.domain_names
    for s0 in range(0, gen.n_samples, chunk):
        s1 = min(gen.n_samples, s0 + chunk)
        records = [
            {
                "source": "synthetic",
                "domain": names[d],
                "label": j % 10,
                "content_hash": hashlib.blake2b(
                    f"lifelong-cifar10-synthetic:{seed}:{j}".encode(), digest_size=16
                ).hexdigest(),
            }
            for j, d in zip(range(s0, s1), domains[s0:s1].tolist(), strict=True)
        ]
        ids = store.add_samples(records)
        assert ids[0] == s0 and ids[-1] == s1 - 1, "sample ids must equal generator columns"


def model_names(a: int, b: int) -> list[str]:
    return [f"synthetic-model-{i:05d}" for i in range(a, b)]


def step_rows_fast(order: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Packed rows, sample order, of the steps [1_k 0_{n-k}] in ranked order: bit j set for j in order[:k]. The
    steps are nested, so one row grows from the smallest k to the largest, setting each sample's bit once. Equal to
    scatter(predict_rows(k, n), order); the check stage compares them."""
    out = np.empty((k.size, packed_width(order.size)), np.uint8)
    current = np.zeros(out.shape[1], np.uint8)
    done = 0
    for i in np.argsort(k, kind="stable").tolist():
        ki = int(k[i])
        if ki > done:
            ids = order[done:ki]
            np.bitwise_or.at(current, ids >> 3, (0x80 >> (ids & 7)).astype(np.uint8))
            done = ki
        out[i] = current
    return out


def with_facts(predicted: np.ndarray, sample_ids: np.ndarray, outcomes: np.ndarray) -> np.ndarray:
    """The observed mask (one packed row) of `sample_ids`, after putting the facts `outcomes` [rows, n'] in place of
    the predictions of `predicted` (packed rows, changed in place): the cells write_rows(observed=True) would set."""
    by_id = np.argsort(sample_ids, kind="stable")
    cols = sample_ids[by_id]
    byte, bit = cols >> 3, (0x80 >> (cols & 7)).astype(np.uint8)
    starts = np.flatnonzero(np.r_[True, np.diff(byte) > 0])
    where, facts = byte[starts], np.bitwise_or.reduceat(bit, starts)
    ones = np.bitwise_or.reduceat(outcomes[:, by_id].astype(np.uint8) * bit, starts, axis=1)
    predicted[:, where] = (predicted[:, where] & ~facts) | ones
    mask = np.zeros(predicted.shape[1], np.uint8)
    mask[where] = facts
    return mask


def facts_kept(k: np.ndarray, positions: np.ndarray, outcomes: np.ndarray, step: Agreement) -> Agreement:
    """Counts for the stored rows (observed cells hold their true outcome, the rest the step), from the step's."""
    predicted_one = positions[None, :] < k[:, None]
    observed_one = outcomes.astype(bool)
    gained = (observed_one & ~predicted_one).sum(axis=1)  # fact 1 where the step said 0
    lost = (~observed_one & predicted_one).sum(axis=1)  # fact 0 where the step said 1
    return Agreement(step.n, step.ones_a, step.ones_y + gained - lost, step.ones_both + gained)


def summarise(a: Agreement) -> dict[str, float]:
    est, true = a.ones_y / a.n, a.ones_a / a.n
    return {
        "mean_sample_error_pct": float(100 * a.error.mean()),
        "mean_aggregate_error_pct": float(100 * a.aggregate_error.mean()),
        "median_aggregate_error_pct": float(100 * np.median(a.aggregate_error)),
        "mean_kappa": float(np.nanmean(a.kappa)),
        "kappa_undefined_rows": int(np.isnan(a.kappa).sum()),
        "pearson_r": pearson(est, true),
        "mean_true_accuracy_pct": float(100 * true.mean()),
        "mean_estimated_accuracy_pct": float(100 * est.mean()),
    }


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict[str, Any]:
    paper = lifelong_cifar10_shape()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=paper.n_models, help="all models (ranking + estimated)")
    parser.add_argument("--samples", type=int, default=paper.n_samples)
    parser.add_argument("--ranking", type=int, default=6000, help="models evaluated on every sample")
    parser.add_argument("--budget", type=int, default=2048, help="n': evaluations per estimated model (not scaled)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies --models, --samples and --ranking")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="the store goes to WORKDIR/store (default: a temp dir)"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=256, help="models per generated batch / add_models call")
    parser.add_argument("--gen-threads", type=int, default=2, help="background generator threads")
    parser.add_argument("--chunk-models", type=int, default=8, help="store chunk rows (small: cheap row rewrites)")
    parser.add_argument("--chunk-samples", type=int, default=0, help="store chunk columns (0: one chunk spans n)")
    parser.add_argument("--sample-chunk", type=int, default=100_000, help="samples per add_samples call")
    parser.add_argument("--verify", type=int, default=8, help="estimated rows read back and checked at the end")
    parser.add_argument("--keep-store", action="store_true", help="keep WORKDIR/store (it is several GB at full size)")
    parser.add_argument("--quick", action="store_true", help="smoke run: --scale 0.01")
    args = parser.parse_args(argv)
    if args.quick:
        args.scale = 0.01

    n_models = max(2, round(args.models * args.scale))
    n = max(8, round(args.samples * args.scale))
    n_rank = max(1, round(args.ranking * args.scale))
    budget = min(args.budget, n)
    if not n_rank < n_models:
        parser.error(f"need fewer ranking models ({n_rank}) than models ({n_models})")
    n_eval = n_models - n_rank
    domains = scaled_domains(n)
    chunk_samples = args.chunk_samples or 8 * packed_width(n)

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="lifelong-full-scale-"))
    store_path = workdir / "store"
    monitor = RssMonitor()
    monitor.start()
    clock = Clock()
    result: dict[str, Any] = {
        "shape": {"models": n_models, "samples": n, "ranking": n_rank, "estimated": n_eval, "budget": budget},
        "domains": domains,
        "scale": args.scale,
        "store": {"path": str(store_path), "chunk_models": args.chunk_models, "chunk_samples": chunk_samples},
        "batch": args.batch,
        "gen_threads": args.gen_threads,
        "cpus": os.cpu_count(),
    }
    print(
        f"Lifelong-CIFAR10-shaped run: {n_models:,} models ({n_rank:,} ranking + {n_eval:,} estimated) x {n:,} "
        f"samples, n' = {budget:,}; store {store_path} chunks ({args.chunk_models}, {chunk_samples // 8} bytes)",
        flush=True,
    )

    gen = SyntheticBenchmark(n_models, n, domain_sizes=domains, seed=args.seed)
    store = BenchStore.create(store_path, chunk_models=args.chunk_models, chunk_samples=chunk_samples)
    try:
        with clock.stage("register samples") as rec:
            register_samples(store, gen, args.seed, args.sample_chunk)
            rec["samples"] = n

        check_sums = np.zeros(n, np.int64)
        with clock.stage("ranking models") as rec:
            for a, b, rows in generated(gen, batches(0, n_rank, args.batch), args.gen_threads, clock):
                with clock.op("ranking: add_models"):
                    ids = store.add_models(model_names(a, b), rows=rows)
                assert ids == list(range(a, b)), "model ids must equal generator rows"
                with clock.op("ranking: cross-check column sums"):
                    check_sums += PackedRows(rows, n).column_sums()
            rec["rows"] = n_rank

        with clock.stage("sort") as rec:
            with clock.op("sort: sort_store"):
                version = sort_store(store, np.arange(n_rank))
            order = store.load_sort(version)
            if not np.array_equal(order, descending_order(check_sums)):
                raise AssertionError("store-backed sort differs from the sort of the generated rows' column sums")
            del check_sums
            with clock.op("sort: plan_model"):
                plan = plan_model(store, budget, sampling="uniform")  # Sort & Search's plan (METHOD)
            rec["sort_version"] = version

        byte = plan.sample_ids >> 3
        shift = (7 - (plan.sample_ids & 7)).astype(np.uint8)
        k_all = np.zeros(n_eval, np.int64)
        counts = {key: np.zeros(n_eval, np.int64) for key in ("a", "y", "both", "y_facts", "both_facts")}
        entries = 0
        with clock.stage("estimate") as rec:
            for a, b, rows in generated(gen, batches(n_rank, n_models, args.batch), args.gen_threads, clock):
                i0, i1 = a - n_rank, b - n_rank
                with clock.op("estimate: observe n' cells"):
                    outcomes = (rows[:, byte] >> shift) & 1
                with clock.op("estimate: DP + extrapolate"):
                    k = extrapolate(dp_threshold(outcomes), plan.positions, n)
                with clock.op("estimate: score (step_agreement)"):
                    step = step_agreement(PackedRows(rows, n), order, k)
                    kept = facts_kept(k, plan.positions, outcomes, step)
                k_all[i0:i1] = k
                for key, value in (("a", step.ones_a), ("y", step.ones_y), ("both", step.ones_both)):
                    counts[key][i0:i1] = value
                counts["y_facts"][i0:i1], counts["both_facts"][i0:i1] = kept.ones_y, kept.ones_both
                del rows
                with clock.op("estimate: predicted rows"):
                    predicted = step_rows_fast(order, k)
                with clock.op("estimate: facts into the rows"):
                    mask = np.broadcast_to(with_facts(predicted, plan.sample_ids, outcomes), predicted.shape)
                with clock.op("estimate: add_models (rows + observed mask)"):
                    ids = store.add_models(model_names(a, b), rows=predicted, observed=mask)
                assert ids == list(range(a, b)), "model ids must equal generator rows"
                with clock.op("estimate: record_estimates (entries)"):
                    store.record_estimates(ids, k, plan.sort_version, METHOD, budget)
                entries += len(ids)
                del predicted, outcomes, mask
                done = b - n_rank
                if done == n_eval or (done // args.batch) % 10 == 0:
                    print(
                        f"  estimated {done:,}/{n_eval:,} models; run elapsed {time.perf_counter() - clock.t0:.0f} s; "
                        f"rss {monitor.rss() / MIB:.0f} MiB",
                        flush=True,
                    )
            rec["rows"] = n_eval
            rec["estimate_entries"] = entries

        with clock.stage("check") as rec:
            with clock.op("check: store.status()"):
                status = store.status()
            evaluations = n_rank * n + n_eval * budget
            expected_fraction = evaluations / (n_models * n)
            if status["n"] != n or status["m"] != n_models or status["estimated_rows"] != entries:
                raise AssertionError(f"store status {status} does not match the run")
            if abs(status["observed_fraction"] - expected_fraction) > 1e-12:
                raise AssertionError(f"observed fraction {status['observed_fraction']} != {expected_fraction}")
            rec["status"] = status
            with clock.op("check: read back rows"):
                rec["verified_rows"] = verify(store, gen, order, plan, k_all, counts, n_rank, args.verify, entries)
            with clock.op("check: disk usage"):
                disk = disk_usage(store_path)
                disk["by_part"] = {
                    p.name: disk_usage(p)["allocated_bytes"] if p.is_dir() else p.stat().st_blocks * 512
                    for p in sorted(store_path.iterdir())
                }
            result["disk"] = disk
    finally:
        store.close()
        monitor.stop()

    total_wall = time.perf_counter() - clock.t0
    step_counts = Agreement(n, counts["a"], counts["y"], counts["both"])
    stored_counts = Agreement(n, counts["a"], counts["y_facts"], counts["both_facts"])
    result["metrics"] = {"step": summarise(step_counts), "stored_rows_with_facts": summarise(stored_counts)}
    result["stages"] = clock.stages
    result["ops_s"] = dict(clock.ops)
    result["total_wall_s"] = total_wall
    result["total_cpu_s"] = time.process_time()
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    result["memory"] = {
        "ru_maxrss_self_bytes": self_peak,
        "ru_maxrss_children_bytes": child_peak,
        "sampled_peak_rss_bytes": monitor.peak,
        "limit_bytes": MEMORY_LIMIT_BYTES,
        "within_limit": max(self_peak + child_peak, monitor.peak) <= MEMORY_LIMIT_BYTES,
        "rss_series_s_mib": monitor.series(),
    }
    exhaustive = n_models * n
    result["cost"] = {
        "evaluations_done": evaluations,
        "ranking_evaluations": n_rank * n,
        "estimated_evaluations": n_eval * budget,
        "exhaustive_evaluations": exhaustive,
        "ratio_total": exhaustive / evaluations,
        "ratio_per_inserted_model": n / budget,
    }
    result["estimate_entries"] = {"written": entries}
    print_report(result)
    if args.keep_store:
        print(f"store kept at {store_path}")
    else:
        shutil.rmtree(store_path if args.workdir else workdir)  # a temporary workdir goes with its store
        print(f"store {store_path} deleted")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, default=float))
        print(f"wrote {args.json}")
    return result


def verify(
    store: BenchStore,
    gen: SyntheticBenchmark,
    order: np.ndarray,
    plan: Any,
    k_all: np.ndarray,
    counts: dict[str, np.ndarray],
    n_rank: int,
    how_many: int,
    entries: int,
) -> int:
    """Read back rows and compare with the library's own path: a ranking row, and `how_many` estimated rows (their
    predicted cells = scatter(predict_rows(k)), observed cells = the true outcomes, observed mask = the plan)."""
    n = order.size
    row0 = gen.packed_rows(slice(0, 1))
    if not np.array_equal(store.read_rows([0]), row0) or not np.all(
        np.unpackbits(store.read_observed([0]), axis=1, count=n)
    ):
        raise AssertionError("ranking row 0 differs from the generator or is not fully observed")
    mask = np.zeros(n, np.uint8)
    mask[plan.sample_ids] = 1
    mask = np.packbits(mask)[None, :]
    n_eval = k_all.size
    picks = np.unique(np.linspace(0, n_eval - 1, min(how_many, n_eval)).round().astype(np.int64))
    for i in picks.tolist():
        model = n_rank + i
        truth = gen.packed_rows(slice(model, model + 1))
        k = k_all[i : i + 1]
        library = scatter(predict_rows(k, n), order)
        if not np.array_equal(library, step_rows_fast(order, k)):
            raise AssertionError(f"model {model}: fast step row differs from scatter(predict_rows)")
        true_dense = np.unpackbits(truth[0], count=n)
        lib_dense = np.unpackbits(library[0], count=n)
        lib_dense[plan.sample_ids] = true_dense[plan.sample_ids]
        expected = np.packbits(lib_dense)[None, :]
        if not np.array_equal(store.read_rows([model]), expected):
            raise AssertionError(f"model {model}: stored row differs from predicted row with facts kept")
        if not np.array_equal(store.read_observed([model]), mask):
            raise AssertionError(f"model {model}: observed mask differs from the planned samples")
        full = agreement(truth, library, n)
        kept = agreement(truth, expected, n)
        got = (counts["a"][i], counts["y"][i], counts["both"][i], counts["y_facts"][i], counts["both_facts"][i])
        want = (full.ones_a[0], full.ones_y[0], full.ones_both[0], kept.ones_y[0], kept.ones_both[0])
        if tuple(map(int, got)) != tuple(map(int, want)):
            raise AssertionError(f"model {model}: streamed counts {got} differ from full-row counts {want}")
        acc = store.accuracies([model])[model]
        if abs(acc.row_accuracy - kept.ones_y[0] / n) > 1e-12 or (i < entries and acc.kind != "estimated"):
            raise AssertionError(f"model {model}: store accuracy {acc} does not match the estimate")
    return int(picks.size) + 1


def print_report(r: dict[str, Any]) -> None:
    s = r["shape"]
    n = s["samples"]
    print()
    print(
        f"== Sort & Search, Lifelong-CIFAR10 shape x{r['scale']:g}: {s['models']:,} models ({s['ranking']:,} ranking, "
        f"{s['estimated']:,} estimated) x {n:,} samples, n' = {s['budget']:,}; {r['cpus']} CPUs =="
    )
    print(f"{'stage':<34}{'wall s':>10}{'cpu s':>10}  throughput")
    throughput = {
        "register samples": lambda st: f"{n / st['wall_s']:,.0f} samples/s",
        "ranking models": lambda st: (
            f"{s['ranking'] / st['wall_s']:,.1f} rows/s = "
            f"{s['ranking'] * n / st['wall_s'] / 1e6:,.0f} M cells/s generated+stored"
        ),
        "sort": lambda st: f"{s['ranking'] * n / st['wall_s'] / 1e6:,.0f} M cells/s summed (store reads)",
        "estimate": lambda st: (
            f"{s['estimated'] / st['wall_s']:,.1f} models/s "
            f"({s['estimated'] * n / st['wall_s'] / 1e6:,.0f} M true cells/s generated+scored)"
        ),
        "check": lambda st: "status() + read-back + du",
    }
    for name, st in r["stages"].items():
        print(f"{name:<34}{st['wall_s']:>10.1f}{st['cpu_s']:>10.1f}  {throughput[name](st)}")
    print(f"{'total':<34}{r['total_wall_s']:>10.1f}{r['total_cpu_s']:>10.1f}  ({r['total_wall_s'] / 60:.1f} min)")
    print()
    print(f"{'operation (accumulated)':<46}{'s':>10}")
    for name, sec in r["ops_s"].items():
        print(f"{name:<46}{sec:>10.1f}")
    print(f"estimate entries recorded: {r['estimate_entries']['written']:,}")
    print()
    print(f"{'metric over the estimated models':<34}{'step y':>14}{'stored (facts)':>16}")
    a, b = r["metrics"]["step"], r["metrics"]["stored_rows_with_facts"]
    for key, label, fmt in (
        ("mean_sample_error_pct", "mean sample-level error %", "{:.3f}"),
        ("mean_aggregate_error_pct", "mean aggregate error %", "{:.3f}"),
        ("median_aggregate_error_pct", "median aggregate error %", "{:.3f}"),
        ("mean_kappa", "mean kappa", "{:.4f}"),
        ("pearson_r", "Pearson r (est vs true acc)", "{:.5f}"),
        ("mean_true_accuracy_pct", "mean true accuracy %", "{:.3f}"),
        ("mean_estimated_accuracy_pct", "mean estimated accuracy %", "{:.3f}"),
        ("kappa_undefined_rows", "rows with undefined kappa", "{}"),
    ):
        print(f"{label:<34}{fmt.format(a[key]):>14}{fmt.format(b[key]):>16}")
    print()
    m = r["memory"]
    print(
        f"peak memory: ru_maxrss self {m['ru_maxrss_self_bytes'] / MIB:,.0f} MiB, children "
        f"{m['ru_maxrss_children_bytes'] / MIB:,.0f} MiB; sampled peak RSS {m['sampled_peak_rss_bytes'] / MIB:,.0f} MiB"
        f" vs limit {m['limit_bytes'] / GB:.0f} GB ({m['limit_bytes'] / MIB:,.0f} MiB): "
        f"{'OK' if m['within_limit'] else 'OVER'}"
    )
    d = r["disk"]
    parts = ", ".join(f"{k} {v / GB:.2f} GB" for k, v in d["by_part"].items() if v >= 0.005 * GB)
    print(
        f"store on disk: {d['allocated_bytes'] / GB:.2f} GB allocated ({d['apparent_bytes'] / GB:.2f} GB apparent, "
        f"{d['files']:,} files){'; ' + parts if parts else ''}; bit-packed matrix alone: "
        f"{s['models'] * packed_width(n) / GB:.2f} GB"
    )
    c = r["cost"]
    print()
    print("evaluation cost (the paper's baseline comparison):")
    print(f"  done:       {s['ranking']:,} x {n:,} + {s['estimated']:,} x {s['budget']:,} = {c['evaluations_done']:,}")
    print(f"  exhaustive: {s['models']:,} x {n:,} = {c['exhaustive_evaluations']:,}")
    print(
        f"  ratio exhaustive / done = {c['ratio_total']:.2f}x overall; per inserted model n / n' = "
        f"{c['ratio_per_inserted_model']:.1f}x"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
