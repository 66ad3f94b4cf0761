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


def test_file_extraction_runs_channels_last_and_matches_nchw(tmp_path):
    from PIL import Image

    from lifelong.training.devices import Accelerator, accelerator_scope
    from lifelong.training.features import extract_features

    path = save_encoder(untrained_encoder("resnet_mini", resolution=20, seed=1), tmp_path / "enc.pt")
    rng = np.random.default_rng(1)
    files = []
    for i in range(6):
        files.append(str(tmp_path / f"{i}.png"))
        Image.fromarray(rng.integers(0, 256, (24, 30, 3), dtype=np.uint8)).save(files[-1])
    seen = []
    encoder = load_encoder(path)
    conv = next(m for m in encoder.modules() if isinstance(m, torch.nn.Conv2d))
    conv.register_forward_pre_hook(lambda module, args: seen.append(args[0].is_contiguous()))
    options = {"resolution": 20, "batch_size": 4, "device": "cpu", "workers": 1}
    nhwc = extract_features(encoder, files, [0] * 6, tmp_path / "a", **options).features
    assert seen and not any(seen)  # the batches reached the network in channels_last
    assert conv.weight.is_contiguous()  # NCHW again afterwards
    seen.clear()
    with accelerator_scope(Accelerator(device="cpu", channels_last=False)):
        nchw = extract_features(encoder, files, [0] * 6, tmp_path / "b", **options).features
    assert seen and all(seen)
    assert np.allclose(np.asarray(nhwc, np.float32), np.asarray(nchw, np.float32), atol=2e-3)
