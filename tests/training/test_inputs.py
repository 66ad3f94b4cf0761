"""Input conversion and seeded batch augmentation."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lifelong.training import augment, center_resize, crop_and_resize, prepare_batch, sample_crop_boxes, to_input_tensor


def _images(n=6, h=12, w=12, c=3, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, h, w, c), dtype=np.uint8)


def test_to_input_tensor_scales_and_replicates_channels():
    x = to_input_tensor(np.array([[[[0], [255]]]], dtype=np.uint8))
    assert x.shape == (1, 3, 1, 2) and x.dtype == torch.float32
    assert torch.equal(x[0, :, 0, 0], torch.full((3,), -1.0))
    assert torch.equal(x[0, :, 0, 1], torch.full((3,), 1.0))
    assert to_input_tensor(_images(c=1), channels=1).shape == (6, 1, 12, 12)
    with pytest.raises(ValueError, match="expects 1"):
        to_input_tensor(_images(c=3), channels=1)
    with pytest.raises(ValueError, match="uint8"):
        to_input_tensor(np.zeros((2, 4, 4, 3), dtype=np.float32))


def test_augment_is_deterministic_under_a_seed():
    x = to_input_tensor(_images())
    a = augment(x, torch.Generator().manual_seed(3), size=16)
    b = augment(x, torch.Generator().manual_seed(3), size=16)
    c = augment(x, torch.Generator().manual_seed(4), size=16)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
    assert a.shape == (6, 3, 16, 16)
    assert a.min() >= -1.0 and a.max() <= 1.0
    assert augment(x, torch.Generator().manual_seed(0)).shape == x.shape  # size None keeps the input size


def test_crop_boxes_lie_inside_the_image_with_allowed_area():
    boxes = sample_crop_boxes(500, 20, 30, torch.Generator().manual_seed(0))
    top, left, h, w = boxes.unbind(1)
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + h <= 20 + 1e-9).all() and (left + w <= 30 + 1e-9).all()
    frac = h * w / (20 * 30)
    assert (frac >= 0.08 - 1e-9).all() and (frac <= 1 + 1e-9).all()
    ratio = w / h
    assert (ratio >= 0.75 - 1e-9).all() and (ratio <= 4 / 3 + 1e-9).all()


def test_full_crop_is_identity_and_flip_mirrors():
    x = to_input_tensor(_images(n=64, h=5, w=5))
    same = augment(x, torch.Generator().manual_seed(0), area=(1, 1), ratio=(1, 1), flip=False)
    assert torch.allclose(same, x, atol=1e-5)
    flipped = augment(x, torch.Generator().manual_seed(0), area=(1, 1), ratio=(1, 1), flip=True)
    mirrored = torch.tensor([torch.allclose(f, i.flip(-1), atol=1e-5) for f, i in zip(flipped, x, strict=True)])
    unchanged = torch.tensor([torch.allclose(f, i, atol=1e-5) for f, i in zip(flipped, x, strict=True)])
    assert (mirrored | unchanged).all() and mirrored.any() and unchanged.any()
    box = torch.tensor([[0.0, 0.0, 5.0, 5.0]])
    assert torch.allclose(crop_and_resize(x[:1], box, 5, torch.tensor([True])), x[:1].flip(-1), atol=1e-5)


def test_center_resize_and_prepare_batch():
    x = to_input_tensor(_images(h=10, w=14))
    y = center_resize(x, 8)
    assert y.shape == (6, 3, 8, 8)
    assert torch.equal(center_resize(x, 10), x[:, :, :, 2:12])
    assert center_resize(x, None) is x
    images = _images(c=1)
    assert prepare_batch(images, size=8).shape == (6, 3, 8, 8)
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    assert torch.equal(prepare_batch(images, size=8, generator=g1), prepare_batch(images, size=8, generator=g2))


def test_crop_and_resize_equals_affine_grid_sampling():
    """The separable grid equals torch's affine_grid for the same scale+shift (and mirror) transform."""
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(6, 3, 20, 24, generator=gen)
    boxes = sample_crop_boxes(6, 20, 24, gen)
    flip = torch.tensor([True, False, True, False, False, True])
    top, left, h, w = boxes.to(torch.float64).unbind(1)
    theta = torch.zeros(6, 2, 3, dtype=torch.float64)
    theta[:, 0, 0] = (1 - 2 * flip.double()) * w / 24
    theta[:, 0, 2] = 2 * (left + w / 2) / 24 - 1
    theta[:, 1, 1] = h / 20
    theta[:, 1, 2] = 2 * (top + h / 2) / 20 - 1
    grid = F.affine_grid(theta, [6, 3, 16, 16], align_corners=False).float()
    expected = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    assert torch.allclose(crop_and_resize(x, boxes, 16, flip), expected, atol=1e-5)
