"""Cost of the fact model's pretrained trunk (issue 25): training steps of each trunk mode, in the same run.

Modes, each a training step (forward, the fact distance loss, backward, SGD with the authors' param groups) on a
batch of `--batch-size` images at `--resolution` px through EfficientNet-Lite0 (random pixels: speed does not
depend on them):
- authors: the authors' Model_2 layout (`-o finetune=partial`): stem..stage2 frozen, stage3 shared, per-branch
  copies of stage4..head fine-tuned, new last layers (the paper's recipe, on this trunk);
- full: the same branches with nothing frozen (`-o finetune=full`);
- frozen: the default, the trunk frozen: one forward per image once (its features cached, `extract` below), then
  steps of the per-branch hidden layers on 1280-d features (`BranchHeads`, `-o hidden`).
For each it prints samples/s and the seconds one epoch of facts-mini's 25,648 training images takes; `extract` is
the frozen trunk's one-time forward pass (images/s), and the ratio is a mode's epoch time against the frozen one's
(plus, for the frozen mode, its one-time extraction spread over `--epochs` epochs). Torch threads: `--threads`
(default 1, as `lifelong run`); `--devices cpu,cuda` measures each device present.

Run: python benchmarks/bench_fact_model.py [--resolution 64] [--batch-size 64] [--hidden 512] [--steps 6]
     [--devices cpu,cuda] [--threads 1] [--json OUT] [--quick]
--quick: a smoke run of every mode at 32 px, batches of 8, one timed step (4 for frozen); without the [models]
extra it says so and skips.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from lifelong.learners.fact_model import (
    AUTHORS_BIAS_MULTIPLIER,
    AUTHORS_MULTIPLIERS,
    BranchedFactModel,
    BranchHeads,
    branch_param_groups,
)
from lifelong.training.encoders import load_encoder
from lifelong.training.encoders.stages import stage_names

FACTS_MINI_TRAIN = 25_648
DIM = 384  # facts-mini's word vectors


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def step_rate(model: torch.nn.Module, x: torch.Tensor, steps: int, device: torch.device) -> float:
    """Samples/s of training steps of `model` on the batch `x` (two warm-up steps first)."""
    groups = branch_param_groups(model, 0.003, 5e-4, AUTHORS_MULTIPLIERS, AUTHORS_BIAS_MULTIPLIER)
    optimizer = torch.optim.SGD(groups, lr=0.003, momentum=0.9)
    target = torch.randn(len(x), 3 * DIM, device=device)
    model.train()
    for i in range(steps + 2):
        if i == 2:
            _sync(device)
            start = time.perf_counter()
        loss = ((model(x) - target) ** 2).reshape(len(x), 3, DIM).sum(-1).sqrt().sum(1).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    _sync(device)
    return steps * len(x) / (time.perf_counter() - start)


@torch.no_grad()
def extract_rate(encoder: torch.nn.Module, x: torch.Tensor, device: torch.device) -> float:
    encoder(x)
    _sync(device)
    start = time.perf_counter()
    for _ in range(3):
        encoder(x)
    _sync(device)
    return 3 * len(x) / (time.perf_counter() - start)


def missing_encoder() -> str | None:
    """Why EfficientNet-Lite0 cannot be loaded (the [models] extra absent), or None when it can."""
    try:
        load_encoder("efficientnet-lite0")
    except ImportError as exc:
        return str(exc)
    return None


def measure(device: torch.device, args) -> list[dict]:
    encoder = load_encoder("efficientnet-lite0").to("cpu")
    names = stage_names(encoder)
    frozen, branch = names.index("stage3"), names.index("stage4")
    x = (torch.rand(args.batch_size, 3, args.resolution, args.resolution) * 2 - 1).to(device)
    rows = []
    for mode, frozen_stages in (("authors", frozen), ("full", 0)):
        model = BranchedFactModel(encoder, DIM, frozen=frozen_stages, branch_from=branch).to(device)
        rows.append({"mode": mode, "samples_per_s": step_rate(model, x, args.steps, device)})
    trunk = encoder.to(device).eval()
    extract = extract_rate(trunk, x, device)
    features = torch.randn(args.batch_size, encoder.feature_dim, device=device)
    heads = BranchHeads(encoder.feature_dim, DIM, args.hidden).to(device)
    rows.append({"mode": "frozen", "samples_per_s": step_rate(heads, features, args.steps * 4, device)})
    frozen_epoch = FACTS_MINI_TRAIN / rows[-1]["samples_per_s"] + FACTS_MINI_TRAIN / extract / args.epochs
    for row in rows:
        row["epoch_s"] = FACTS_MINI_TRAIN / row["samples_per_s"]
        row["vs_frozen"] = row["epoch_s"] / frozen_epoch
    rows.append({"mode": "extract", "samples_per_s": extract, "epoch_s": FACTS_MINI_TRAIN / extract})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--steps", type=int, default=6, help="timed steps of the image modes (4x for frozen)")
    parser.add_argument("--epochs", type=int, default=30, help="epochs the frozen mode's extraction is spread over")
    parser.add_argument("--devices", default="cpu,cuda")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--quick", action="store_true", help="smoke run: 32 px, batch 8, 1 timed step")
    args = parser.parse_args()
    if args.quick:
        args.resolution, args.batch_size, args.steps = 32, 8, 1
    torch.set_num_threads(args.threads)
    if args.quick and (why := missing_encoder()):
        print(f"every mode skipped: {why}")
        return
    out = {}
    for name in args.devices.split(","):
        if name == "cuda" and not torch.cuda.is_available():
            print("cuda: not available, skipped")
            continue
        device = torch.device(name)
        label = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {args.threads} thread(s)"
        print(f"\n{label}: EfficientNet-Lite0 at {args.resolution} px, batch {args.batch_size}, hidden {args.hidden}")
        print(f"  {'mode':<8} {'samples/s':>10} {'epoch s':>9} {'x frozen':>9}")
        rows = measure(device, args)
        for row in rows:
            ratio = f"{row['vs_frozen']:>9.1f}" if "vs_frozen" in row else f"{'(once)':>9}"
            print(f"  {row['mode']:<8} {row['samples_per_s']:>10.1f} {row['epoch_s']:>9.1f} {ratio}")
        out[label] = rows
    print(
        f"\nepoch: facts-mini's {FACTS_MINI_TRAIN:,} training images; x frozen: against the frozen trunk's epoch "
        f"plus its one-time extraction spread over {args.epochs} epochs"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
