"""CLEAR's linear regime (-o encoder=SPEC) prepares images with an encoder's own crop when it declares one."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from lifelong.learners.continual_methods import ERLearner
from lifelong.training.encoders import Encoder, Preprocessing, encode_images


def _encoder(crop: float) -> Encoder:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 12, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    pre = Preprocessing(resolution=8, crop_fraction=crop, mean=(0.4, 0.4, 0.4), std=(0.3, 0.3, 0.3))
    return Encoder(net, feature_dim=12, in_channels=3, preprocessing=pre, description=f"crop {crop}")


def test_a_cropping_encoder_gets_its_own_preparation_and_its_own_cache_entry(monkeypatch, tmp_path):
    from lifelong.training import encoders

    monkeypatch.setenv("LIFELONG_CACHE", str(tmp_path))
    monkeypatch.setattr(encoders, "check_encoder_spec", lambda spec: "file")
    images = np.random.default_rng(0).integers(0, 256, size=(10, 24, 20, 3), dtype=np.uint8)
    cropping = _encoder(0.5)
    got = ERLearner(encoder="toy")._cached_encode(cropping, images)
    assert np.allclose(got, encode_images(cropping, list(images)), atol=1e-5)  # crop, bicubic, its normalisation
    plain = ERLearner(encoder="toy")._cached_encode(_encoder(1.0), images)  # no crop: centre-resized as before
    assert np.allclose(plain, encoders.encode(_encoder(1.0), images), atol=1e-5)
    assert not np.allclose(plain, got, atol=1e-3)
    assert len(list((tmp_path / "features").iterdir())) == 2
