"""Benchmark the linear regime of the CLEAR learners against the usual linear-probe recipe, in the same run.

One clear-mini bucket under the IID protocol (2,310 training images at 16x16), a frozen resnet_mini encoder
(an SSL checkpoint if given, else random weights: speed does not depend on them), a linear head trained for
the same epochs, batch and lr:

- lifelong: `finetune -o encoder=...` (lifelong.learners.continual): the bucket is encoded once per training
  event, then the head trains on the cached features.
- baseline: the common recipe of continual-learning libraries: every batch of every epoch goes through the frozen
  encoder again (no gradient), then the head steps.

Same epochs, batch size, lr and step schedule (the batch order is drawn differently), so both heads should reach
similar accuracy; printed: wall time of each, the ratio, and each head's accuracy on the bucket's 30% evaluation
split.

Run: python benchmarks/bench_clear.py [--encoder PATH] [--epochs 30] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from lifelong.data.sources.drifting import ClearMini
from lifelong.learners.continual_methods import FinetuneLearner
from lifelong.suites.clear import temporal_stream
from lifelong.training.encoders import EncoderCheckpoint, load_encoder, save_encoder
from lifelong.training.inputs import prepare_batch
from lifelong.training.loop import set_torch_threads
from lifelong.training.models import make_model


def random_encoder(folder: Path, resolution: int) -> str:
    """A randomly initialised resnet_mini backbone saved as an encoder checkpoint; returns its path."""
    backbone = make_model("resnet_mini", 2, seed=0).backbone
    checkpoint = EncoderCheckpoint(
        "resnet_mini", backbone.state_dict(), resolution, 3, backbone.widths[-1], method="random"
    )
    return str(save_encoder(checkpoint, folder / "random.pt"))


def naive_probe(encoder_spec: str, images: np.ndarray, labels: np.ndarray, classes: int, args) -> torch.nn.Linear:
    """Linear probe that re-encodes every batch of every epoch (the per-batch recipe), same schedule as lifelong."""
    encoder = load_encoder(encoder_spec)
    head = torch.nn.Linear(encoder.feature_dim, classes)
    optimizer = torch.optim.SGD(head.parameters(), lr=args.lr, momentum=0.9)
    rng = np.random.default_rng(0)
    for epoch in range(args.epochs):
        if epoch == int(np.ceil(0.6 * args.epochs)):
            for group in optimizer.param_groups:
                group["lr"] = args.lr * 0.1
        order = rng.permutation(len(images))
        for start in range(0, len(order), args.batch):
            idx = order[start : start + args.batch]
            with torch.no_grad():
                features = encoder(prepare_batch(images[idx], channels=3, size=encoder.resolution))
            loss = F.cross_entropy(head(features), torch.from_numpy(labels[idx]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return head


def accuracy_of(head, encoder_spec: str, images: np.ndarray, labels: np.ndarray) -> float:
    encoder = load_encoder(encoder_spec)
    with torch.no_grad():
        logits = head(encoder(prepare_batch(images, channels=3, size=encoder.resolution)))
    return float((logits.argmax(1).numpy() == labels).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", default=None, help="encoder spec (default: random resnet_mini weights)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    set_torch_threads(args.threads)

    stream = temporal_stream(ClearMini())
    splits = stream.splits(0)
    train, test = splits.train_and_dev(), splits.test
    with tempfile.TemporaryDirectory() as folder:
        spec = args.encoder or random_encoder(Path(folder), 16)
        learner = FinetuneLearner(
            encoder=spec, linear_epochs=args.epochs, linear_batch_size=args.batch, linear_lr=args.lr
        )
        event = next(e for e in stream.events() if type(e).__name__ == "TrainEvent")
        predict = next(e for e in stream.events() if type(e).__name__ == "PredictEvent")
        tick = time.perf_counter()
        state, _ = learner.train(event, learner.init(0))
        lifelong_seconds = time.perf_counter() - tick
        lifelong_accuracy = float((learner.predict(predict, state).argmax(1) == test.labels()).mean())

        tick = time.perf_counter()
        head = naive_probe(spec, train.images, train.labels(), event.task.num_classes, args)
        naive_seconds = time.perf_counter() - tick
        naive_accuracy = accuracy_of(head, spec, test.images, test.labels())

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}")
    print(f"one clear-mini bucket (IID): {len(train)} train / {len(test)} eval images, {args.epochs} epochs")
    print(f"{'':34}{'seconds':>10}{'accuracy':>10}")
    print(f"{'lifelong (encode once per event)':34}{lifelong_seconds:10.2f}{lifelong_accuracy:10.3f}")
    print(f"{'baseline (encode every batch)':34}{naive_seconds:10.2f}{naive_accuracy:10.3f}")
    print(f"speed-up: {naive_seconds / lifelong_seconds:.1f}x")


if __name__ == "__main__":
    main()
