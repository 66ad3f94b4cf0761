"""One Avalanche 0.6.0 run of the peer comparison (benchmarks/bench_peers.py starts it inside Avalanche's own
virtual environment; the toolkit never imports Avalanche).

Reads the stream the toolkit built (uint8 images and labels of every experience, train and test, in an .npz) and
the toolkit's starting weights of _peer_mlp.PeerMLP, trains one strategy over the experiences, evaluates every
experience's test set after each, and writes the accuracy matrix and timings as JSON.
"""

from __future__ import annotations

import argparse
import json
import time

STARTED = time.perf_counter()

import numpy as np  # noqa: E402
import torch  # noqa: E402


def declare_torchvision_operators() -> object:
    """PyPI's torchvision wheel is a CUDA build: beside the CPU torch its extension registers no operator, and its
    fake-tensor registrations fail on the two whose schema nothing declared. Declaring them lets it import (they
    are never called: the comparison uses no detection op)."""
    library = torch.library.Library("torchvision", "DEF")
    library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    library.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
    return library


_LIBRARY = declare_torchvision_operators()

from _peer_mlp import PeerMLP  # noqa: E402
from avalanche.benchmarks.scenarios.dataset_scenario import benchmark_from_datasets  # noqa: E402
from avalanche.benchmarks.utils.classification_dataset import (  # noqa: E402
    _make_taskaware_tensor_classification_dataset as tensor_dataset,
)
from avalanche.evaluation.metrics import accuracy_metrics  # noqa: E402
from avalanche.training import supervised  # noqa: E402
from avalanche.training.determinism.rng_manager import RNGManager  # noqa: E402
from avalanche.training.plugins import EvaluationPlugin, SupervisedPlugin  # noqa: E402

IMPORTED = time.perf_counter()


class FreshOptimizer(SupervisedPlugin):
    """Every experience starts with empty optimizer state, as the toolkit's learners do (a new SGD per bucket);
    Avalanche's default carries the momentum over from the previous experience."""

    def before_training_exp(self, strategy, **kwargs):
        strategy.optimizer.state.clear()


def inputs(images: np.ndarray) -> torch.Tensor:
    """uint8 [N, 28, 28] -> float32 [N, 1, 28, 28] in [-1, 1]: the toolkit's input scaling (x / 127.5 - 1)."""
    return torch.from_numpy(images.astype(np.float32)[:, None]).div_(127.5).sub_(1.0)


def datasets(stream: np.lib.npyio.NpzFile, split: str) -> list:
    out = []
    for k in range(int(stream["experiences"])):
        x, y = inputs(stream[f"{split}_x{k}"]), torch.from_numpy(stream[f"{split}_y{k}"].astype(np.int64))
        out.append(tensor_dataset(x, y, targets=y.tolist(), task_labels=0))
    return out


def strategy(name: str, model: torch.nn.Module, args: argparse.Namespace, evaluator: EvaluationPlugin):
    """The Avalanche strategy `name` with the hyper-parameters given (Avalanche's own units)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    common = {
        "model": model,
        "optimizer": optimizer,
        "criterion": torch.nn.CrossEntropyLoss(),
        "train_mb_size": args.batch_size,
        "train_epochs": args.epochs,
        "eval_mb_size": 256,
        "device": "cpu",
        "evaluator": evaluator,
        "plugins": [FreshOptimizer()] if args.fresh_optimizer else None,
    }
    if name == "naive":
        return supervised.Naive(**common)
    if name == "ewc":
        return supervised.EWC(ewc_lambda=args.ewc_lambda, mode="online", decay_factor=1.0, **common)
    if name == "si":
        return supervised.SynapticIntelligence(si_lambda=args.si_lambda, eps=args.si_eps, **common)
    if name == "lwf":
        return supervised.LwF(alpha=args.lwf_alpha, temperature=args.lwf_temperature, **common)
    if name == "replay":
        return supervised.Replay(mem_size=args.mem_size, **common)
    if name == "gdumb":
        return supervised.GDumb(mem_size=args.mem_size, **common)
    if name == "agem":
        return supervised.AGEM(patterns_per_exp=args.agem_patterns, sample_size=args.agem_sample_size, **common)
    if name == "cwr":
        return supervised.CWRStar(cwr_layer_name="head", **common)
    raise SystemExit(f"unknown method {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stream", required=True, help=".npz written by bench_peers.py")
    parser.add_argument("--init", required=True, help="the starting state dict (torch.save)")
    parser.add_argument("--method", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--json", required=True, help="where the result goes")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--fresh-optimizer", action="store_true", help="clear the optimizer's state per experience")
    for name, kind in (("epochs", int), ("batch_size", int), ("lr", float), ("momentum", float)):
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, required=True)
    parser.add_argument("--weight-decay", dest="weight_decay", type=float, default=0.0)
    parser.add_argument("--ewc-lambda", dest="ewc_lambda", type=float, default=1.0)
    parser.add_argument("--si-lambda", dest="si_lambda", type=float, default=1.0)
    parser.add_argument("--si-eps", dest="si_eps", type=float, default=1e-7)
    parser.add_argument("--lwf-alpha", dest="lwf_alpha", type=float, default=1.0)
    parser.add_argument("--lwf-temperature", dest="lwf_temperature", type=float, default=2.0)
    parser.add_argument("--mem-size", dest="mem_size", type=int, default=1000)
    parser.add_argument("--agem-patterns", dest="agem_patterns", type=int, default=250)
    parser.add_argument("--agem-sample-size", dest="agem_sample_size", type=int, default=64)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    RNGManager.set_random_seeds(args.seed)
    stream = np.load(args.stream)
    scenario = benchmark_from_datasets(train=datasets(stream, "train"), test=datasets(stream, "test"))
    model = PeerMLP(int(stream["num_classes"]))
    model.load_state_dict(torch.load(args.init, weights_only=True))
    evaluator = EvaluationPlugin(accuracy_metrics(experience=True), loggers=[])
    learner = strategy(args.method, model, args, evaluator)
    experiences = len(scenario.streams["train"])
    matrix, train_seconds = [], 0.0
    for i, experience in enumerate(scenario.streams["train"]):
        start = time.perf_counter()
        learner.train(experience, num_workers=0)
        train_seconds += time.perf_counter() - start
        metrics = learner.eval(scenario.streams["test"], num_workers=0)
        row = [float(metrics[f"Top1_Acc_Exp/eval_phase/test_stream/Exp{j:03d}"]) for j in range(experiences)]
        matrix.append(row)
        print(
            f"avalanche {args.method} seed {args.seed}: after experience {i}: {np.round(row, 3).tolist()}", flush=True
        )
    result = {
        "library": "avalanche",
        "method": args.method,
        "seed": args.seed,
        "matrix": matrix,
        "train_seconds": train_seconds,
        "import_seconds": IMPORTED - STARTED,
        "process_seconds": time.perf_counter() - STARTED,
    }
    with open(args.json, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
