"""Benchmark the toolkit's workloads on the CPU and (when present) a CUDA GPU, in the same run.

Workloads, each timed on every device (wall time, images/s, speed-up = CPU seconds / device seconds):
- run: the default `lifelong run` (stream mini, learner independent) through `runner.execute`; images = train+dev
  items of the train records x epochs x trials of the Independent recipe (the records' count; `--quick`: first task,
  1 epoch).
- transfer: a Nevis-mini transfer trial: one Independent FitJob on nevis-mini's `letters`, fine-tuned from a given
  backbone as transfer trials are (random weights here: the speed does not depend on them); images = steps x batch
  (`--quick`: 1 epoch).
- simclr: `pretrain_simclr` for 1 epoch on clear-mini bucket 0's unlabeled images; images = those drawn (2 views
  each; `--quick`: the first 512).
- sort / search: Sort & Search on a synthetic item-response matrix (sortsearch.synthetic, bit-packed): sort the
  samples by the ranking models' column sums, then the optimal threshold of every evaluated model over all n ranked
  samples. NumPy on the CPU is the baseline, torch (sortsearch.device_search) runs on each device; every device's
  orders and thresholds must be identical to NumPy's, else the run exits 1; throughput in matrix cells/s (best of
  3; `--quick`: 200 + 200 models x 50,000 samples).
On CUDA the mean GPU busy % during each workload is printed (torch.cuda.utilization, else nvidia-smi polled every
0.2 s). Without a GPU it says so, skips the CUDA measurements and measures the CPU only. Torch uses `--threads`
threads (default 1, as `lifelong run`; `--threads 2` gives the issue's 2-core CPU baseline).

CPU before/after (the CPU path must not get slower): `--cpu-check` times the default `lifelong run` on the CPU
(RunSpec defaults: 1 torch thread) and prints its wall time and mean error; with `--before SRC` it runs that twice
at the same time, once with an older revision's code (SRC: its src folder) and once with this tree, each in its own
process on its own core, and prints the ratio after/before and whether the mean errors agree:
    git worktree add /tmp/before <rev>
    .venv/bin/python benchmarks/bench_device.py --cpu-check --before /tmp/before/src
    git worktree remove /tmp/before
Only the runner is imported, so revisions without devices work too.

Run: python benchmarks/bench_device.py [--quick] [--devices cpu,cuda] [--threads N] [--json OUT]
     python benchmarks/bench_device.py --cpu-check [--before SRC] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _same import require_same

Workload = Callable[[str], tuple[int, dict]]  # device -> (images or cells processed, notes)


class GpuBusy:
    """Mean GPU utilisation (%) sampled every 0.2 s while the block runs; None off CUDA or without a reader."""

    def __init__(self, device: str) -> None:
        self.samples: list[float] = []
        self.read = _gpu_reader(device) if device.startswith("cuda") else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.samples.append(float(self.read()))
            except (OSError, RuntimeError, ValueError, IndexError, subprocess.SubprocessError):
                return  # the reader stopped working: keep what was sampled

    def __enter__(self) -> GpuBusy:
        if self.read is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.read is not None:
            self._stop.set()
            self._thread.join()

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.samples)) if self.samples else None


def _gpu_reader(device: str) -> Callable[[], float] | None:
    """A function returning the GPU's utilisation %: torch's (needs pynvml), else nvidia-smi's, else None."""
    import torch

    index = torch.device(device).index or 0
    try:
        torch.cuda.utilization(index)
        return lambda: torch.cuda.utilization(index)
    except Exception:  # noqa: BLE001 - pynvml missing or unusable: fall back to nvidia-smi
        if shutil.which("nvidia-smi") is None:
            return None
    cmd = ["nvidia-smi", f"--id={index}", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"]
    return lambda: float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()[0])


# ---------------------------------------------------------------- workloads: prepared once, then run per device


