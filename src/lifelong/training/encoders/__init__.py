"""Encoders: one layer for every pretrained or pretrainable backbone the toolkit runs
(docs/protocols/clear.md#training-regimes, docs/protocols/cog.md#features, issue 23).

An `Encoder` maps images (the toolkit's [-1, 1] input convention; `Encoder.prepare` makes them from uint8 images
with the encoder's own resize and crop) to features [N, D], knows its preprocessing, feature size and identity, and
may carry an ImageNet-1K classifier head. `load_encoder` takes every spec (`specs`): registered names (built-in
EfficientNet-Lite0/1/2 and third parties' under the entry point group `lifelong.encoders`), the toolkit's own
checkpoints, TorchScript files, `hf:` models and `package.module:callable`. `finetune` trains one: frozen, full,
or with its first layer groups frozen and a learning-rate multiplier per trainable group (`param_groups`).
"""

from lifelong.training.encoders.base import Encoder, Preprocessing, square_image, weights_sha256
from lifelong.training.encoders.checkpoints import (
    FORMAT,
    EncoderCheckpoint,
    backbone_encoder,
    save_encoder,
    untrained_encoder,
)
from lifelong.training.encoders.finetune import (
    FineTune,
    LayerGroup,
    describe_groups,
    freeze_groups,
    layer_groups,
    param_groups,
)
from lifelong.training.encoders.run import check_images, encode, encode_images, encoder_flops, inference_layout
from lifelong.training.encoders.specs import (
    ENCODERS,
    EncoderNotFoundError,
    EncoderSpec,
    EncoderSpecError,
    check_encoder_spec,
    load_encoder,
    parse_encoder_spec,
)
from lifelong.training.encoders.wrap import DEFAULT_RESOLUTION, _wrap_module

__all__ = [
    "DEFAULT_RESOLUTION",
    "ENCODERS",
    "FORMAT",
    "Encoder",
    "EncoderCheckpoint",
    "EncoderSpec",
    "EncoderNotFoundError",
    "EncoderSpecError",
    "FineTune",
    "LayerGroup",
    "Preprocessing",
    "_wrap_module",
    "backbone_encoder",
    "check_encoder_spec",
    "check_images",
    "describe_groups",
    "encode",
    "encode_images",
    "inference_layout",
    "encoder_flops",
    "freeze_groups",
    "layer_groups",
    "load_encoder",
    "param_groups",
    "parse_encoder_spec",
    "save_encoder",
    "square_image",
    "untrained_encoder",
    "weights_sha256",
]
