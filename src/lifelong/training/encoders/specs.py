"""One parser for every encoder spec a command or learner takes (`--encoder`, `-o encoder=`, `-o gate_encoder=`):

- a registered name (`efficientnet-lite0`; entry point group `lifelong.encoders`, built-ins and third parties alike),
- a file: the toolkit's checkpoints (`lifelong pretrain`, `pretrain-ssl`, `cog pretrain`) or a TorchScript file,
- `torchscript:FILE`, `hf:PATH_OR_ID` (Hugging Face), `package.module:callable`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lifelong.core.errors import UsageError
from lifelong.core.plugins import PluginError, Registry
from lifelong.core.suggest import did_you_mean
from lifelong.training.checkpoints import format_tag, read_torch_file
from lifelong.training.encoders.base import Encoder
from lifelong.training.encoders.checkpoints import FORMAT, EncoderCheckpoint, backbone_encoder
from lifelong.training.encoders.wrap import IMPORT_PATH, from_import_path, is_torchscript, load_torchscript
from lifelong.training.pretrain import FORMAT as PRETRAINED_FORMAT
from lifelong.training.pretrain import load_pretrained

ENCODERS = Registry("lifelong.encoders", "encoder", "lifelong models list")
FORMS = (
    "a model name (`lifelong models list`), a checkpoint file (`lifelong pretrain`, `pretrain-ssl`, "
    "`cog pretrain`), torchscript:FILE, hf:FOLDER_OR_ID or package.module:factory"
)


class EncoderSpecError(UsageError, ValueError):
    """A spec that names no encoder: unknown name, missing file, or a file that is not an encoder."""


class EncoderNotFoundError(EncoderSpecError, FileNotFoundError):
    """A spec naming nothing that exists (no such name, no such file)."""


@dataclass(frozen=True)
class EncoderSpec:
    """A parsed spec: `kind` is one of "registered", "file", "torchscript", "hf", "import path"."""

    kind: str
    target: str


def parse_encoder_spec(spec: str | os.PathLike) -> EncoderSpec:
    """The kind of `spec` and what it points at; EncoderSpecError naming the forms (and a near name) otherwise.

    Checks only what is cheap (names, file existence); loading is `load_encoder`'s.
    """
    text = str(spec)
    if text.startswith("torchscript:"):
        target = text.removeprefix("torchscript:")
        if not Path(target).is_file():
            raise EncoderNotFoundError(f"encoder {text!r}: TorchScript file {target!r} not found")
        return EncoderSpec("torchscript", target)
    if text.startswith("hf:"):
        target = text.removeprefix("hf:")
        if not target:
            raise EncoderSpecError("encoder 'hf:' needs a folder or a hub id after the colon, e.g. hf:models/vit")
        return EncoderSpec("hf", target)
    if Path(text).is_file():
        return EncoderSpec("file", text)
    names = ENCODERS.names()
    if text in names:
        return EncoderSpec("registered", text)
    if not Path(text).exists() and IMPORT_PATH.match(text):
        return EncoderSpec("import path", text)
    hint = did_you_mean(text, names)
    looks_like_file = os.sep in text or text.endswith((".pt", ".pth", ".ckpt"))
    known = f"known models: {', '.join(names) or 'none'}"
    if looks_like_file and not hint:
        raise EncoderNotFoundError(f"encoder file {text!r} not found; give {FORMS} ({known})")
    raise EncoderNotFoundError(f"unknown encoder {text!r}{hint}; {known}; or give {FORMS}")


def check_encoder_spec(spec: str | os.PathLike) -> str:
    """The kind of a usable spec ("registered", "file", "torchscript", "hf", "import path"); EncoderSpecError
    (a ValueError; EncoderNotFoundError, also a FileNotFoundError, when nothing by that name exists) otherwise."""
    return parse_encoder_spec(spec).kind


def _load_file(path: Path, *, resolution: int | None, in_channels: int | None) -> Encoder:
    text = str(path)
    if is_torchscript(path):
        return load_torchscript(path, resolution=resolution, in_channels=in_channels)
    try:
        why = f"{text!r} is neither a TorchScript file nor a readable checkpoint ({{cause}})"
        contents = read_torch_file(path, why)
    except ValueError as exc:
        raise EncoderSpecError(f"{exc}; an encoder is {FORMS}") from exc
    found = format_tag(contents)
    if found == FORMAT:
        return EncoderCheckpoint.from_dict(contents).to_encoder(resolution=resolution)
    if found == PRETRAINED_FORMAT:
        ckpt = load_pretrained(path)
        channels = int(ckpt.backbone["stem.0.weight"].shape[1])
        side = ckpt.details.get("resolution") if resolution is None else resolution
        return backbone_encoder(
            ckpt.architecture,
            ckpt.backbone,
            in_channels=channels,
            resolution=None if side is None else int(side),
            description=f"supervised {ckpt.architecture} on {ckpt.source}",
        )
    raise EncoderSpecError(
        f"{text!r} is not an encoder: unknown format {found!r}; expected {FORMAT!r} (`lifelong pretrain-ssl`, "
        f"`lifelong cog pretrain`), {PRETRAINED_FORMAT!r} (`lifelong pretrain`) or a TorchScript file (torch.jit.save)"
    )


def load_registered(name: str) -> Encoder:
    """The encoder a package registers as `name` under `lifelong.encoders` (a callable returning an Encoder)."""
    try:
        factory = ENCODERS.load(name)
    except PluginError as exc:
        raise EncoderSpecError(str(exc)) from exc
    encoder = factory()
    if not isinstance(encoder, Encoder):
        raise EncoderSpecError(
            f"encoder {name!r} is registered as a callable that returned a {type(encoder).__name__}, not an Encoder "
            "(lifelong.training.encoders.Encoder)"
        )
    return encoder


def load_encoder(spec: str | os.PathLike, *, resolution: int | None = None, in_channels: int | None = None) -> Encoder:
    """A frozen Encoder from any spec (see the module docstring), on the current accelerator.

    `resolution` overrides the encoder's input side (its crop and normalisation stay); for TorchScript and
    factories of bare modules it is the input side (default 32), and `in_channels` (default: the first Conv2d's,
    else 3) the input channels.
    """
    parsed = parse_encoder_spec(spec)
    if parsed.kind == "registered":
        encoder = load_registered(parsed.target)
        if resolution is not None:
            encoder.resolution = resolution
        return encoder
    if parsed.kind == "hf":
        from lifelong.training.encoders.hf import load_hf

        return load_hf(parsed.target, resolution=resolution)
    if parsed.kind == "import path":
        return from_import_path(parsed.target, resolution=resolution, in_channels=in_channels)
    if parsed.kind == "torchscript":
        try:
            return load_torchscript(Path(parsed.target), resolution=resolution, in_channels=in_channels)
        except ValueError as exc:
            if "not a TorchScript" in str(exc):
                raise EncoderSpecError(str(exc)) from exc
            raise
    return _load_file(Path(parsed.target), resolution=resolution, in_channels=in_channels)