def run_workload(out: Path, quick: bool, threads: int) -> Workload:
    """The default `lifelong run` (the first task only, at 1 epoch, with --quick)."""
    from lifelong.commands.runner import RunSpec, execute
    from lifelong.training.independent_recipe import IndependentConfig

    options = {"epochs": 1} if quick else {}
    cfg = IndependentConfig(**options)

    def work(device: str) -> tuple[int, dict]:
        spec = RunSpec(
            out=str(out / f"run-{device}"),
            device=device,
            threads=threads,
            stop_after=1 if quick else None,
            learner_options=options,
        )
        summary = execute(spec)
        items = sum(r["num_items"] for r in summary["records"] if r["type"] == "train")
        events = f"{summary['events_done']}/{summary['events_total']}"
        return items * cfg.epochs * cfg.trials, {"events": events, "mean_error": summary.get("mean_error")}

    return work


def transfer_workload(quick: bool, threads: int) -> Workload:
    """One Independent FitJob on nevis-mini's `letters`, starting from a given backbone."""
    from lifelong.suites import get_stream
    from lifelong.training.independent_recipe import IndependentConfig
    from lifelong.training.models import make_model
    from lifelong.training.schedules import batch_size_for

    stream = get_stream("nevis-mini")
    index = [t.key.uid for t in stream.tasks].index("letters")
    task, splits = stream.tasks[index].key, stream.splits(index)
    cfg = IndependentConfig(epochs=1 if quick else 10)
    backbone = make_model(cfg.architecture, task.num_classes, seed=1).backbone.state_dict()

    def work(device: str) -> tuple[int, dict]:
        job = cfg.fit_job(task, splits.train, splits.dev, seed=0, threads=threads, init_backbone=backbone)
        result = job(cfg.trials_for(index)[0])  # the job runs on the accelerator current when it was made
        batch = batch_size_for(len(job.train), min_size=job.min_batch_size, max_size=job.max_batch_size)
        return result.steps * batch, {"epochs": cfg.epochs, "dev_error": result.dev_error}

    return work


def simclr_workload(quick: bool) -> Workload:
    """SimCLR for one epoch on clear-mini bucket 0 (the first 512 images with --quick)."""
    from lifelong.suites.clear import temporal_source
    from lifelong.training.ssl import pretrain_simclr

    source = temporal_source("clear-mini")
    images = source.unlabeled(0)
    images = images[:512] if quick else images
    resolution = getattr(source, "resolution", None) or int(images.shape[1])

    def work(device: str) -> tuple[int, dict]:
        checkpoint = pretrain_simclr(images, architecture="resnet_mini", resolution=resolution, epochs=1, seed=0)
        batch = min(256, len(images))
        return len(images) // batch * batch, {"loss": checkpoint.history[-1]["loss"]}

    return work


def sortsearch_workloads(quick: bool) -> tuple[Workload, Workload, dict]:
    """(sort, search, shape) on a synthetic matrix: device "numpy" is the NumPy path, others torch on that device."""
    from lifelong.sortsearch.bitmatrix import PackedRows
    from lifelong.sortsearch.search import optimal_thresholds
    from lifelong.sortsearch.sort import sort_by_sum
    from lifelong.sortsearch.synthetic import SyntheticBenchmark

    rank, evaluated, n = (200, 200, 50_000) if quick else (2000, 2000, 200_000)
    packed = SyntheticBenchmark(rank + evaluated, n, seed=0).packed_rows()
    R, E = PackedRows(packed[:rank], n), PackedRows(packed[rank:], n)
    order = sort_by_sum(R)
    expected = optimal_thresholds(E, order).k

    def sort(device: str) -> tuple[int, dict]:
        got = sort_by_sum(R, device=None if device == "numpy" else device)
        return rank * n, {"outputs": require_same(f"sort on {device}: sample order", order, got)}

    def search(device: str) -> tuple[int, dict]:
        got = optimal_thresholds(E, order, device=None if device == "numpy" else device).k
        return evaluated * n, {"outputs": require_same(f"search on {device}: thresholds", expected, got)}

    return sort, search, {"ranking_models": rank, "evaluated_models": evaluated, "samples": n}


