"""Glyphs rendered from the installed fonts (matplotlib's faces): notMNIST-like letters A-J, Chars74K-like chars.

Faces that do not draw a character recognisably are left out (compared with reference faces); every glyph
is rendered once per face on a canonical canvas, then drawn per image with a seeded style (scale, rotation,
shear, stroke, position, noise) by bilinear sampling in batches.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.generator_base import (
    CHARS,
    CHUNK,
    DEFAULT_PER_CLASS,
    LETTERS,
    balanced_labels,
    check_counts,
    labeled_images,
    to_uint8,
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
    check_counts(name, n_per_class, seed)
    faces = _select_fonts(chars, fonts)
    rng = np.random.default_rng(seed)
    labels = balanced_labels(len(chars), n_per_class, rng)
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
    for start in range(0, n, CHUNK):
        sl = slice(start, min(n, start + CHUNK))
        dx = grid[None, None, :] - shift[sl, 0, None, None]
        dy = grid[None, :, None] - shift[sl, 1, None, None]
        src_x = inv[sl, 0, 0, None, None] * dx + inv[sl, 0, 1, None, None] * dy + _CANVAS / 2
        src_y = inv[sl, 1, 0, None, None] * dx + inv[sl, 1, 1, None, None] * dy + _CANVAS / 2
        ink = _bilinear(bank, glyph[sl], src_x, src_y) / np.float32(255)
        values = background[sl, None, None] + contrast[sl, None, None] * ink
        values += sigma[sl, None, None] * rng.standard_normal(values.shape, dtype=np.float32)
        values = np.where(invert[sl, None, None], 1 - values, values)
        images[sl, :, :, 0] = to_uint8(values * 255)
    notes = {"seed": seed, "n_per_class": n_per_class, "fonts": [f.name for f in faces], "style": asdict(style)}
    return labeled_images(name, images, labels, list(chars), TaskKind.MULTI_CLASS, notes)


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
