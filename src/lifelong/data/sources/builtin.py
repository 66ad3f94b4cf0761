"""Offline generated sources: real 8x8 digits, glyphs rendered from matplotlib's fonts, shapes and textures.

Every generator is `(n_per_class, seed, ...) -> LabeledImages`, deterministic under its seed and vectorised:
per-image parameters are drawn up front from one `np.random.default_rng(seed)`, then images are drawn
in batches with numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.generator_base import (
    CHARS,
    CHUNK,
    DEFAULT_PER_CLASS,
    DIGITS,
    LETTERS,
    SHAPE_CLASSES,
    TEXTURE_CLASSES,
    balanced_labels,
    check_counts,
    labeled_images,
    to_uint8,
)
from lifelong.data.sources.glyphs import chars, letters

__all__ = ["BUILTIN_SOURCES", "BuiltinSource", "CHARS", "DIGITS", "LETTERS", "SHAPE_CLASSES", "TEXTURE_CLASSES"]


# ---------------------------------------------------------------------------------------------------------
# digits: scikit-learn's 1,797 real handwritten digits


def digits(n_per_class: int | None = None, seed: int = 0) -> LabeledImages:
    """scikit-learn's real 8x8 handwritten digits (values 0..16 scaled to 0..255), 10 classes.

    `n_per_class` caps each class (about 180 exist) with a seeded choice; None keeps all 1,797.
    """
    from sklearn.datasets import load_digits

    check_counts("digits", 1 if n_per_class is None else n_per_class, seed)
    data = load_digits()
    images = to_uint8(data.images * (255.0 / 16.0))[..., None]
    labels = data.target.astype(np.int64)
    keep = np.arange(len(labels))
    if n_per_class is not None:
        order = np.random.default_rng(seed).permutation(len(labels))
        rank = np.zeros(len(labels), dtype=np.int64)
        for k in range(10):  # rank of each item within its class, in the seeded order
            members = order[labels[order] == k]
            rank[members] = np.arange(len(members))
        keep = np.flatnonzero(rank < n_per_class)
    return LabeledImages(
        images=images[keep],
        labels=labels[keep],
        ids=[f"digits[{i}]" for i in keep],
        class_names=tuple(str(d) for d in range(10)),
        kind=TaskKind.MULTI_CLASS,
        notes={"generator": "digits", "seed": seed, "n_per_class": n_per_class, "available": len(labels)},
    )


# ---------------------------------------------------------------------------------------------------------
# shapes and multi_shapes: procedural shapes on noisy coloured backgrounds


def _polygon(sides: int, apothem: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    def inside(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        sector = 2 * np.pi / sides
        phi = np.mod(np.arctan2(v, u), sector) - sector / 2
        return np.hypot(u, v) * np.cos(phi) <= apothem

    return inside


def _star(u: np.ndarray, v: np.ndarray, points: int = 5, inner: float = 0.42) -> np.ndarray:
    sector = 2 * np.pi / points
    phi = np.mod(np.arctan2(v, u), sector)
    phi = np.minimum(phi, sector - phi)  # fold onto [0, sector / 2]: tip at angle 0, notch at sector / 2
    r = np.hypot(u, v)
    px, py = r * np.cos(phi), r * np.sin(phi)
    ex, ey = inner * np.cos(sector / 2) - 1.0, inner * np.sin(sector / 2)  # edge from tip (1, 0) to notch
    return ex * py - ey * (px - 1.0) >= 0


# Each shape is a test on local coordinates (u, v): the shape's frame, rotated, in units of its radius.
_SHAPES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "circle": lambda u, v: u * u + v * v <= 0.85,
    "square": _polygon(4, 0.68),
    "triangle": _polygon(3, 0.5),
    "cross": lambda u, v: ((np.abs(u) <= 0.28) & (np.abs(v) <= 1)) | ((np.abs(v) <= 0.28) & (np.abs(u) <= 1)),
    "star": _star,
    "ring": lambda u, v: (u * u + v * v <= 1) & (u * u + v * v >= 0.3),
    "crescent": lambda u, v: (u * u + v * v <= 1) & ((u - 0.45) ** 2 + v * v >= 0.64),
    "ellipse": lambda u, v: u * u + (v / 0.5) ** 2 <= 1,
}
assert tuple(_SHAPES) == SHAPE_CLASSES


def _shape_coverage(
    classes: np.ndarray, centers: np.ndarray, radii: np.ndarray, angles: np.ndarray, size: int
) -> np.ndarray:
    """float32 [n, size, size] fraction of each pixel inside the shape (2x2 supersampling for smooth edges)."""
    sub = ((np.arange(2 * size) + 0.5) / 2).astype(np.float32)
    centers, radii, angles = (a.astype(np.float32) for a in (centers, radii, angles))
    dx = sub[None, None, :] - centers[:, 0, None, None]
    dy = sub[None, :, None] - centers[:, 1, None, None]
    cos, sin = (
        np.cos(angles)[:, None, None] / radii[:, None, None],
        np.sin(angles)[:, None, None] / radii[:, None, None],
    )
    u = cos * dx + sin * dy
    v = cos * dy - sin * dx
    inside = np.zeros(u.shape, dtype=np.float32)
    for k, test in enumerate(_SHAPES.values()):
        members = np.flatnonzero(classes == k)
        if len(members):
            inside[members] = test(u[members], v[members])
    return 0.25 * (inside[:, ::2, ::2] + inside[:, 1::2, ::2] + inside[:, ::2, 1::2] + inside[:, 1::2, 1::2])


def _contrasting_colors(rng: np.random.Generator, background: np.ndarray) -> np.ndarray:
    """Random RGB colours, each moved 128 levels away per channel where too close to its background."""
    color = rng.uniform(0, 255, size=background.shape)
    close = np.abs(color - background).mean(axis=-1) < 70
    color[close] = np.mod(background[close] + 128, 256)
    return color


def _noisy_backgrounds(rng: np.random.Generator, n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(float [n, size, size, 3] backgrounds: colour + linear gradient + Gaussian noise, base colours [n, 3])."""
    base = rng.uniform(0, 255, size=(n, 3))
    direction = rng.uniform(0, 2 * np.pi, size=n)
    amplitude = rng.uniform(0, 50, size=(n, 3))
    sigma = rng.uniform(2, 14, size=n)
    coords = (np.arange(size) + 0.5) / size - 0.5
    ramp = (
        np.cos(direction)[:, None, None] * coords[None, None, :]
        + np.sin(direction)[:, None, None] * coords[None, :, None]
    )
    field = base[:, None, None, :] + ramp[..., None] * amplitude[:, None, None, :]
    field += sigma[:, None, None, None] * rng.standard_normal((n, size, size, 3), dtype=np.float32)
    return field, base


