"""Feature extraction speed of the encoders (issue 23, part 6): images/s at each model's own resolution.

Models: every registered EfficientNet-Lite (lite0/1/2 at 224/240/260, when the `[models]` extra is installed) and a
toolkit ResNet (`resnet18`, untrained: speed does not depend on the weights, at 64 px, the toolkit's default side).
Input: uint8 photos of varied sizes (scikit-learn's two sample photos, cut into crops), so every path pays the
encoder's own preprocessing (`Encoder.prepare`: centre crop, bicubic resize) as feature extraction does.

For each model and device, in the same run:
- naive: one image at a time (prepare, forward), fp32, NCHW, under torch.no_grad;
- batched variants: batches of `--batch-size` under torch.inference_mode, fp32 or bf16 (autocast), NCHW or
  channels_last. Each prints images/s, the speed-up over the naive loop, and how far its features are from the
  fp32 ones (min cosine similarity over the images and max |diff| / max |feature|).
The fastest batched variant whose features agree with fp32 (min cosine >= `--tolerance`, default 0.999) is
marked "best". Torch threads are set explicitly (`--threads`, default: every core) for every path.
On CUDA (when present) the same is measured with fp16/bf16 autocast instead of CPU bf16.

Feature cache (`--cache`): the same images through the shared feature cache twice, in a fresh cache folder; the
first call encodes (a miss), the second reads the stored features (a hit); prints both times, their ratio and
whether the features are identical (exit 1 if not).

Run: python benchmarks/bench_encoders.py [--quick] [--cache] [--threads N] [--batch-size 32] [--images 128]
     [--models efficientnet-lite0,resnet18] [--devices cpu,cuda] [--json OUT]
--quick: a smoke run of every model, 8 images (2 naive) in batches of 4, one torch thread unless --threads is
given, the feature cache included.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from lifelong.training.encoders import backbone_encoder, load_encoder, untrained_encoder

TOOLKIT = "resnet18"
TOOLKIT_SIDE = 64
LITES = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2")


def photos(count: int, seed: int = 0) -> list[np.ndarray]:
    """`count` uint8 crops (sides 160-420 px, varied aspect) of scikit-learn's two sample photos."""
    from sklearn.datasets import load_sample_images

    sources = load_sample_images().images  # china.jpg, flower.jpg: 427 x 640 x 3
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        image = sources[i % len(sources)]
        h = int(rng.integers(160, 421))
        w = int(rng.integers(160, 601))
        top, left = int(rng.integers(0, image.shape[0] - h + 1)), int(rng.integers(0, image.shape[1] - w + 1))
        out.append(np.ascontiguousarray(image[top : top + h, left : left + w]))
    return out


def make_encoder(name: str):
    if name == TOOLKIT:
        ckpt = untrained_encoder(TOOLKIT, resolution=TOOLKIT_SIDE, seed=0)
        return backbone_encoder(
            ckpt.architecture, ckpt.backbone_state, in_channels=3, resolution=TOOLKIT_SIDE, description=TOOLKIT
        )
    return load_encoder(name)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def naive(encoder, images, device) -> tuple[float, np.ndarray]:
    """(seconds, features) of the per-image loop: prepare one image, forward it, fp32, NCHW."""
    out = []
    _sync(device)
    start = time.perf_counter()
    with torch.no_grad():
        for image in images:
            x = encoder.prepare([image]).to(device)
            out.append(encoder(x).float().cpu())
    _sync(device)
    return time.perf_counter() - start, torch.cat(out).numpy()


