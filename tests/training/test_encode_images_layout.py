"""Batched extraction (`encode_images`, channels_last on the CPU) gives the per-image loop's features and leaves
the encoder's layout as it was."""

import numpy as np
import torch

from lifelong.training.encoders import encode_images, load_encoder, save_encoder, untrained_encoder


def test_batched_channels_last_features_match_the_per_image_loop(tmp_path):
    path = save_encoder(untrained_encoder("resnet_mini", resolution=20, seed=1), tmp_path / "enc.pt")
    encoder = load_encoder(path)
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, size=(int(h), int(w), 3), dtype=np.uint8) for h, w in rng.integers(20, 60, (9, 2))]
    with torch.no_grad():
        naive = np.concatenate([encoder(encoder.prepare([image])).numpy() for image in images])
    batched = encode_images(encoder, images, batch_size=4)
    assert batched.shape == (9, encoder.feature_dim)
    assert np.allclose(batched, naive, rtol=1e-4, atol=1e-5)
    conv = next(m for m in encoder.modules() if isinstance(m, torch.nn.Conv2d))
    assert conv.weight.is_contiguous()  # NCHW again afterwards
