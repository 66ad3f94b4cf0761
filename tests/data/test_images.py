import io

import numpy as np
import pytest
from PIL import Image

from lifelong.data.images import CorruptImageError, center_crop_resize, decode_image, resize_all, to_channels


def test_decode_gray_and_rgb_files_to_hwc(tmp_path, write_png):
    gray = decode_image(write_png(tmp_path / "g.png", 7, size=(6, 5), mode="L"))
    assert gray.shape == (5, 6, 1) and gray.dtype == np.uint8 and (gray == 7).all()
    rgb = decode_image(write_png(tmp_path / "c.png", 10, size=(3, 4)))
    assert rgb.shape == (4, 3, 3)
    assert tuple(rgb[0, 0]) == (10, 245, 5)


def test_decode_bytes_and_palette_with_alpha():
    buf = io.BytesIO()
    Image.new("RGBA", (2, 2), (1, 2, 3, 4)).save(buf, format="PNG")
    assert tuple(decode_image(buf.getvalue())[1, 1]) == (1, 2, 3)


def test_truncated_file_raises_corrupt_error_naming_it(tmp_path, write_corrupt):
    path = write_corrupt(tmp_path / "broken.png")
    with pytest.raises(CorruptImageError, match="broken.png"):
        decode_image(path)
    with pytest.raises(CorruptImageError, match="item 7"):
        decode_image(b"not an image at all", item="item 7")


def test_missing_file_is_file_not_found_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.png"):
        decode_image(tmp_path / "nope.png")


def test_to_channels_replicates_gray_and_converts_rgb_like_pillow():
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (5, 4, 1), dtype=np.uint8)
    assert np.array_equal(to_channels(gray, 3), np.repeat(gray, 3, axis=2))
    rgb = rng.integers(0, 256, (5, 4, 3), dtype=np.uint8)
    assert np.array_equal(to_channels(rgb, 1)[..., 0], np.asarray(Image.fromarray(rgb).convert("L")))
    with pytest.raises(ValueError, match="channels must be 1 or 3"):
        to_channels(rgb, 2)


def test_center_crop_resize_is_central_square_then_pillow_bilinear():
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (30, 50, 3), dtype=np.uint8)
    expected = Image.fromarray(image[:, 10:40]).resize((16, 16), Image.Resampling.BILINEAR)
    assert np.array_equal(center_crop_resize(image, 16), np.asarray(expected))
    tall = rng.integers(0, 256, (9, 5, 1), dtype=np.uint8)
    assert np.array_equal(center_crop_resize(tall, 5), tall[2:7])


def test_resize_all_matches_the_per_image_rule_for_mixed_shapes():
    rng = np.random.default_rng(2)
    shapes = [(20, 20, 3), (8, 12, 1), (20, 20, 3), (32, 32, 1)]
    images = [rng.integers(0, 256, shape, dtype=np.uint8) for shape in shapes]
    out = resize_all(images, 16, 3)
    assert out.shape == (4, 16, 16, 3) and out.dtype == np.uint8
    for image, resized in zip(images, out, strict=True):
        assert np.array_equal(resized, to_channels(center_crop_resize(image, 16), 3))
    gray = resize_all(images, 16, 1)
    assert np.array_equal(gray[0], center_crop_resize(to_channels(images[0], 1), 16))


def test_resize_all_on_an_array_already_at_size_keeps_pixels():
    images = np.random.default_rng(3).integers(0, 256, (50, 28, 28, 1), dtype=np.uint8)
    assert np.array_equal(resize_all(images, 28, 1), images)
    assert np.array_equal(resize_all(images, 28, 3), np.repeat(images, 3, axis=3))


@pytest.mark.parametrize("workers", [2, 3])
def test_decoding_on_threads_gives_the_same_images_and_the_first_corrupt_file(
    tmp_path, write_png, write_corrupt, workers
):
    from lifelong.data.images import decode_files

    paths = [write_png(tmp_path / f"{i}.png", value=10 * i, size=(4 + i % 3, 5)) for i in range(12)]
    serial = decode_files(paths, skip_corrupt=False, workers=1)
    threaded = decode_files(paths, skip_corrupt=False, workers=workers)
    assert serial[1:] == threaded[1:] and len(threaded[0]) == 12
    assert all(np.array_equal(a, b) for a, b in zip(serial[0], threaded[0], strict=True))
    first, second = write_corrupt(tmp_path / "bad5.png"), write_corrupt(tmp_path / "bad9.png")
    mixed = [*paths[:5], first, *paths[5:9], second, *paths[9:]]
    with pytest.raises(CorruptImageError, match="bad5.png"):  # the first in order, whichever thread met it first
        decode_files(mixed, skip_corrupt=False, workers=workers)
    images, kept, skipped = decode_files(mixed, skip_corrupt=True, workers=workers)
    assert skipped == [str(first), str(second)] and kept == [i for i in range(14) if i not in (5, 10)]
    assert all(np.array_equal(a, b) for a, b in zip(images, serial[0], strict=True))


def test_decode_workers_must_be_positive(tmp_path, write_png):
    from lifelong.data.images import decode_files

    with pytest.raises(ValueError, match="workers must be >= 1"):
        decode_files([write_png(tmp_path / "a.png", value=1)], skip_corrupt=False, workers=0)
