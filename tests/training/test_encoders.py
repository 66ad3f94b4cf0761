"""Encoders: checkpoint round trip, TorchScript / import-path / supervised-checkpoint specs, encode, errors."""

import io

import numpy as np
import pytest
import torch
from torch import nn

from lifelong.training.encoders import (
    FORMAT,
    Encoder,
    EncoderCheckpoint,
    encode,
    encoder_flops,
    load_encoder,
    save_encoder,
)
from lifelong.training.flops import count_inference_flops
from lifelong.training.inputs import prepare_batch
from lifelong.training.models import make_model


def _images(n=10, side=8, channels=1, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, side, side, channels), dtype=np.uint8)


def _checkpoint(seed=0, resolution=8):
    backbone = make_model("resnet_mini", 1, in_channels=3, seed=seed).backbone
    with torch.no_grad():  # non-trivial BN statistics, so a lost buffer would show
        for m in backbone.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return EncoderCheckpoint(
        architecture="resnet_mini",
        backbone_state=backbone.state_dict(),
        resolution=resolution,
        in_channels=3,
        feature_dim=backbone.out_features,
        method="simclr",
        source="unit-test",
        seed=seed,
        epochs=2,
        train_flops=123.0,
        history=[{"epoch": 1, "loss": 1.5}],
        details={"temperature": 0.2},
    )


def test_save_load_roundtrip_gives_identical_features(tmp_path):
    ckpt = _checkpoint()
    path = save_encoder(ckpt, tmp_path / "sub" / "enc.pt")
    raw = torch.load(path, weights_only=True)
    assert raw["format"] == FORMAT and raw["train_flops"] == 123.0 and raw["history"] == [{"epoch": 1, "loss": 1.5}]
    encoder = load_encoder(str(path))
    assert (encoder.feature_dim, encoder.resolution, encoder.in_channels) == (128, 8, 3)
    images = _images(7, side=12)
    np.testing.assert_array_equal(encode(encoder, images), encode(ckpt.to_encoder(), images))
    assert load_encoder(path, resolution=6).resolution == 6
    assert EncoderCheckpoint.from_dict(raw).details == {"temperature": 0.2}
    assert not list(tmp_path.glob("sub/.*.tmp"))  # atomic write left no temp file
    with pytest.raises(IsADirectoryError, match="folder"):
        save_encoder(ckpt, tmp_path)


def test_encoder_is_frozen_and_stays_in_eval_mode():
    encoder = _checkpoint().to_encoder()
    assert not any(p.requires_grad for p in encoder.parameters())
    encoder.train()
    assert not any(m.training for m in encoder.modules())
    encoder.unfreeze().train()
    assert all(p.requires_grad for p in encoder.parameters()) and encoder.module.training
    assert "feature_dim=128" in repr(encoder.freeze())


