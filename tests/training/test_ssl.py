"""SimCLR pretraining: NT-Xent against a brute-force loop, views, determinism, resume, FLOPs, errors."""

import math

import numpy as np
import pytest
import torch

from lifelong.training.encoders import encode
from lifelong.training.ssl import STATE_FILE, ViewAugmentation, nt_xent, pretrain_simclr

TINY = dict(resolution=8, epochs=2, batch_size=8, projection_dim=16)


def _images(n=24, side=8, channels=1, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, side, side, channels), dtype=np.uint8)


def _brute_force_nt_xent(z1, z2, t):
    z = torch.cat([z1, z2]).double()
    n = len(z)
    b = n // 2
    total = 0.0
    for i in range(n):
        positive = (i + b) % n
        cos = [float(torch.dot(z[i], z[k]) / (z[i].norm() * z[k].norm())) for k in range(n)]
        denominator = sum(math.exp(cos[k] / t) for k in range(n) if k != i)
        total += -math.log(math.exp(cos[positive] / t) / denominator)
    return total / n


@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0])
def test_nt_xent_matches_a_per_pair_computation(temperature):
    gen = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(5, 7, generator=gen), torch.randn(5, 7, generator=gen)
    assert nt_xent(z1, z2, temperature).item() == pytest.approx(_brute_force_nt_xent(z1, z2, temperature), rel=1e-5)
    aligned = nt_xent(z1, 3 * z1, 0.1).item()  # identical directions: the positive dominates
    assert aligned < nt_xent(z1, z2, 0.1).item()
    with pytest.raises(ValueError, match=r"\[B, P\]"):
        nt_xent(z1, z2[:4], 0.1)


def test_views_are_seeded_and_options_checked():
    from lifelong.training.inputs import to_input_tensor

    x = to_input_tensor(_images(6, channels=3), 3)
    aug = ViewAugmentation(invert_p=0.5, flip=True)
    a = aug(x, torch.Generator().manual_seed(1), 5)
    b = aug(x, torch.Generator().manual_seed(1), 5)
    assert a.shape == (6, 3, 5, 5) and torch.equal(a, b) and a.abs().max() <= 1.0
    assert not torch.equal(a, aug(x, torch.Generator().manual_seed(2), 5))
    assert ViewAugmentation.coerce({"noise": 0.0}).noise == 0.0
    with pytest.raises(ValueError, match="unknown augmentation options \\['blur'\\]"):
        ViewAugmentation.coerce({"blur": 1.0})
    with pytest.raises(ValueError, match="probabilities"):
        ViewAugmentation(invert_p=2.0)


def test_pretrain_is_deterministic_and_counts_flops():
    images = _images()
    seen = []
    a = pretrain_simclr(images, seed=1, progress=lambda e, n, loss: seen.append((e, n, loss)), **TINY)
    b = pretrain_simclr(images, seed=1, **TINY)
    c = pretrain_simclr(images, seed=2, **TINY)
    for key, value in a.backbone_state.items():
        assert torch.equal(value, b.backbone_state[key]), key
    assert any(not torch.equal(v, c.backbone_state[k]) for k, v in a.backbone_state.items())
    assert [(e, n) for e, n, _ in seen] == [(1, 2), (2, 2)] and all(np.isfinite([x for *_, x in seen]))
    assert [h["epoch"] for h in a.history] == [1, 2]
    assert a.details["steps"] == 2 * (24 // 8) and a.train_flops == a.details["flops_per_step"] * 6 > 0
    assert (a.method, a.resolution, a.in_channels, a.feature_dim, a.epochs) == ("simclr", 8, 3, 128, 2)
    features = encode(a.to_encoder(), _images(5, side=12, seed=9))  # other sizes are centre-resized
    assert features.shape == (5, 128) and np.isfinite(features).all()


def test_resume_after_an_interruption_equals_an_uninterrupted_run(tmp_path):
    images = _images()
    options = dict(TINY, epochs=3, seed=4)
    straight = pretrain_simclr(images, **options)

    def stop_after_two(epoch, epochs, loss):
        if epoch == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pretrain_simclr(images, workdir=tmp_path, progress=stop_after_two, **options)
    assert (tmp_path / STATE_FILE).is_file()
    seen = []
    resumed = pretrain_simclr(images, workdir=tmp_path, progress=lambda e, n, loss: seen.append(e), **options)
    assert seen == [3]  # only the missing epoch ran
    for key, value in straight.backbone_state.items():
        assert torch.equal(value, resumed.backbone_state[key]), key
    assert resumed.history == straight.history and resumed.train_flops == straight.train_flops
    again = pretrain_simclr(images, workdir=tmp_path, progress=lambda e, n, loss: seen.append(e), **options)
    assert seen == [3] and all(torch.equal(v, again.backbone_state[k]) for k, v in resumed.backbone_state.items())
    with pytest.raises(ValueError, match=r"another run \(differs in \['lr'\]\)"):
        pretrain_simclr(images, workdir=tmp_path, **dict(options, lr=0.1))


def test_input_errors():
    with pytest.raises(ValueError, match="uint8"):
        pretrain_simclr(_images().astype(np.float32), **TINY)
    with pytest.raises(ValueError, match="uint8"):
        pretrain_simclr(_images()[..., 0], **TINY)
    with pytest.raises(ValueError, match="at least 2 images"):
        pretrain_simclr(_images(1), **TINY)
    with pytest.raises(ValueError, match="batch_size >= 2"):
        pretrain_simclr(_images(), **dict(TINY, batch_size=1))
    with pytest.raises(ValueError, match="unknown architecture"):
        pretrain_simclr(_images(), architecture="vgg", **TINY)
