"""The shared feature cache: keyed by encoder identity (weights, preprocessing, forward precision) and inputs,
reused without running the encoder, resumable, and a clear error when a cache and a model disagree on size."""

from __future__ import annotations

import shutil
import sys
import textwrap

import numpy as np
import pytest
import torch
from PIL import Image

from lifelong.data.feature_files import MANIFEST_FILE, FeatureFileError, FeatureSizeError, load_features
from lifelong.training.array_feature_cache import cached_array_features
from lifelong.training.devices import Accelerator, accelerator_scope
from lifelong.training.encoders import load_encoder, save_encoder, untrained_encoder
from lifelong.training.feature_cache import (
    cache_key,
    cache_root,
    check_feature_size,
    encoder_identity,
    forward_precision,
)
from lifelong.training.features import cached_features, extract_features

FACTORY = textwrap.dedent(
    """
    import torch
    from torch import nn

    CALLS = []  # images seen by every forward pass of every encoder this module made

    class Counting(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.net = nn.Sequential(
                nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, width, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()
            )

        def forward(self, x):
            CALLS.append(len(x))
            return self.net(x)

    def make(seed=0, width=5):
        torch.manual_seed(seed)
        return Counting(width)

    def other():
        return make(seed=1)

    def wider():
        return make(width=7)
    """
)