def test_encode_is_ordered_batched_and_matches_a_direct_forward():
    encoder = _checkpoint().to_encoder()
    images = _images(11)
    features = encode(encoder, images)
    assert features.dtype == np.float32 and features.shape == (11, 128)
    np.testing.assert_allclose(encode(encoder, images, batch_size=3), features, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        direct = encoder.module(prepare_batch(images, channels=3, size=8)).numpy()
    np.testing.assert_allclose(features, direct, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(encode(encoder, images[5:6])[0], features[5], rtol=1e-5, atol=1e-6)
    assert encode(encoder, images[:0]).shape == (0, 128)
    with pytest.raises(ValueError, match="uint8"):
        encode(encoder, images.astype(np.float32))


def test_encoder_flops_is_the_forward_cost_per_image():
    encoder = _checkpoint().to_encoder()
    expected = count_inference_flops(encoder.module, torch.zeros(1, 3, 8, 8))
    assert encoder_flops(encoder, (16, 16, 1)) == encoder_flops(encoder, (16, 16)) == expected > 0
    with pytest.raises(ValueError, match="image_shape"):
        encoder_flops(encoder, (16,))


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 5, 3, padding=1)

    def forward(self, x):
        return self.conv(x).mean(dim=(2, 3))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torchscript_spec(tmp_path):
    torch.manual_seed(0)
    module = _Tiny().eval()
    path = tmp_path / "tiny.ts"
    torch.jit.save(torch.jit.script(module), str(path))
    encoder = load_encoder(str(path), resolution=8)
    assert (encoder.feature_dim, encoder.resolution, encoder.in_channels) == (5, 8, 1)
    images = _images(4)
    with torch.no_grad():
        expected = module(prepare_batch(images, channels=1, size=8)).numpy()
    np.testing.assert_allclose(encode(encoder, images), expected, rtol=1e-5, atol=1e-6)
    assert load_encoder(str(path)).resolution == 32  # the default side


def test_import_path_spec(tmp_path, monkeypatch):
    (tmp_path / "ssl_factory_mod.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())\n\n"
        "def not_pooled():\n"
        "    return nn.Conv2d(3, 4, 3)\n\n"
        "def not_a_module():\n"
        "    return 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    encoder = load_encoder("ssl_factory_mod:make", resolution=12)
    assert (encoder.feature_dim, encoder.resolution, encoder.in_channels) == (4, 12, 3)
    assert encode(encoder, _images(3, channels=3)).shape == (3, 4)
    with pytest.raises(ValueError, match=r"must return features \[N, D\].*\(2, 4, 10, 10\)"):
        load_encoder("ssl_factory_mod:not_pooled", resolution=12)
    with pytest.raises(TypeError, match="not a torch.nn.Module"):
        load_encoder("ssl_factory_mod:not_a_module")
    with pytest.raises(ValueError, match="no callable 'missing'"):
        load_encoder("ssl_factory_mod:missing")
    with pytest.raises(ValueError, match="cannot import 'no_such_module_xyz'"):
        load_encoder("no_such_module_xyz:make")


def test_supervised_pretrain_checkpoint_is_accepted(tmp_path):
    model = make_model("resnet_mini", 4, in_channels=1, seed=3)
    contents = {
        "format": "lifelong-pretrained-v1",
        "architecture": "resnet_mini",
        "backbone": {k: v for k, v in model.backbone.state_dict().items()},
        "source": "builtin:letters",
        "class_names": ["A", "B", "C", "D"],
        "pretraining_flops": 1.0,
        "seed": 3,
        "dev_error": 0.5,
        "resolution": 8,
    }
    buffer = io.BytesIO()
    torch.save(contents, buffer)
    path = tmp_path / "sup.pt"
    path.write_bytes(buffer.getvalue())
    encoder = load_encoder(str(path))
    assert (encoder.feature_dim, encoder.resolution, encoder.in_channels) == (128, 8, 1)
    assert "supervised" in encoder.description
    images = _images(5, side=8)
    model.eval()
    with torch.no_grad():
        expected = model.backbone(prepare_batch(images, channels=1, size=8)).numpy()
    np.testing.assert_allclose(encode(encoder, images), expected, rtol=1e-5, atol=1e-6)


def test_error_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found.*package.module:factory"):
        load_encoder(str(tmp_path / "missing.pt"))
    unknown = tmp_path / "unknown.pt"
    torch.save({"format": "something-else"}, unknown)
    with pytest.raises(ValueError, match="unknown format 'something-else'"):
        load_encoder(str(unknown))
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="neither a TorchScript file nor a readable checkpoint"):
        load_encoder(str(garbage))
    with pytest.raises(ValueError, match="feature_dim >= 1"):
        Encoder(nn.Identity(), feature_dim=0)


class _Views(nn.Module):
    """A user's encoder that flattens with `.view`, which fails on channels_last activations."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        return y.view(y.size(0), -1)


def test_a_users_encoder_keeps_its_layout_when_channels_last_is_on():
    from lifelong.training.devices import Accelerator, accelerator_scope
    from lifelong.training.encoders import _wrap_module

    nhwc = Accelerator(device="cpu", channels_last=True)
    module = _Views()
    with accelerator_scope(nhwc):
        encoder = _wrap_module(module, resolution=8, in_channels=3, description="views")
        assert module.conv.weight.is_contiguous()  # not converted to NHWC
        nhwc.place(nn.Sequential(encoder, nn.Linear(encoder.feature_dim, 2)))
        assert module.conv.weight.is_contiguous()  # nor inside a model that holds it
        features = encode(encoder, _images(3, channels=3))  # channels_last batches: made contiguous for it
    assert features.shape == (3, encoder.feature_dim) == (3, 4 * 6 * 6)