def batched(encoder, images, device, batch_size: int, dtype: torch.dtype | None, channels_last: bool):
    """(seconds, features) of batched extraction; `dtype` None: fp32, else autocast to it."""
    memory = torch.channels_last if channels_last else torch.contiguous_format
    encoder.to(memory_format=memory)
    autocast = torch.autocast(device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()
    out = []
    _sync(device)
    start = time.perf_counter()
    with torch.inference_mode(), autocast:
        for s in range(0, len(images), batch_size):
            x = encoder.prepare(images[s : s + batch_size]).to(device, memory_format=memory)
            out.append(encoder(x).float().cpu())
    _sync(device)
    seconds = time.perf_counter() - start
    encoder.to(memory_format=torch.contiguous_format)
    return seconds, torch.cat(out).numpy()


def agreement(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(min cosine similarity over rows, max |a - b| / max |b|)."""
    na = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    nb = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((na * nb).sum(1).min()), float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def variants(device: torch.device) -> list[tuple[str, torch.dtype | None, bool]]:
    half = [("bf16", torch.bfloat16)] if device.type == "cpu" else [("fp16", torch.float16), ("bf16", torch.bfloat16)]
    out = [("fp32", None, False), ("fp32 channels_last", None, True)]
    for label, dtype in half:
        out += [(label, dtype, False), (f"{label} channels_last", dtype, True)]
    return out


def measure(name: str, device: torch.device, args, images, naive_images) -> dict:
    encoder = make_encoder(name).to(device).eval()
    side = encoder.resolution
    # warm-up (allocator, oneDNN kernels for each layout / precision)
    for _, dtype, cl in variants(device):
        batched(encoder, images[: min(len(images), args.batch_size)], device, args.batch_size, dtype, cl)
    seconds, ref_naive = naive(encoder, naive_images, device)
    naive_rate = len(naive_images) / seconds
    rows = [{"path": "naive (1 image, fp32)", "images_per_s": naive_rate, "speedup": 1.0, "cosine": 1.0, "rel": 0.0}]
    reference = None
    for label, dtype, cl in variants(device):
        seconds, feats = batched(encoder, images, device, args.batch_size, dtype, cl)
        if reference is None:
            reference = feats
            cos, rel = agreement(feats[: len(ref_naive)], ref_naive)  # batched fp32 vs the naive loop's
        else:
            cos, rel = agreement(feats, reference)
        rate = len(images) / seconds
        rows.append(
            {
                "path": f"batch {args.batch_size}, {label}",
                "images_per_s": rate,
                "speedup": rate / naive_rate,
                "cosine": cos,
                "rel": rel,
            }
        )
    ok = [r for r in rows[1:] if r["cosine"] >= args.tolerance]
    best = max(ok, key=lambda r: r["images_per_s"])["path"] if ok else None
    return {"model": name, "resolution": side, "device": device.type, "rows": rows, "best": best}


def print_result(result: dict) -> None:
    print(f"\n{result['model']} at {result['resolution']} px on {result['device']}")
    print(f"  {'path':<34} {'images/s':>9} {'x naive':>8} {'min cos':>9} {'max rel':>8}")
    for r in result["rows"]:
        mark = "  best" if r["path"] == result["best"] else ""
        print(
            f"  {r['path']:<34} {r['images_per_s']:>9.1f} {r['speedup']:>8.2f} {r['cosine']:>9.5f} "
            f"{r['rel']:>8.4f}{mark}"
        )


def cache_hit(name: str, images: list[np.ndarray], batch_size: int) -> dict:
    """Seconds of a cache miss (encode and store) against a hit (read back) for the same 160 x 160 crops, and
    against another split of them (a shuffled 70%, as a new seed's iid split draws), which hits image by image."""
    import tempfile

    from lifelong.training import array_feature_cache, feature_cache
    from lifelong.training.encoders import encode_images

    encoder = make_encoder(name)
    items = np.stack([image[:160, :160] for image in images])
    preprocessing = {"resolution": encoder.resolution, "transform": "bench_encoders: Encoder.prepare"}
    identity = feature_cache.encoder_identity(encoder, precision="fp32", preprocessing=preprocessing)

    def encode(block: np.ndarray) -> np.ndarray:
        return np.asarray(encode_images(encoder, list(block), batch_size=batch_size), np.float32)

    with tempfile.TemporaryDirectory() as root:
        seconds = []
        for _ in range(2):
            start = time.perf_counter()
            features = np.array(array_feature_cache.cached_array_features(encode, items, identity, root=root))
            seconds.append(time.perf_counter() - start)
            if len(seconds) == 1:
                first = features
        split = np.random.default_rng(0).permutation(len(items))[: max(1, int(0.7 * len(items)))]
        start = time.perf_counter()
        resplit = np.array(array_feature_cache.cached_array_features(encode, items[split], identity, root=root))
        split_s = time.perf_counter() - start
    return {
        "model": name,
        "images": len(items),
        "miss_s": seconds[0],
        "hit_s": seconds[1],
        "split_s": split_s,
        "identical": bool(np.array_equal(first, features) and np.array_equal(first[split], resplit)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 8 images in batches of 4, 1 thread, --cache")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: every core; quick: 1)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--images", type=int, default=None)
    parser.add_argument("--models", default=None, help="comma list (default: installed lite0/1/2 and resnet18)")
    parser.add_argument("--devices", default=None, help="cpu,cuda (default: cpu, and cuda when present)")
    parser.add_argument("--tolerance", type=float, default=0.999)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--cache", action="store_true", help="Also time a feature-cache miss against a hit.")
    args = parser.parse_args()
    if args.quick:  # one thread: two spinning threads stall on a shared machine (81 s against 15 s under load)
        args.batch_size, args.cache = 4, True
        args.images, args.threads = args.images or 8, args.threads or 1
    args.threads = args.threads or os.cpu_count() or 1
    torch.set_num_threads(args.threads)
    count = args.images or 256
    naive_count = max(1, count // 4)
    if args.models:
        models = args.models.split(",")
    else:
        try:
            import efficientnet_lite_pytorch  # noqa: F401

            models = [*LITES, TOOLKIT]
        except ImportError:
            print("efficientnet-lite not installed (pip install 'lifelong[models]'): measuring the toolkit ResNet only")
            models = [TOOLKIT]
    devices = args.devices.split(",") if args.devices else ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    if "cuda" not in devices:
        print("no CUDA GPU here (or not asked): CPU only")
    cpu = platform.processor() or platform.machine()
    print(f"torch {torch.__version__}, {args.threads} threads of {os.cpu_count()} CPUs ({cpu}); {count} images")
    images = photos(count)
    results = []
    for device_name in devices:
        device = torch.device(device_name)
        if device.type == "cuda":
            print(f"GPU: {torch.cuda.get_device_name(device)}")
        for name in models:
            result = measure(name, device, args, images, images[:naive_count])
            print_result(result)
            results.append(result)
    if args.cache:
        for name in models:
            hit = cache_hit(name, images, args.batch_size)
            ratio = hit["miss_s"] / max(hit["hit_s"], 1e-9)
            split_ratio = hit["miss_s"] / max(hit["split_s"], 1e-9)
            print(
                f"cache {name}: {hit['images']} images, miss {hit['miss_s']:.2f} s, hit {hit['hit_s']:.3f} s "
                f"({ratio:.0f}x), another 70% split {hit['split_s']:.3f} s ({split_ratio:.0f}x), features "
                f"identical: {hit['identical']}"
            )
            results.append({"cache": hit})
            if not hit["identical"]:
                raise SystemExit(f"FAIL: cache {name}: the features read back differ from those encoded")
    if args.json:
        args.json.write_text(json.dumps({"threads": args.threads, "images": count, "results": results}, indent=1))


if __name__ == "__main__":
    main()