@pytest.fixture
def factory(tmp_path, monkeypatch):
    """The module `counting_encoder` (factories make, other, wider) with its CALLS list emptied."""
    folder = tmp_path / "encoders"
    folder.mkdir()
    (folder / "counting_encoder.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(folder))
    sys.modules.pop("counting_encoder", None)
    import counting_encoder

    yield counting_encoder
    sys.modules.pop("counting_encoder", None)


@pytest.fixture
def images(tmp_path):
    """(files, labels): 10 small RGB photos-like PNGs (smooth gradients plus noise) of 2 classes."""
    rng = np.random.default_rng(0)
    files, labels = [], []
    for i in range(10):
        ramp = np.linspace(0, 255, 20)[None, :, None] * rng.uniform(0.3, 1.0, 3)
        pixels = np.clip(ramp + rng.normal(0, 20, (16, 20, 3)), 0, 255).astype(np.uint8)
        path = tmp_path / "images" / f"{i}.png"
        path.parent.mkdir(exist_ok=True)
        Image.fromarray(pixels).save(path)
        files.append(str(path))
        labels.append(i % 2)
    return files, np.array(labels)


def _loaded(spec, factory):
    """The encoder of `spec` loaded as a run would (wrapping a factory runs one dummy batch), CALLS emptied after."""
    encoder = load_encoder(spec, resolution=12)
    factory.CALLS.clear()
    return encoder


def _cached(spec, images, root, **options):
    files, labels = images
    options = {"resolution": 12, "batch_size": 4, "device": "cpu", "workers": 1} | options
    return cached_features(spec, files, labels, root=root, **options)


def _folders(root):
    return sorted(p.name for p in root.iterdir())


def test_same_encoder_and_inputs_hit_the_cache_without_a_forward_pass(tmp_path, factory, images):
    root = tmp_path / "cache"
    first = _cached(_loaded("counting_encoder:make", factory), images, root)
    assert factory.CALLS == [4, 4, 2] and first.features.shape == (10, 5)
    second = _cached(_loaded("counting_encoder:make", factory), images, root)  # a new run loads it again
    assert factory.CALLS == []  # no forward pass
    assert np.array_equal(second.features, first.features)
    assert isinstance(second.features, np.memmap) and not second.features.flags.writeable
    assert len(_folders(root)) == 1 and second.manifest["precision"] == "fp32"


def test_the_same_weights_under_another_path_hit_the_same_folder(tmp_path, images):
    root = tmp_path / "cache"
    first = save_encoder(untrained_encoder("resnet_mini", seed=3), tmp_path / "a" / "enc.pt")
    second = tmp_path / "b" / "copy.pt"
    second.parent.mkdir()
    shutil.copy(first, second)
    one = _cached(first, images, root)
    two = _cached(second, images, root)
    assert len(_folders(root)) == 1
    assert two.manifest["encoder"]["spec"] == str(first)  # the folder keeps who made it; the key ignores paths
    assert np.array_equal(one.features, two.features)
    _cached(save_encoder(untrained_encoder("resnet_mini", seed=4), tmp_path / "c.pt"), images, root)
    assert len(_folders(root)) == 2  # other weights of the same architecture


def test_keys_differ_across_precision_and_weights(tmp_path, factory, images):
    root = tmp_path / "cache"
    fp32 = _cached("counting_encoder:make", images, root)
    with accelerator_scope(Accelerator(device="cpu", precision="bf16")):
        assert forward_precision() == "bf16"
        bf16 = _cached("counting_encoder:make", images, root)
    assert len(_folders(root)) == 2  # bf16 features never land in (or are read from) the fp32 folder
    assert (fp32.manifest["precision"], bf16.manifest["precision"]) == ("fp32", "bf16")
    assert not np.array_equal(fp32.features, bf16.features)  # bf16 autocast really ran
    np.testing.assert_allclose(fp32.features, bf16.features, atol=0.05)
    _cached("counting_encoder:other", images, root)  # other weights, same architecture
    assert len(_folders(root)) == 3
    _cached("counting_encoder:make", images, root, resolution=10)  # other preprocessing
    assert len(_folders(root)) == 4
    files, labels = images
    _cached("counting_encoder:make", (files[:-1], labels[:-1]), root)  # other inputs
    assert len(_folders(root)) == 5


def test_identity_key_depends_on_precision_weights_and_preprocessing(factory):
    enc = load_encoder("counting_encoder:make")
    base = {"resolution": 12, "transform": "t"}
    key = cache_key(encoder_identity(enc, precision="fp32", preprocessing=base), "inputs")
    again = load_encoder("counting_encoder:make")
    assert key == cache_key(encoder_identity(again, precision="fp32", preprocessing=base), "inputs")
    assert key != cache_key(encoder_identity(enc, precision="bf16", preprocessing=base), "inputs")
    assert key != cache_key(encoder_identity(enc, precision="tf32", preprocessing=base), "inputs")
    assert key != cache_key(encoder_identity(enc, precision="fp32", preprocessing=base | {"resolution": 13}), "inputs")
    other = load_encoder("counting_encoder:other")
    assert key != cache_key(encoder_identity(other, precision="fp32", preprocessing=base), "inputs")
    assert key != cache_key(encoder_identity(enc, precision="fp32", preprocessing=base), "other inputs")
    with pytest.raises(ValueError, match="precision must be one of"):
        encoder_identity(enc, precision="fp16", preprocessing=base)


def test_an_encoder_that_states_its_identity_is_taken_at_its_word(factory):
    enc = load_encoder("counting_encoder:make")
    enc.identity = lambda precision: {"weights_sha256": "w1", "precision": precision, "description": "/a/path"}
    identity = encoder_identity(enc, precision="bf16", preprocessing={"resolution": 12})
    assert identity["encoder"] == {"weights_sha256": "w1", "precision": "bf16"}  # the path is not in the key
    assert "weights_sha256" not in identity  # not hashed twice


def test_an_interrupted_extraction_resumes_to_identical_features(tmp_path, factory, images):
    clean = _cached("counting_encoder:make", images, tmp_path / "clean")
    root = tmp_path / "cache"
    encoder = _loaded("counting_encoder:make", factory)

    def stop_after_first_batch(advance=0, **_):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _cached(encoder, images, root, progress=stop_after_first_batch)
    assert factory.CALLS == [4]
    (folder,) = (root / name for name in _folders(root))
    with pytest.raises(FeatureFileError, match="unfinished"):
        load_features(folder)
    resumed = _cached(encoder, images, root)
    assert factory.CALLS == [4, 4, 2]  # the first batch was not encoded again
    assert np.array_equal(resumed.features, clean.features)
    assert np.array_equal(resumed.labels, clean.labels)
    factory.CALLS.clear()
    again = _cached(encoder, images, root, overwrite=True)  # --overwrite: from scratch
    assert factory.CALLS == [4, 4, 2] and np.array_equal(again.features, clean.features)


def test_a_model_whose_feature_size_disagrees_with_a_cache_is_a_clear_error(tmp_path, factory, images):
    files, labels = images
    out = tmp_path / "features"
    options = {"resolution": 12, "device": "cpu", "workers": 1}
    extract_features("counting_encoder:make", files, labels, out, **options)
    with pytest.raises(FeatureSizeError) as error:
        extract_features("counting_encoder:wider", files, labels, out, **options)
    message = str(error.value)
    assert "size 5" in message and "size 7" in message and str(out) in message
    assert "Delete" in message and "--overwrite" in message
    with pytest.raises(FeatureSizeError, match=r"size 5, but the probe gives features of size 3"):
        check_feature_size(out, 3, encoder="the probe")
    check_feature_size(out, 5)  # agreeing sizes: no error
    check_feature_size(tmp_path / "empty", 3)  # no cache yet: nothing to disagree with
    redone = extract_features("counting_encoder:wider", files, labels, out, resume=False, **options)
    assert redone.features.shape == (10, 7)
    assert (out / MANIFEST_FILE).is_file()


def test_array_features_are_cached_per_image_by_identity(tmp_path, factory):
    root = tmp_path / "cache"
    items = np.random.default_rng(1).integers(0, 256, (9, 12, 12, 3), dtype=np.uint8)
    calls = []

    def encode(block):
        calls.append(len(block))
        return block.reshape(len(block), -1)[:, :4].astype(np.float32)

    expected = encode(items)
    calls.clear()
    identity = {"weights_sha256": "w", "precision": "fp32", "feature_dim": 4}
    first = cached_array_features(encode, items, identity, root=root, batch_size=4)
    assert calls == [4, 4, 1] and np.array_equal(first, expected) and not first.flags.writeable
    # another split, order or subset of the same images (a new seed's iid split) encodes nothing
    order = np.array([8, 2, 2, 5, 0])
    again = cached_array_features(encode, items[order], identity, root=root, batch_size=4)
    assert calls == [4, 4, 1] and np.array_equal(again, expected[order])
    # new images among known ones: only the new ones (each once) are encoded
    fresh = np.random.default_rng(2).integers(0, 256, (3, 12, 12, 3), dtype=np.uint8)
    mixed = np.concatenate([fresh[:1], items[:2], fresh, fresh[:1]])
    out = cached_array_features(encode, mixed, identity, root=root, batch_size=4)
    assert calls == [4, 4, 1, 3] and np.array_equal(out, encode(mixed))
    calls.clear()
    # the same bytes under another shape are another image; another precision is another folder
    cached_array_features(encode, items.reshape(9, 12, 36, 1), identity, root=root, batch_size=4)
    cached_array_features(encode, items, identity | {"precision": "bf16"}, root=root, batch_size=4)
    assert calls == [4, 4, 1] * 2 and len(_folders(root)) == 2
    with pytest.raises(FeatureSizeError, match=r"\(4, 4\) where \(4, 5\) was expected"):
        cached_array_features(encode, items, identity | {"feature_dim": 5}, root=root, batch_size=4)


def test_array_features_interrupted_mid_miss_resume_from_the_committed_blocks(tmp_path):
    root = tmp_path / "cache"
    items = np.random.default_rng(3).integers(0, 256, (10, 8, 8, 3), dtype=np.uint8)
    calls = []

    def encode(block):
        calls.append(len(block))
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed while encoding the second block
        return block.reshape(len(block), -1)[:, :3].astype(np.float32)

    identity = {"weights_sha256": "w", "precision": "fp32", "feature_dim": 3}
    with pytest.raises(KeyboardInterrupt):
        cached_array_features(encode, items, identity, root=root, batch_size=4)
    out = cached_array_features(encode, items, identity, root=root, batch_size=4)
    assert calls == [4, 4, 4, 2]  # the first block was kept; the rest encoded on the second call
    assert np.array_equal(out, items.reshape(10, -1)[:, :3].astype(np.float32))


def test_cache_root_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFELONG_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c" / "features"
    assert cache_root(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.delenv("LIFELONG_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "lifelong" / "features"


def test_an_encoders_own_centre_crop_prepares_the_files_and_keys_the_cache(tmp_path, factory, images):
    from lifelong.data.images import decode_image
    from lifelong.training.encoders import Encoder, Preprocessing, square_image
    from lifelong.training.inputs import prepare_batch

    files, labels = images
    module = factory.make()
    whole = Encoder(module, feature_dim=5, preprocessing=Preprocessing(12))
    cropped = Encoder(module, feature_dim=5, preprocessing=Preprocessing(12, crop_fraction=0.5))
    root = tmp_path / "cache"
    a = cached_features(whole, files, labels, root=root, device="cpu")
    b = cached_features(cropped, files, labels, root=root, device="cpu")
    assert len(_folders(root)) == 2 and "0.5" in b.manifest["transform"]
    x = prepare_batch(np.stack([square_image(decode_image(f), 12, 0.5) for f in files]), channels=3)
    expected = torch.nn.functional.normalize(cropped(x), dim=1).detach().numpy()
    np.testing.assert_allclose(b.features, expected, atol=2e-3)  # stored as float16
    assert not np.allclose(a.features, b.features, atol=2e-3)


def test_concurrent_runs_wait_for_one_another_and_encode_once(tmp_path, factory, images):
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path / "cache"
    encoders = [_loaded("counting_encoder:make", factory) for _ in range(2)]
    factory.CALLS.clear()
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda encoder: _cached(encoder, images, root), encoders))
    assert sum(factory.CALLS) == 10  # one of them extracted, the other waited on the lock and read the folder
    assert np.array_equal(results[0].features, results[1].features)