# ---------------------------------------------------------------- measuring


def measure(name: str, work: Workload, device: str, threads: int, repeats: int = 1) -> dict:
    """Run `work` on `device` (best of `repeats`) with that device as the current accelerator; one result row."""
    from lifelong.training.devices import Accelerator, accelerator_scope
    from lifelong.training.loop import set_torch_threads

    set_torch_threads(threads)
    best, count, notes, busy = float("inf"), 0, {}, None
    with accelerator_scope(Accelerator(device="cpu" if device == "numpy" else device)):
        for _ in range(repeats):
            with GpuBusy(device) as gpu:
                t0 = time.perf_counter()
                count, notes = work(device)
                seconds = time.perf_counter() - t0
            if seconds < best:
                best, busy = seconds, gpu.mean
    return {
        "workload": name,
        "device": device,
        "seconds": best,
        "count": count,
        "per_s": count / best,
        "gpu_busy": busy,
        **notes,
    }


def print_table(rows: list[dict]) -> None:
    """One line per (workload, device), with the speed-up against the workload's first (baseline) row."""
    head = f"{'workload':<10} {'device':<7} {'seconds':>9} {'throughput':>18} {'speed-up':>9} {'GPU busy':>9}  notes"
    print(head)
    print("-" * len(head))
    base: dict[str, float] = {}
    for row in rows:
        base.setdefault(row["workload"], row["seconds"])
        row["speed_up"] = base[row["workload"]] / row["seconds"]
        unit = "cells/s" if row["workload"] in ("sort", "search") else "img/s"
        rate = f"{row['per_s'] / 1e6:,.1f} M {unit}" if unit == "cells/s" else f"{row['per_s']:,.0f} {unit}"
        busy = "-" if row["gpu_busy"] is None else f"{row['gpu_busy']:.0f}%"
        skip = {"workload", "device", "seconds", "count", "per_s", "gpu_busy", "speed_up"}
        notes = ", ".join(f"{k}={_short(v)}" for k, v in row.items() if k not in skip)
        print(
            f"{row['workload']:<10} {row['device']:<7} {row['seconds']:>9.3f} {rate:>18} "
            f"{row['speed_up']:>8.2f}x {busy:>9}  {notes}"
        )