def shapes(n_per_class: int = DEFAULT_PER_CLASS, seed: int = 0, *, size: int = 32) -> LabeledImages:
    """8 procedural shape classes with random colour, size, position and rotation on noisy coloured backgrounds."""
    check_counts("shapes", n_per_class, seed)
    rng = np.random.default_rng(seed)
    labels = balanced_labels(len(SHAPE_CLASSES), n_per_class, rng)
    n = len(labels)
    radii = rng.uniform(0.25, 0.42, size=n) * size
    centers = size / 2 + rng.uniform(-1, 1, size=(n, 2)) * (size / 2 - radii - 1).clip(0)[:, None]
    angles = rng.uniform(0, 2 * np.pi, size=n)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, CHUNK):
        sl = slice(start, min(n, start + CHUNK))
        field, base = _noisy_backgrounds(rng, sl.stop - sl.start, size)
        color = _contrasting_colors(rng, base)
        alpha = _shape_coverage(labels[sl], centers[sl], radii[sl], angles[sl], size)[..., None]
        images[sl] = to_uint8(field * (1 - alpha) + color[:, None, None, :] * alpha)
    notes = {"seed": seed, "n_per_class": n_per_class}
    return labeled_images("shapes", images, labels, SHAPE_CLASSES, TaskKind.MULTI_CLASS, notes)


