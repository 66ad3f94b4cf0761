"""Each generator: shape, dtype, label range, determinism under a seed, and classes a simple model can tell apart."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestCentroid

from lifelong.core.tasks import TaskKind
from lifelong.data.sources import BUILTIN_SOURCES, load_source
from lifelong.data.sources.glyphs import CHARS, GlyphStyle, chars, glyph_fonts, letters

EXPECTED = {  # name: (n_per_class used here, image shape, number of classes)
    "digits": (30, (8, 8, 1), 10),
    "letters": (30, (28, 28, 1), 10),
    "chars": (8, (32, 32, 1), 62),
    "shapes": (30, (32, 32, 3), 8),
    "textures": (30, (32, 32, 3), 8),
    "multi_shapes": (8, (32, 32, 3), 8),
}


def _pixels(images: np.ndarray) -> np.ndarray:
    return images.reshape(len(images), -1).astype(np.float32) / 255


def _foreground_spectrum(images: np.ndarray) -> np.ndarray:
    """|FFT| of each pixel's colour distance to the border's median colour: shift-invariant, colour-blind."""
    x = images.astype(np.float32)
    border = np.concatenate([x[:, 0], x[:, -1], x[:, :, 0], x[:, :, -1]], axis=1)
    distance = np.abs(x - np.median(border, axis=1)[:, None, None, :]).sum(axis=-1)
    distance /= distance.max(axis=(1, 2), keepdims=True) + 1e-6
    return np.abs(np.fft.rfft2(distance)).reshape(len(x), -1)


def _gray_spectrum(images: np.ndarray) -> np.ndarray:
    gray = images.astype(np.float32).mean(axis=-1)
    return np.abs(np.fft.rfft2(gray - gray.mean(axis=(1, 2), keepdims=True))).reshape(len(gray), -1)


FEATURES = {
    "digits": _pixels,
    "letters": _pixels,
    "chars": _pixels,
    "shapes": _foreground_spectrum,
    "textures": _gray_spectrum,
}


def test_registry_lists_every_generator_with_a_description():
    assert set(BUILTIN_SOURCES) == set(EXPECTED)
    assert all(source.description for source in BUILTIN_SOURCES.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shape_dtype_labels_and_determinism(name):
    n_per_class, shape, num_classes = EXPECTED[name]
    data = load_source(f"builtin:{name}", n_per_class=n_per_class, seed=3)
    assert isinstance(data.images, np.ndarray) and data.images.dtype == np.uint8
    assert data.images.shape == (n_per_class * num_classes, *shape)
    assert data.num_classes == num_classes and len(data.ids) == len(data)
    if data.kind is TaskKind.MULTI_LABEL:
        per_image = data.labels.sum(axis=1)
        assert per_image.min() >= 1 and per_image.max() <= 3
    else:
        assert np.array_equal(np.bincount(data.labels, minlength=num_classes), np.full(num_classes, n_per_class))
    again = load_source(f"builtin:{name}", n_per_class=n_per_class, seed=3)
    assert np.array_equal(again.images, data.images) and np.array_equal(again.labels, data.labels)
    other = load_source(f"builtin:{name}", n_per_class=n_per_class, seed=4)
    assert not np.array_equal(other.images, data.images)
    assert data.images.std() > 10, "images should not be blank"


@pytest.mark.filterwarnings("ignore:self.within_class_std_dev_")  # digits' blank corner pixels
@pytest.mark.parametrize("name", sorted(FEATURES))
def test_classes_are_distinguishable_by_nearest_centroid(name):
    n_per_class, _, num_classes = EXPECTED[name]
    data = load_source(f"builtin:{name}", n_per_class=2 * n_per_class, seed=0)
    x, y = FEATURES[name](data.images), data.labels
    half = len(y) // 2
    accuracy = (NearestCentroid().fit(x[:half], y[:half]).predict(x[half:]) == y[half:]).mean()
    assert accuracy > 3 / num_classes, f"{name}: accuracy {accuracy:.2f} is not clearly above chance"


def test_multi_shapes_labels_are_predictable_from_the_image():
    data = load_source("builtin:multi_shapes", n_per_class=40, seed=0)
    x, y = _foreground_spectrum(data.images), data.labels
    half = len(y) // 2
    scores = Ridge(alpha=10).fit(x[:half], y[:half]).predict(x[half:])
    assert roc_auc_score(y[half:], scores, average="macro") > 0.65


def test_digits_are_the_real_scikit_learn_digits_and_n_per_class_caps():
    everything = load_source("builtin:digits", n_per_class=None, seed=0)
    assert len(everything) == 1797 and everything.images.max() == 255
    capped = load_source("builtin:digits", n_per_class=500, seed=0)
    assert len(capped) == 1797


def test_glyph_fonts_drop_faces_without_recognisable_glyphs():
    names = [face.name for face in glyph_fonts(CHARS)]
    assert len(names) >= 10
    assert "DejaVuSans" in names
    assert not {"cmex10", "cmsy10", "LastResortHE-Regular", "STIXSizOneSymReg"} & set(names)


def test_fonts_and_style_options_change_the_drawing():
    one_font = chars(2, seed=0, fonts=["DejaVuSans"], style={"rotation": 0.0, "shear": 0.0})
    assert one_font.notes["fonts"] == ["DejaVuSans"]
    assert chars(2, seed=0, fonts=[0]).notes["fonts"] == [glyph_fonts(CHARS)[0].name]
    plain = GlyphStyle(scale=(0.7, 0.7), rotation=0, shear=0, shift=0, stroke=(0,), contrast=(1, 1), noise=(0, 0))
    a = letters(1, seed=0, fonts=["DejaVuSans"], style=plain)
    b = letters(1, seed=9, fonts=["DejaVuSans"], style=plain)
    order_a, order_b = np.argsort(a.labels), np.argsort(b.labels)
    assert np.array_equal(a.images[order_a], b.images[order_b]), "without random style, a glyph is fixed"
    with pytest.raises(ValueError, match="not a usable face"):
        chars(1, seed=0, fonts=["cmex10"])
    with pytest.raises(ValueError, match="unknown GlyphStyle field"):
        letters(1, seed=0, style={"wobble": 1})


def test_builtin_options_are_checked():
    assert len(load_source("builtin:shapes", n_per_class=3)) == 3 * 8  # seed defaults to 0
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['colour'\]"):
        load_source("builtin:shapes", n_per_class=3, seed=0, colour=1)
    with pytest.raises(ValueError, match="unknown builtin source 'nope'"):
        load_source("builtin:nope")
    with pytest.raises(ValueError, match="n_per_class must be an integer >= 1"):
        load_source("builtin:textures", n_per_class=0, seed=0)