def _short(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def cpu_check(quick: bool, threads: int | None) -> dict:
    """The default `lifelong run` on the CPU with whichever `lifelong` is imported: wall time and mean error."""
    import lifelong
    from lifelong.commands.runner import RunSpec, execute

    fields = {f.name for f in dataclasses.fields(RunSpec)}
    with tempfile.TemporaryDirectory(prefix="bench_device_") as tmp:
        options = {"out": tmp, **({"device": "cpu"} if "device" in fields else {})}
        options.update({"threads": threads} if threads else {})
        options.update({"stop_after": 2} if quick else {})
        spec = RunSpec(**options)
        t0 = time.perf_counter()
        summary = execute(spec)
        seconds = time.perf_counter() - t0
    result = {
        "lifelong": str(Path(lifelong.__file__).parent),
        "seconds": seconds,
        "threads": spec.threads,
        "mean_error": summary.get("mean_error"),
        "events": f"{summary['events_done']}/{summary['events_total']}",
        "timing": summary.get("timing"),
    }
    print(
        f"default lifelong run (stream {spec.stream}, learner {spec.learner}, CPU, {spec.threads} torch thread(s)) "
        f"with lifelong from {result['lifelong']}:\n  wall {seconds:.1f} s, {result['events']}, mean error "
        f"{_short(result['mean_error'])}, timing {result['timing']}"
    )
    return result


def cpu_before_after(before_src: Path, quick: bool, threads: int | None) -> dict:
    """`cpu_check` with the code under `before_src` and with this tree, at the same time (one core each, the same
    conditions), each in its own process; prints both, the ratio after/before and whether the numbers agree."""
    if not (before_src / "lifelong" / "__init__.py").is_file():
        raise SystemExit(f"--before {before_src}: no lifelong package there (give an older checkout's src folder)")
    here = Path(__file__).resolve()
    with tempfile.TemporaryDirectory(prefix="bench_device_") as tmp:
        procs = {}
        for name, src in (("before", before_src), ("after", here.parents[1] / "src")):
            out = Path(tmp) / f"{name}.json"
            cmd = [sys.executable, str(here), "--cpu-check", "--json", str(out), *(["--quick"] if quick else [])]
            cmd += ["--threads", str(threads)] if threads else []
            env = {**os.environ, "PYTHONPATH": str(src.resolve())}
            procs[name] = (subprocess.Popen(cmd, env=env), out)
        results = {}
        for name, (proc, out) in procs.items():
            if proc.wait() != 0:
                raise SystemExit(f"the {name} run failed (exit {proc.returncode})")
            results[name] = json.loads(out.read_text())
    before, after = results["before"], results["after"]
    same = before["mean_error"] == after["mean_error"]
    print(
        f"CPU before/after, run at the same time: before {before['seconds']:.1f} s, after {after['seconds']:.1f} s, "
        f"ratio after/before {after['seconds'] / before['seconds']:.3f}; mean error identical: {same}"
    )
    return {"before": before, "after": after, "ratio": after["seconds"] / before["seconds"], "identical": same}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, same workloads and checks")
    parser.add_argument("--devices", default="cpu,cuda", help="comma-separated; unavailable ones are skipped")
    parser.add_argument("--threads", type=int, help="torch threads (default 1, as `lifelong run`)")
    parser.add_argument("--only", default="run,transfer,simclr,sortsearch", help="workloads to measure")
    parser.add_argument("--cpu-check", action="store_true", help="time the default `lifelong run` on the CPU only")
    parser.add_argument("--before", type=Path, help="with --cpu-check: an older checkout's src, timed side by side")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.cpu_check:
        if args.before:
            result = cpu_before_after(args.before, args.quick, args.threads)
        else:
            result = cpu_check(args.quick, args.threads)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return

    import torch

    from lifelong.training.devices import available_devices, resolve_device

    threads = args.threads or 1
    here = available_devices()
    devices = [d for d in args.devices.split(",") if d and d.split(":")[0] in here]
    if not torch.cuda.is_available():
        print("No CUDA GPU here (torch.cuda.is_available() is False): skipping CUDA, measuring the CPU only.")
    for device in devices:
        if device.startswith("cuda"):
            torch.zeros(1, device=resolve_device(device)).sum().item()  # CUDA context start-up is not measured
            print(f"{device}: {torch.cuda.get_device_name(resolve_device(device))}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"devices {', '.join(devices)}; {threads} torch thread(s); {os.cpu_count()} CPU cores, load average {load}; "
        f"quick={args.quick}"
    )
    only = set(args.only.split(","))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench_device_") as tmp:
        training = {
            "run": lambda: run_workload(Path(tmp), args.quick, threads),
            "transfer": lambda: transfer_workload(args.quick, threads),
            "simclr": lambda: simclr_workload(args.quick),
        }
        for name, prepare in training.items():
            if name in only:
                work = prepare()
                rows += [measure(name, work, device, threads) for device in devices]
        if "sortsearch" in only:
            sort, search, shape = sortsearch_workloads(args.quick)
            print(f"Sort & Search matrix: {shape}")
            for name, work in (("sort", sort), ("search", search)):
                rows += [measure(name, work, device, threads, repeats=3) for device in ["numpy", *devices]]
    print_table(rows)
    print("speed-up: the workload's first row's seconds / this row's (CPU for training, NumPy for Sort & Search)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"devices": devices, "threads": threads, "quick": args.quick, "rows": rows}, indent=2, default=str
            )
        )


if __name__ == "__main__":
    main()