def multi_shapes(
    n_per_class: int = DEFAULT_PER_CLASS, seed: int = 0, *, size: int = 32, max_shapes: int = 3
) -> LabeledImages:
    """Multi-label: each image holds 1..max_shapes distinct shape classes, one per quadrant; targets are multi-hot.

    Makes n_per_class * 8 images (so the set grows with the class count like the multi-class sources).
    """
    check_counts("multi_shapes", n_per_class, seed)
    if not 1 <= max_shapes <= 4:
        raise ValueError(f"multi_shapes: max_shapes must be 1..4 (one shape per quadrant), got {max_shapes}")
    rng = np.random.default_rng(seed)
    k = len(SHAPE_CLASSES)
    n = n_per_class * k
    count = rng.integers(1, max_shapes + 1, size=n)
    classes = np.argsort(rng.random((n, k)), axis=1)[:, :max_shapes]  # distinct classes per image
    cells = np.argsort(rng.random((n, 4)), axis=1)[:, :max_shapes]  # distinct quadrants per image
    radii = rng.uniform(0.15, 0.22, size=(n, max_shapes)) * size
    slack = (size / 4 - radii - 0.5).clip(0)
    cell_centers = (np.stack([cells % 2, cells // 2], axis=-1) + 0.5) * (size / 2)
    centers = cell_centers + rng.uniform(-1, 1, size=(n, max_shapes, 2)) * slack[..., None]
    angles = rng.uniform(0, 2 * np.pi, size=(n, max_shapes))
    targets = np.zeros((n, k), dtype=np.uint8)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, CHUNK):
        sl = slice(start, min(n, start + CHUNK))
        canvas, base = _noisy_backgrounds(rng, sl.stop - sl.start, size)
        for j in range(max_shapes):
            rows = np.flatnonzero(count[sl] > j)
            color = _contrasting_colors(rng, base[rows])
            alpha = _shape_coverage(
                classes[sl][rows, j], centers[sl][rows, j], radii[sl][rows, j], angles[sl][rows, j], size
            )[..., None]
            canvas[rows] = canvas[rows] * (1 - alpha) + color[:, None, None, :] * alpha
            targets[start + rows, classes[sl][rows, j]] = 1
        images[sl] = to_uint8(canvas)
    notes = {"seed": seed, "n_per_class": n_per_class, "max_shapes": max_shapes}
    return labeled_images("multi_shapes", images, targets, SHAPE_CLASSES, TaskKind.MULTI_LABEL, notes)


# ---------------------------------------------------------------------------------------------------------
# textures: gratings, checkerboards, dots and noise of different spectra


def _texture_patterns(
    rng: np.random.Generator, classes: np.ndarray, size: int
) -> np.ndarray:  # float [n, size, size] in [0, 1]
    n = len(classes)
    coords = (np.arange(size) + 0.5) / size
    x, y = coords[None, None, :], coords[None, :, None]
    frequency = rng.uniform(2.5, 6.0, size=n)[:, None, None] * 2 * np.pi
    phase = rng.uniform(0, 2 * np.pi, size=(n, 2))
    jitter = np.deg2rad(rng.uniform(-12, 12, size=n))
    free_angle = rng.uniform(0, np.pi / 2, size=n)
    threshold = rng.uniform(0.45, 0.7, size=n)[:, None, None]
    out = np.empty((n, size, size))
    for k, name in enumerate(TEXTURE_CLASSES):
        m = np.flatnonzero(classes == k)
        if not len(m):
            continue
        if name.startswith("grating_"):
            theta = (np.deg2rad(float(name.split("_")[1])) + jitter[m])[:, None, None]
            along = x * np.cos(theta) + y * np.sin(theta)
            out[m] = 0.5 + 0.5 * np.sin(frequency[m] * along + phase[m, 0, None, None])
            continue
        if name == "white_noise":
            out[m] = rng.random((len(m), size, size))
            continue
        if name == "smooth_noise":  # 1/f^2 amplitude spectrum, rescaled to [0, 1] per image
            fy, fx = np.meshgrid(np.fft.fftfreq(size), np.fft.rfftfreq(size), indexing="ij")
            amplitude = 1.0 / np.maximum(fx**2 + fy**2, (1.0 / size) ** 2)
            spectrum = np.fft.rfft2(rng.standard_normal((len(m), size, size))) * amplitude
            field = np.fft.irfft2(spectrum, s=(size, size))
            low = field.min(axis=(1, 2), keepdims=True)
            out[m] = (field - low) / (field.max(axis=(1, 2), keepdims=True) - low + 1e-12)
            continue
        theta = free_angle[m][:, None, None]
        a = frequency[m] * (x * np.cos(theta) + y * np.sin(theta)) + phase[m, 0, None, None]
        b = frequency[m] * (-x * np.sin(theta) + y * np.cos(theta)) + phase[m, 1, None, None]
        if name == "checkerboard":
            out[m] = 0.5 + 0.5 * np.tanh(4 * np.sin(a) * np.sin(b))  # soft edges: no aliasing
        elif name == "dots":
            out[m] = np.clip((np.cos(a) * np.cos(b) - threshold[m]) / (1 - threshold[m]), 0, 1)
        else:
            raise AssertionError(f"texture class {name!r} has no pattern")
    return out


def textures(n_per_class: int = DEFAULT_PER_CLASS, seed: int = 0, *, size: int = 32) -> LabeledImages:
    """8 texture classes (oriented gratings, checkerboard, dots, white and 1/f^2 noise) in two random colours."""
    check_counts("textures", n_per_class, seed)
    rng = np.random.default_rng(seed)
    labels = balanced_labels(len(TEXTURE_CLASSES), n_per_class, rng)
    n = len(labels)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, CHUNK):
        sl = slice(start, min(n, start + CHUNK))
        m = sl.stop - sl.start
        pattern = _texture_patterns(rng, labels[sl], size)[..., None]
        dark = rng.uniform(0, 255, size=(m, 3))
        light = _contrasting_colors(rng, dark)
        sigma = rng.uniform(0, 8, size=m)[:, None, None, None]
        values = dark[:, None, None, :] * (1 - pattern) + light[:, None, None, :] * pattern
        images[sl] = to_uint8(values + sigma * rng.standard_normal((m, size, size, 3)))
    notes = {"seed": seed, "n_per_class": n_per_class}
    return labeled_images("textures", images, labels, TEXTURE_CLASSES, TaskKind.MULTI_CLASS, notes)


# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuiltinSource:
    """A registered generator and what it makes, in one line."""

    generate: Callable[..., LabeledImages]
    description: str


BUILTIN_SOURCES: dict[str, BuiltinSource] = {
    "digits": BuiltinSource(digits, "real handwritten digits from scikit-learn: 8x8 grayscale, 10 classes, 1,797"),
    "letters": BuiltinSource(letters, "notMNIST-like letters A-J from matplotlib's fonts: 28x28 grayscale"),
    "chars": BuiltinSource(chars, "Chars74K-like 0-9, A-Z, a-z (62 classes) from matplotlib's fonts: 32x32 gray"),
    "shapes": BuiltinSource(shapes, "8 procedural shapes on noisy coloured backgrounds: 32x32 RGB"),
    "textures": BuiltinSource(textures, "8 texture classes (gratings, checkerboard, dots, noises): 32x32 RGB"),
    "multi_shapes": BuiltinSource(multi_shapes, "multi-label: 1-3 of the 8 shapes per image, 32x32 RGB"),
}
