"""Benchmark the linear regime of the CLEAR learners against a linear probe written plainly, in the same run.

One clear-mini bucket under the IID protocol (2,310 training images at 16x16), a frozen resnet_mini encoder
(an SSL checkpoint if given, else random weights: speed does not depend on them), a linear head trained for
the same epochs, batch, lr and step schedule:

- lifelong: `finetune -o encoder=...` (lifelong.learners.continual): the bucket is encoded once per training
  event (through its feature cache, cold here: a fresh folder), then the head trains on the features.
- baseline (the headline): the same recipe written plainly: the bucket encoded once (no gradient), then the head
  trains on those features every epoch.
- naive baseline (extra line): the common recipe of continual-learning libraries: every batch of every epoch goes
  through the frozen encoder again (no gradient), then the head steps.

Both baselines start from lifelong's initial head and draw lifelong's batch orders (its seeds), so all three heads
must agree: their logits on the bucket's 30% evaluation split must equal lifelong's to a stated tolerance, else
the run exits 1. Printed: wall time and accuracy of each, and lifelong's speed-up against each baseline.
torch's one-time costs (the imports behind lifelong's FLOP counting, first kernels) are paid before timing: they
come once per process, not once per event.

Run: python benchmarks/bench_clear.py [--quick] [--encoder PATH] [--epochs 30] [--threads 1]
(--quick: 5 epochs, the same bucket, the same comparisons.)
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from _same import require_same

from lifelong.data.sources.drifting import ClearMini
from lifelong.learners.continual import _INIT, _TRAIN  # the learner's seed streams: same initial head, same orders
from lifelong.learners.continual_methods import FinetuneLearner
from lifelong.suites.clear import temporal_stream
from lifelong.training.continual_loop import _ORDER
from lifelong.training.encoders import EncoderCheckpoint, load_encoder, save_encoder
from lifelong.training.feature_cache import CACHE_ENV
from lifelong.training.flops import count_inference_flops
from lifelong.training.inputs import prepare_batch
from lifelong.training.loop import derive_seed, set_torch_threads
from lifelong.training.models import initialise, make_model

# Allowed |difference| of each baseline's evaluation logits from lifelong's. The fair baseline encodes in lifelong's
# 256-image groups: exact. The naive one encodes its shuffled training batches, and a convolution's result may depend
# on the batch it runs in (kernel choice), so features, and after SGD the logits, may differ in the last bits.
LOGITS_TOL = {"baseline (encode once)": 0.0, "naive (encode every batch)": 1e-4}
SEED = 0


def random_encoder(folder: Path, resolution: int) -> str:
    """A randomly initialised resnet_mini backbone saved as an encoder checkpoint; returns its path."""
    backbone = make_model("resnet_mini", 2, seed=0).backbone
    checkpoint = EncoderCheckpoint(
        "resnet_mini", backbone.state_dict(), resolution, 3, backbone.widths[-1], method="random"
    )
    return str(save_encoder(checkpoint, folder / "random.pt"))


def encoder_of(spec: str) -> torch.nn.Module:
    """The frozen encoder, in eval mode (batch norm uses its running statistics, as lifelong's does)."""
    encoder = load_encoder(spec)
    encoder.eval()
    encoder.requires_grad_(False)
    return encoder


@torch.no_grad()
def encode_once(encoder: torch.nn.Module, images: np.ndarray, batch: int = 256) -> torch.Tensor:
    """Features of every image, `batch` images per forward pass (256: lifelong's eval_batch_size, its groups)."""
    return torch.cat(
        [
            encoder(prepare_batch(images[s : s + batch], channels=3, size=encoder.resolution))
            for s in range(0, len(images), batch)
        ]
    )


def train_head(
    features_of: Callable[[np.ndarray], torch.Tensor], labels: np.ndarray, classes: int, dim: int, args, task_index: int
) -> torch.nn.Linear:
    """SGD + momentum on a linear head, lr x0.1 from 60% of the epochs, full batches only; `features_of(idx)` gives
    the features of the batch. Starts from lifelong's initial head and draws lifelong's batch orders."""
    head = initialise(torch.nn.Linear(dim, classes), derive_seed(SEED, task_index, _INIT))
    optimizer = torch.optim.SGD(head.parameters(), lr=args.lr, momentum=0.9)
    seed, n = derive_seed(SEED, task_index, _TRAIN), len(labels)
    batch = min(args.batch, n)
    for epoch in range(args.epochs):
        for group in optimizer.param_groups:
            group["lr"] = args.lr * (0.1 if epoch >= int(np.ceil(0.6 * args.epochs)) else 1.0)
        order = np.random.default_rng(derive_seed(seed, _ORDER, epoch)).permutation(n)
        for start in range(0, n // batch * batch, batch):
            idx = order[start : start + batch]
            loss = F.cross_entropy(head(features_of(idx)), torch.from_numpy(labels[idx]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return head


def fair_probe(
    spec: str, images: np.ndarray, labels: np.ndarray, classes: int, args, task_index: int
) -> torch.nn.Linear:
    """The baseline: encode the bucket once, then train the head on those features every epoch."""
    encoder = encoder_of(spec)
    features = encode_once(encoder, images)
    return train_head(lambda idx: features[idx], labels, classes, encoder.feature_dim, args, task_index)


def naive_probe(
    spec: str, images: np.ndarray, labels: np.ndarray, classes: int, args, task_index: int
) -> torch.nn.Linear:
    """The naive baseline: every batch of every epoch through the frozen encoder again."""
    encoder = encoder_of(spec)

    @torch.no_grad()
    def features_of(idx: np.ndarray) -> torch.Tensor:
        return encoder(prepare_batch(images[idx], channels=3, size=encoder.resolution))

    return train_head(features_of, labels, classes, encoder.feature_dim, args, task_index)


@torch.no_grad()
def logits_of(head: torch.nn.Linear, spec: str, images: np.ndarray) -> np.ndarray:
    """A baseline head's logits on `images` (encoded once)."""
    return head(encode_once(encoder_of(spec), images)).numpy()


def warm_up(spec: str, image_shape: tuple[int, ...]) -> None:
    """Pay torch's one-time costs before anything is timed: FlopCounterMode's imports and the first kernels."""
    encoder = encoder_of(spec)
    count_inference_flops(encoder, prepare_batch(np.zeros((2, *image_shape), np.uint8), size=encoder.resolution))


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    """(fn(), its wall seconds)."""
    tick = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - tick


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 epochs (unless --epochs): same bucket and checks")
    parser.add_argument("--encoder", default=None, help="encoder spec (default: random resnet_mini weights)")
    parser.add_argument("--epochs", type=int, help="linear-head epochs (default 30; quick 5)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    args.epochs = args.epochs or (5 if args.quick else 30)
    set_torch_threads(args.threads)

    stream = temporal_stream(ClearMini())
    event = next(e for e in stream.events() if type(e).__name__ == "TrainEvent")
    predict = next(e for e in stream.events() if type(e).__name__ == "PredictEvent")
    splits = stream.splits(event.task_index)
    train, test = splits.train_and_dev(), splits.test
    images, labels, classes = train.images, train.labels(), event.task.num_classes
    with tempfile.TemporaryDirectory() as folder:
        os.environ[CACHE_ENV] = str(Path(folder) / "cache")  # a cold feature cache: lifelong encodes the bucket
        spec = args.encoder or random_encoder(Path(folder), 16)
        learner = FinetuneLearner(
            encoder=spec, linear_epochs=args.epochs, linear_batch_size=args.batch, linear_lr=args.lr
        )
        warm_up(spec, images.shape[1:])
        (state, _), ours_seconds = timed(lambda: learner.train(event, learner.init(SEED)))
        ours_logits = learner.predict(predict, state)
        results = {"lifelong (encode once per event)": (ours_seconds, ours_logits, "(the reference)")}
        for name, probe in (("baseline (encode once)", fair_probe), ("naive (encode every batch)", naive_probe)):
            head, seconds = timed(lambda p=probe: p(spec, images, labels, classes, args, event.task_index))
            logits, tol = logits_of(head, spec, test.images), LOGITS_TOL[name]
            agree = require_same(f"{name}: evaluation logits", ours_logits, logits, atol=tol, rtol=tol)
            results[name] = (seconds, logits, agree)

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}")
    print(f"one clear-mini bucket (IID): {len(train)} train / {len(test)} eval images, {args.epochs} epochs")
    print(f"{'':34}{'seconds':>10}{'accuracy':>10}  evaluation logits vs lifelong's")
    for name, (seconds, logits, agree) in results.items():
        print(f"{name:34}{seconds:10.2f}{float((logits.argmax(1) == test.labels()).mean()):10.3f}  {agree}")
    fair, naive = (results[name][0] for name in list(results)[1:])
    print(f"speed-up of lifelong against the baseline (encode once): {fair / ours_seconds:.2f}x")
    print(f"  (extra) against the naive baseline (encode every batch): {naive / ours_seconds:.2f}x")


if __name__ == "__main__":
    main()
