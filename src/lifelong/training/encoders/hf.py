"""`hf:PATH_OR_ID` encoders: a Hugging Face vision model (transformers AutoModel) with the preprocessing of its
AutoImageProcessor. A local folder (save_pretrained) loads offline; a hub id loads where a network exists."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lifelong.training.devices import current_accelerator
from lifelong.training.encoders.base import Encoder, Preprocessing

INSTALL = "pip install 'lifelong[models]'"


class HFFeatures(nn.Module):
    """pixel_values [N, C, R, R] -> [N, D]: the model's pooled output, else its first token / mean over space."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(pixel_values=x)
        pooled = getattr(out, "pooler_output", None)
        if pooled is not None:
            return torch.flatten(pooled, 1)
        hidden = out.last_hidden_state
        return hidden[:, 0] if hidden.ndim == 3 else hidden.mean(dim=(2, 3))


def _side(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    get = value.get if isinstance(value, dict) else lambda k: getattr(value, k, None)
    for key in ("shortest_edge", "height"):
        if get(key):
            return int(get(key))
    return None


def hf_preprocessing(processor: Any, spec: str) -> Preprocessing:
    """The processor's input side, centre crop and mean/std as a Preprocessing (pixels rescaled to [0, 1])."""
    size = _side(getattr(processor, "size", None))
    crop = _side(getattr(processor, "crop_size", None)) if getattr(processor, "do_center_crop", False) else None
    resolution = crop or size
    if resolution is None:
        raise ValueError(f"the image processor of {spec!r} states no input size (size / crop_size)")
    fraction = min(1.0, crop / size) if crop and size else 1.0
    mean = tuple(float(v) for v in (getattr(processor, "image_mean", None) or (0.5, 0.5, 0.5)))
    std = tuple(float(v) for v in (getattr(processor, "image_std", None) or (0.5, 0.5, 0.5)))
    if not getattr(processor, "do_normalize", True):
        mean, std = (0.0,) * len(mean), (1.0,) * len(std)
    return Preprocessing(resolution=resolution, crop_fraction=fraction, mean=mean, std=std)


def load_hf(target: str, *, resolution: int | None = None) -> Encoder:
    """A frozen Encoder from a Hugging Face model folder or hub id (`target`, the part after `hf:`)."""
    spec = f"hf:{target}"
    try:
        import transformers
    except ImportError as exc:
        raise ImportError(f"{spec} needs transformers: install it with {INSTALL}") from exc
    local = Path(target).is_dir()
    if not local and (target.startswith((".", "/", "~")) or Path(target).exists()):
        raise FileNotFoundError(f"{spec}: {target!r} is not a folder holding a saved Hugging Face model")
    transformers.logging.set_verbosity_error()
    logging.getLogger("transformers").setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = transformers.AutoModel.from_pretrained(target, local_files_only=local)
            processor = transformers.AutoImageProcessor.from_pretrained(target, local_files_only=local)
    except Exception as exc:  # transformers raises OSError / ValueError / KeyError for a folder that is not a model
        where = "the folder" if local else "the hub id (needs a network)"
        raise ValueError(
            f"{spec} is not a loadable vision model ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
            f"{where} must hold config.json, the weights and preprocessor_config.json (save_pretrained of the model "
            "and its image processor)"
        ) from exc
    pre = hf_preprocessing(processor, spec)
    if resolution is not None:
        pre = Preprocessing(resolution, pre.crop_fraction, pre.mean, pre.std)
    features = HFFeatures(model.eval())
    channels = int(getattr(model.config, "num_channels", 3))
    side = int(pre.resolution or 224)
    with torch.no_grad():
        dim = int(features(torch.zeros(1, channels, side, side)).shape[1])
    encoder = Encoder(
        features,
        feature_dim=dim,
        in_channels=channels,
        description=f"{spec} ({type(model).__name__})",
        preprocessing=pre,
        source="Hugging Face " + ("folder" if local else "hub"),
        licence="see the model card",
    )
    return current_accelerator().place(encoder)
