"""Offline generated sources: real 8x8 digits, glyphs rendered from matplotlib's fonts, shapes and textures.

Every generator is `(n_per_class, seed, ...) -> LabeledImages`, deterministic under its seed and vectorised:
per-image parameters are drawn up front from one `np.random.default_rng(seed)`, then images are drawn
in batches with numpy.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages

LETTERS = "ABCDEFGHIJ"
CHARS = string.digits + string.ascii_uppercase + string.ascii_lowercase
SHAPE_CLASSES = ("circle", "square", "triangle", "cross", "star", "ring", "crescent", "ellipse")
TEXTURE_CLASSES = (
    "grating_0",
    "grating_45",
    "grating_90",
    "grating_135",
    "checkerboard",
    "dots",
    "white_noise",
    "smooth_noise",
)
DEFAULT_PER_CLASS = 100  # images per class when a source is asked for without options
_CHUNK = 2048  # images drawn per numpy batch: bounds temporary memory to a few tens of MB


def _check_counts(name: str, n_per_class: int, seed: int) -> None:
    if not isinstance(n_per_class, int | np.integer) or n_per_class < 1:
        raise ValueError(f"builtin {name!r}: n_per_class must be an integer >= 1, got {n_per_class!r}")
    if not isinstance(seed, int | np.integer):
        raise ValueError(f"builtin {name!r}: seed must be an integer, got {seed!r}")


def _balanced_labels(num_classes: int, n_per_class: int, rng: np.random.Generator) -> np.ndarray:
    """Exactly n_per_class labels of each class, in a seeded random order."""
    return rng.permutation(np.repeat(np.arange(num_classes), n_per_class))


def _labeled(
    name: str, images: np.ndarray, labels: np.ndarray, classes: Sequence[str], kind: TaskKind, notes: dict
) -> LabeledImages:
    return LabeledImages(
        images=images,
        labels=labels,
        ids=[f"{name}[{i}]" for i in range(len(images))],
        class_names=tuple(classes),
        kind=kind,
        notes={"generator": name, **notes},
    )


def _to_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


# ---------------------------------------------------------------------------------------------------------
# digits: scikit-learn's 1,797 real handwritten digits


def digits(n_per_class: int | None = None, seed: int = 0) -> LabeledImages:
    """scikit-learn's real 8x8 handwritten digits (values 0..16 scaled to 0..255), 10 classes.

    `n_per_class` caps each class (about 180 exist) with a seeded choice; None keeps all 1,797.
    """
    from sklearn.datasets import load_digits

    _check_counts("digits", 1 if n_per_class is None else n_per_class, seed)
    data = load_digits()
    images = _to_uint8(data.images * (255.0 / 16.0))[..., None]
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
# glyphs: letters (notMNIST-like) and chars (Chars74K-like) rendered from matplotlib's fonts

_CANVAS = 64  # side of the canonical glyph canvas
_CAP = 28  # cap height ('H') of every face on that canvas, so faces share a scale
_MARGIN = 6  # blank border of the canvas: room for 2 px of thickening, and out-of-canvas reads give 0
_REFERENCE_FACES = ("DejaVuSans", "DejaVuSerif", "DejaVuSans-Oblique", "DejaVuSerif-Italic", "DejaVuSansMono")
_MIN_RECOGNISED = 0.5  # share of a face's glyphs that must look like the reference glyph of the same char


@dataclass(frozen=True)
class FontFace:
    """A TrueType face usable for a character set: its name (file stem) and path."""

    name: str
    path: Path


@dataclass(frozen=True)
class GlyphStyle:
    """How glyphs vary: ranges are (low, high) drawn uniformly per image; change these to make styles drift.

    `scale`: cap height as a fraction of the image side. `rotation`, `shear`: max absolute degrees /
    shear factor. `shift`: max translation as a fraction of the side. `stroke`: stroke levels drawn
    uniformly (-1 thins, 0 keeps, 1 and 2 thicken). `contrast`: glyph minus background intensity, in
    [0, 1]. `noise`: Gaussian noise sigma in [0, 1] units. `invert`: probability of a dark glyph on light.
    `rotation_center`, `shear_center`: offsets added to the drawn angle (degrees) and shear, and
    `class_rotation`: per-class angle offsets (degrees, one per char; empty: none); the defaults leave
    images unchanged, and moving them makes a style drift (ClearMini).
    """

    scale: tuple[float, float] = (0.55, 0.8)
    rotation: float = 12.0
    shear: float = 0.15
    shift: float = 0.08
    stroke: tuple[int, ...] = (0, 1, 2)
    contrast: tuple[float, float] = (0.6, 1.0)
    noise: tuple[float, float] = (0.0, 0.08)
    invert: float = 0.0
    rotation_center: float = 0.0
    shear_center: float = 0.0
    class_rotation: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for name in ("scale", "contrast", "noise"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"GlyphStyle.{name} must be (low, high) with 0 <= low <= high, got {(low, high)}")
        if self.contrast[1] > 1:
            raise ValueError(f"GlyphStyle.contrast must lie in [0, 1], got {self.contrast}")
        bad = [s for s in self.stroke if s not in (-1, 0, 1, 2)]
        if not self.stroke or bad:
            raise ValueError(f"GlyphStyle.stroke levels must be a non-empty subset of -1..2, got {self.stroke}")
        if not 0 <= self.invert <= 1:
            raise ValueError(f"GlyphStyle.invert is a probability in [0, 1], got {self.invert}")

    @classmethod
    def coerce(cls, style: GlyphStyle | Mapping[str, Any] | None, default: GlyphStyle) -> GlyphStyle:
        """A GlyphStyle from None (the default), a style, or a mapping overriding fields of the default."""
        if style is None:
            return default
        if isinstance(style, GlyphStyle):
            return style
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(style) - known)
        if unknown:
            raise ValueError(f"unknown GlyphStyle field(s) {unknown}; known fields: {sorted(known)}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in style.items()}
        return cls(**{**{f.name: getattr(default, f.name) for f in fields(cls)}, **values})


LETTERS_STYLE = GlyphStyle(scale=(0.6, 0.85))
CHARS_STYLE = GlyphStyle(scale=(0.5, 0.72))


def font_files() -> list[Path]:
    """The TrueType files matplotlib ships (its fonts/ttf folder), sorted by name."""
    import matplotlib

    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    files = sorted(folder.glob("*.ttf"))
    if not files:
        raise FileNotFoundError(f"no .ttf fonts in {folder}; reinstall matplotlib, which ships them")
    return files


@functools.cache
def _render_face(path: Path, chars: str) -> np.ndarray:
    """uint8 [len(chars), 64, 64]: each glyph centred on its ink box, at the face's size where 'H' is 28 px tall."""
    probe = ImageFont.truetype(str(path), 100)
    h_box = _ink_box(probe, "H")
    height = 0 if h_box is None else h_box[3] - h_box[1]
    font = ImageFont.truetype(str(path), max(4, round(100 * _CAP / max(height, 1))))
    out = np.zeros((len(chars), _CANVAS, _CANVAS), dtype=np.uint8)
    for i, char in enumerate(chars):
        canvas = Image.new("L", (3 * _CANVAS, 3 * _CANVAS))
        ImageDraw.Draw(canvas).text((_CANVAS // 2, _CANVAS // 2), char, font=font, fill=255)
        box = canvas.getbbox()
        if box is None:
            continue
        glyph = canvas.crop(box)
        if max(glyph.size) > _CANVAS - 2 * _MARGIN:  # blank margin: thickened strokes stay off the edge
            ratio = (_CANVAS - 2 * _MARGIN) / max(glyph.size)
            glyph = glyph.resize((max(1, round(glyph.width * ratio)), max(1, round(glyph.height * ratio))))
        top, left = (_CANVAS - glyph.height) // 2, (_CANVAS - glyph.width) // 2
        out[i, top : top + glyph.height, left : left + glyph.width] = np.asarray(glyph)
    return out


def _ink_box(font: ImageFont.FreeTypeFont, char: str) -> tuple[int, int, int, int] | None:
    canvas = Image.new("L", (300, 300))
    ImageDraw.Draw(canvas).text((50, 50), char, font=font, fill=255)
    return canvas.getbbox()


def _shape_signatures(glyphs: np.ndarray) -> np.ndarray:
    """Mean-free, unit-norm 16x16 block means of 64x64 glyphs: compares glyph shapes across faces."""
    n = len(glyphs)
    blocks = glyphs.reshape(n, 16, _CANVAS // 16, 16, _CANVAS // 16).astype(np.float32).mean(axis=(2, 4))
    v = blocks.reshape(n, -1) - blocks.reshape(n, -1).mean(axis=1, keepdims=True)
    return v / (np.linalg.norm(v, axis=1, keepdims=True) + 1e-9)


@functools.cache
def glyph_fonts(chars: str) -> tuple[FontFace, ...]:
    """Faces (sorted by name) that draw every char of `chars` recognisably; symbol and fallback faces drop out.

    A face qualifies when its character map covers `chars`, its glyphs are non-empty and all different,
    and at least half of them are nearest (case-insensitively, by 16x16 shape) to the same char drawn in
    DejaVu faces: this rejects cmex10 (symbols at letter codes), LastResort (boxes), and cmsy10 for digits.
    """
    from matplotlib.ft2font import FT2Font

    files = {path.stem: path for path in font_files()}
    missing = [name for name in _REFERENCE_FACES if name not in files]
    if missing:
        raise FileNotFoundError(f"matplotlib's reference fonts {missing} are missing; reinstall matplotlib")
    folded = np.array([c.lower() for c in chars])
    reference = np.concatenate([_shape_signatures(_render_face(files[name], chars)) for name in _REFERENCE_FACES])
    reference_chars = np.tile(folded, len(_REFERENCE_FACES))
    faces = []
    for name, path in files.items():
        face = FT2Font(str(path))
        if not all(face.get_char_index(ord(c)) for c in chars):  # index 0 is the "missing glyph" box
            continue
        glyphs = _render_face(path, chars)
        flat = glyphs.reshape(len(chars), -1)
        if not flat.any(axis=1).all() or len({row.tobytes() for row in flat}) < len(chars):
            continue
        nearest = reference_chars[np.argmax(_shape_signatures(glyphs) @ reference.T, axis=1)]
        if np.mean(nearest == folded) >= _MIN_RECOGNISED:
            faces.append(FontFace(name, path))
    return tuple(faces)


def _select_fonts(chars: str, fonts: Sequence[int | str] | None) -> tuple[FontFace, ...]:
    usable = glyph_fonts(chars)
    if not usable:
        raise FileNotFoundError(f"no font draws all of {chars!r}; check matplotlib's fonts/ttf folder")
    if fonts is None:
        return usable
    by_name = {face.name.lower(): face for face in usable}
    chosen = []
    for font in fonts:
        if isinstance(font, int | np.integer):
            if not 0 <= font < len(usable):
                raise ValueError(f"font index {font} out of range: {len(usable)} usable faces (0..{len(usable) - 1})")
            chosen.append(usable[font])
        elif str(font).lower() in by_name:
            chosen.append(by_name[str(font).lower()])
        else:
            raise ValueError(f"font {font!r} is not a usable face for {chars!r}; usable: {[f.name for f in usable]}")
    if not chosen:
        raise ValueError("fonts is empty: give at least one font index or name, or None for all usable faces")
    return tuple(chosen)


@functools.cache
def _stroked_face(path: Path, chars: str, stroke: int) -> np.ndarray:
    """The face's glyphs thinned (-1: 3x3 min filter) or thickened (1, 2: 3x3, 5x5 max filter)."""
    glyphs = _render_face(path, chars)
    for _ in range(abs(stroke)):  # a 5x5 max filter is a 3x3 one applied twice
        glyphs = _rank_filter_3x3(glyphs, np.minimum if stroke < 0 else np.maximum)
    return glyphs


def _rank_filter_3x3(images: np.ndarray, pick: np.ufunc) -> np.ndarray:
    """Separable 3x3 min or max filter over the last two axes of a stack (edges see only real pixels)."""
    out = images.copy()
    for axis in (-1, -2):
        src = out.copy()
        lead = [slice(None)] * src.ndim
        head, tail = list(lead), list(lead)
        head[axis], tail[axis] = slice(1, None), slice(None, -1)
        pick(out[tuple(head)], src[tuple(tail)], out=out[tuple(head)])
        pick(out[tuple(tail)], src[tuple(head)], out=out[tuple(tail)])
    return out


def render_glyphs(
    name: str,
    chars: str,
    n_per_class: int = DEFAULT_PER_CLASS,
    seed: int = 0,
    *,
    size: int,
    fonts: Sequence[int | str] | None,
    style: GlyphStyle,
) -> LabeledImages:
    """n_per_class grayscale size x size images of each char (one class per char), faces and styles drawn at random."""
    _check_counts(name, n_per_class, seed)
    faces = _select_fonts(chars, fonts)
    rng = np.random.default_rng(seed)
    labels = _balanced_labels(len(chars), n_per_class, rng)
    n = len(labels)
    face = rng.integers(len(faces), size=n)
    stroke = rng.integers(len(style.stroke), size=n)
    scale = rng.uniform(*style.scale, size=n) * size / _CAP
    if style.class_rotation and len(style.class_rotation) != len(chars):
        raise ValueError(
            f"GlyphStyle.class_rotation has {len(style.class_rotation)} offsets for {len(chars)} chars {chars!r}; "
            "give one per char, or () for none"
        )
    degrees = rng.uniform(-style.rotation, style.rotation, size=n)
    if style.rotation_center:  # offsets are skipped at their defaults: images stay bit-identical
        degrees = degrees + style.rotation_center
    if style.class_rotation:
        degrees = degrees + np.asarray(style.class_rotation, dtype=np.float64)[labels]
    angle = np.deg2rad(degrees)
    shear = rng.uniform(-style.shear, style.shear, size=n)
    if style.shear_center:
        shear = shear + style.shear_center
    shift = rng.uniform(-style.shift, style.shift, size=(n, 2)) * size
    contrast = rng.uniform(*style.contrast, size=n)
    background = (rng.uniform(0, 1, size=n) * (1 - contrast)).astype(np.float32)
    contrast = contrast.astype(np.float32)
    sigma = rng.uniform(*style.noise, size=n).astype(np.float32)
    invert = rng.random(n) < style.invert

    # bank[(face * levels + stroke) * classes + label] is one 64x64 glyph
    bank = np.stack([_stroked_face(f.path, chars, s) for f in faces for s in style.stroke]).reshape(
        -1, _CANVAS * _CANVAS
    )
    glyph = (face * len(style.stroke) + stroke) * len(chars) + labels
    # inverse of out = scale * R(angle) @ [[1, shear], [0, 1]] @ (src - canvas centre) + image centre + shift
    cos, sin = np.cos(angle), np.sin(angle)
    inv = np.empty((n, 2, 2))
    inv[:, 0, 0], inv[:, 0, 1] = cos + shear * sin, sin - shear * cos
    inv[:, 1, 0], inv[:, 1, 1] = -sin, cos
    inv = (inv / scale[:, None, None]).astype(np.float32)
    shift = shift.astype(np.float32)
    images = np.empty((n, size, size, 1), dtype=np.uint8)
    grid = (np.arange(size) + 0.5 - size / 2).astype(np.float32)
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        dx = grid[None, None, :] - shift[sl, 0, None, None]
        dy = grid[None, :, None] - shift[sl, 1, None, None]
        src_x = inv[sl, 0, 0, None, None] * dx + inv[sl, 0, 1, None, None] * dy + _CANVAS / 2
        src_y = inv[sl, 1, 0, None, None] * dx + inv[sl, 1, 1, None, None] * dy + _CANVAS / 2
        ink = _bilinear(bank, glyph[sl], src_x, src_y) / np.float32(255)
        values = background[sl, None, None] + contrast[sl, None, None] * ink
        values += sigma[sl, None, None] * rng.standard_normal(values.shape, dtype=np.float32)
        values = np.where(invert[sl, None, None], 1 - values, values)
        images[sl, :, :, 0] = _to_uint8(values * 255)
    notes = {"seed": seed, "n_per_class": n_per_class, "fonts": [f.name for f in faces], "style": asdict(style)}
    return _labeled(name, images, labels, list(chars), TaskKind.MULTI_CLASS, notes)


def _bilinear(bank: np.ndarray, which: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Sample flattened 64x64 images bank[which] at continuous (x, y) (pixel centres at i + 0.5).

    Coordinates are clamped into the canvas: its blank margin makes anything outside read as 0.
    """
    x = np.clip(x - np.float32(0.5), 0, _CANVAS - 1.001)
    y = np.clip(y - np.float32(0.5), 0, _CANVAS - 1.001)
    x0 = x.astype(np.int64)  # floor, as x >= 0
    y0 = y.astype(np.int64)
    fx = x - x0
    fy = y - y0
    flat = bank.reshape(-1)
    corner = which[:, None, None] * (_CANVAS * _CANVAS) + y0 * _CANVAS + x0
    top = flat[corner] * (1 - fx) + flat[corner + 1] * fx
    bottom = flat[corner + _CANVAS] * (1 - fx) + flat[corner + _CANVAS + 1] * fx
    return top * (1 - fy) + bottom * fy


def letters(
    n_per_class: int = DEFAULT_PER_CLASS,
    seed: int = 0,
    *,
    size: int = 28,
    fonts: Sequence[int | str] | None = None,
    style: GlyphStyle | Mapping[str, Any] | None = None,
) -> LabeledImages:
    """notMNIST-like letters A-J: 28x28 grayscale glyphs from matplotlib's faces, varied in size, angle, stroke."""
    return render_glyphs(
        "letters", LETTERS, n_per_class, seed, size=size, fonts=fonts, style=GlyphStyle.coerce(style, LETTERS_STYLE)
    )


def chars(
    n_per_class: int = DEFAULT_PER_CLASS,
    seed: int = 0,
    *,
    size: int = 32,
    fonts: Sequence[int | str] | None = None,
    style: GlyphStyle | Mapping[str, Any] | None = None,
) -> LabeledImages:
    """Chars74K-like 62 classes (0-9, A-Z, a-z): 32x32 grayscale glyphs; `fonts` and `style` let styles drift."""
    return render_glyphs(
        "chars", CHARS, n_per_class, seed, size=size, fonts=fonts, style=GlyphStyle.coerce(style, CHARS_STYLE)
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
    _check_counts("shapes", n_per_class, seed)
    rng = np.random.default_rng(seed)
    labels = _balanced_labels(len(SHAPE_CLASSES), n_per_class, rng)
    n = len(labels)
    radii = rng.uniform(0.25, 0.42, size=n) * size
    centers = size / 2 + rng.uniform(-1, 1, size=(n, 2)) * (size / 2 - radii - 1).clip(0)[:, None]
    angles = rng.uniform(0, 2 * np.pi, size=n)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        field, base = _noisy_backgrounds(rng, sl.stop - sl.start, size)
        color = _contrasting_colors(rng, base)
        alpha = _shape_coverage(labels[sl], centers[sl], radii[sl], angles[sl], size)[..., None]
        images[sl] = _to_uint8(field * (1 - alpha) + color[:, None, None, :] * alpha)
    notes = {"seed": seed, "n_per_class": n_per_class}
    return _labeled("shapes", images, labels, SHAPE_CLASSES, TaskKind.MULTI_CLASS, notes)


def multi_shapes(
    n_per_class: int = DEFAULT_PER_CLASS, seed: int = 0, *, size: int = 32, max_shapes: int = 3
) -> LabeledImages:
    """Multi-label: each image holds 1..max_shapes distinct shape classes, one per quadrant; targets are multi-hot.

    Makes n_per_class * 8 images (so the set grows with the class count like the multi-class sources).
    """
    _check_counts("multi_shapes", n_per_class, seed)
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
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        canvas, base = _noisy_backgrounds(rng, sl.stop - sl.start, size)
        for j in range(max_shapes):
            rows = np.flatnonzero(count[sl] > j)
            color = _contrasting_colors(rng, base[rows])
            alpha = _shape_coverage(
                classes[sl][rows, j], centers[sl][rows, j], radii[sl][rows, j], angles[sl][rows, j], size
            )[..., None]
            canvas[rows] = canvas[rows] * (1 - alpha) + color[:, None, None, :] * alpha
            targets[start + rows, classes[sl][rows, j]] = 1
        images[sl] = _to_uint8(canvas)
    notes = {"seed": seed, "n_per_class": n_per_class, "max_shapes": max_shapes}
    return _labeled("multi_shapes", images, targets, SHAPE_CLASSES, TaskKind.MULTI_LABEL, notes)


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
    _check_counts("textures", n_per_class, seed)
    rng = np.random.default_rng(seed)
    labels = _balanced_labels(len(TEXTURE_CLASSES), n_per_class, rng)
    n = len(labels)
    images = np.empty((n, size, size, 3), dtype=np.uint8)
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(n, start + _CHUNK))
        m = sl.stop - sl.start
        pattern = _texture_patterns(rng, labels[sl], size)[..., None]
        dark = rng.uniform(0, 255, size=(m, 3))
        light = _contrasting_colors(rng, dark)
        sigma = rng.uniform(0, 8, size=m)[:, None, None, None]
        values = dark[:, None, None, :] * (1 - pattern) + light[:, None, None, :] * pattern
        images[sl] = _to_uint8(values + sigma * rng.standard_normal((m, size, size, 3)))
    notes = {"seed": seed, "n_per_class": n_per_class}
    return _labeled("textures", images, labels, TEXTURE_CLASSES, TaskKind.MULTI_CLASS, notes)


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
