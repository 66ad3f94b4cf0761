"""ClearMini: an offline, deterministic temporal stream of glyphs whose style drifts smoothly over 11 "years".

A stand-in for CLEAR (2004-2014) that needs no download: 11 classes (letters A-J plus BACKGROUND, other
glyphs drawn in the same style), bucket 0 unlabeled only, buckets 1..N labeled (300 per class by default,
CLEAR-10's sizes) plus an unlabeled pool each. Per bucket b, u = b / (num_buckets - 1) moves every style
parameter smoothly: the faces in use slide along a fixed ordering (new faces enter, old ones leave), the
slant and shear centres turn, strokes thicken, contrast falls and noise rises, and each letter turns along
its own seeded random walk. A model fitted on one bucket therefore does best there and worse the further
it looks ahead, CLEAR's central finding.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from lifelong.core.seeds import derive_seed
from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.sources.glyphs import LETTERS, GlyphStyle, glyph_fonts, render_glyphs

BACKGROUND = "BACKGROUND"
BACKGROUND_CHARS = "KLMNOPQRSTUVWXYZ0123456789"  # drawn for the BACKGROUND class, in the bucket's style
FIRST_YEAR = 2004

# A fixed walk through matplotlib's faces, from plain sans over mono and serif to italics: neighbours look
# alike, so a window sliding along it changes the faces gradually. Usable faces missing here go last.
FACE_ORDER = (
    "DejaVuSans",
    "DejaVuSans-Bold",
    "cmss10",
    "DejaVuSansMono",
    "DejaVuSansMono-Bold",
    "cmtt10",
    "DejaVuSans-Oblique",
    "DejaVuSans-BoldOblique",
    "DejaVuSansMono-Oblique",
    "DejaVuSansMono-BoldOblique",
    "DejaVuSerif",
    "DejaVuSerif-Bold",
    "cmr10",
    "cmb10",
    "STIXGeneral",
    "STIXGeneralBol",
    "DejaVuSerif-Italic",
    "DejaVuSerif-BoldItalic",
    "cmti10",
    "cmmi10",
    "STIXGeneralItalic",
    "STIXGeneralBolIta",
)

# Drift schedule: each entry is (value at u = 0, value at u = 1), interpolated linearly in u.
_FACE_SPREAD = 1.3  # Gaussian width (in positions of FACE_ORDER) of the face weights around the moving centre
_ROTATION = (-10.0, 10.0)  # centre of the rotation, degrees
_SHEAR = (-0.15, 0.15)  # centre of the shear
_STROKE = (-0.3, 1.5)  # mean stroke level (-1 thin .. 2 bold)
_SCALE = ((0.68, 0.88), (0.6, 0.78))  # cap height range, fraction of the side
_CONTRAST = ((0.7, 1.0), (0.4, 0.75))
_NOISE = ((0.0, 0.04), (0.04, 0.12))
_SPREADS = (4.0, 0.06)  # within-bucket spread: max absolute rotation (degrees) and shear around the centres
_CLASS_WALK = 6.0  # step sd (degrees per bucket) of each letter's own rotation, a seeded random walk over buckets


def _lerp(pair: tuple[float, float], u: float) -> float:
    return float(pair[0] + (pair[1] - pair[0]) * u)


def _lerp_range(pairs: tuple[tuple[float, float], tuple[float, float]], u: float) -> tuple[float, float]:
    return (_lerp((pairs[0][0], pairs[1][0]), u), _lerp((pairs[0][1], pairs[1][1]), u))


def _weighted(values: list, weights: np.ndarray, resolution: int = 8) -> tuple:
    """`values` repeated in proportion to `weights` (render_glyphs draws uniformly from a list with repeats)."""
    counts = np.rint(weights / weights.max() * resolution).astype(int)
    return tuple(v for v, c in zip(values, counts, strict=True) for _ in range(c))


class ClearMini:
    """Offline CLEAR-like stream of drifting glyphs: buckets 0..num_buckets-1, bucket 0 unlabeled only.

    Buckets render on demand from a seed derived from (seed, bucket), so a bucket is the same however
    and in whatever order buckets are requested; the last few rendered buckets are memoised.
    """

    name = "clear-mini"
    domain = "ocr"  # glyphs: no horizontal flips when augmenting

    def __init__(
        self,
        n_per_class: int = 300,
        unlabeled_per_bucket: int = 4000,
        num_buckets: int = 11,
        size: int = 16,
        seed: int = 0,
        *,
        cache: int = 4,
    ) -> None:
        for label, value, low in (
            ("n_per_class", n_per_class, 1),
            ("unlabeled_per_bucket", unlabeled_per_bucket, 0),
            ("num_buckets", num_buckets, 2),
            ("size", size, 4),
            ("seed", seed, 0),
            ("cache", cache, 0),
        ):
            if not isinstance(value, int | np.integer) or value < low:
                raise ValueError(f"clear-mini: {label} must be an integer >= {low}, got {value!r}")
        self.n_per_class = int(n_per_class)
        self.unlabeled_per_bucket = int(unlabeled_per_bucket)
        self.num_buckets = int(num_buckets)
        self.size = int(size)
        self.resolution: int | None = self.size
        self.seed = int(seed)
        self.class_names: tuple[str, ...] = tuple(sorted([*LETTERS, BACKGROUND]))
        self.labeled_buckets: tuple[int, ...] = tuple(range(1, self.num_buckets))
        self.windows: tuple[tuple[str, str], ...] = tuple(
            (f"{FIRST_YEAR + b}-01-01", f"{FIRST_YEAR + b + 1}-01-01") for b in range(self.num_buckets)
        )
        self.notes: dict = {"generator": "clear-mini", "seed": self.seed, "faces": [f for f in self.face_order()]}
        self._cache_size = int(cache)
        self._cache: OrderedDict[tuple[int, str], LabeledImages] = OrderedDict()

    def __repr__(self) -> str:
        return (
            f"ClearMini(n_per_class={self.n_per_class}, unlabeled_per_bucket={self.unlabeled_per_bucket}, "
            f"num_buckets={self.num_buckets}, size={self.size}, seed={self.seed})"
        )

    # -- style schedule ----------------------------------------------------------------------------------

    @staticmethod
    def face_order() -> tuple[str, ...]:
        """The faces the stream walks through, in order: FACE_ORDER's usable ones, then any other usable face."""
        usable = [f.name for f in glyph_fonts(LETTERS + BACKGROUND_CHARS)]
        if not usable:
            raise FileNotFoundError("no matplotlib face draws A-Z and 0-9; check matplotlib's fonts/ttf folder")
        return tuple([n for n in FACE_ORDER if n in usable] + sorted(n for n in usable if n not in FACE_ORDER))

    def progress(self, bucket: int) -> float:
        """u in [0, 1]: how far along the drift bucket `bucket` is (0 for bucket 0, 1 for the last)."""
        self._check_bucket(bucket)
        return bucket / (self.num_buckets - 1)

    def style(self, bucket: int) -> tuple[tuple[str, ...], GlyphStyle]:
        """(faces with repeats as weights, glyph style) of bucket `bucket`; letters also get class_rotation."""
        u = self.progress(bucket)
        faces = self.face_order()
        centre = u * (len(faces) - 1)
        weights = np.exp(-0.5 * ((np.arange(len(faces)) - centre) / _FACE_SPREAD) ** 2)
        strokes = np.arange(-1, 3)
        stroke_weights = np.exp(-0.5 * ((strokes - _lerp(_STROKE, u)) / 0.7) ** 2)
        style = GlyphStyle(
            scale=_lerp_range(_SCALE, u),
            rotation=_SPREADS[0],
            shear=_SPREADS[1],
            shift=0.06,
            stroke=tuple(int(s) for s in _weighted(list(strokes), stroke_weights, 4)),
            contrast=_lerp_range(_CONTRAST, u),
            noise=_lerp_range(_NOISE, u),
            rotation_center=_lerp(_ROTATION, u),
            shear_center=_lerp(_SHEAR, u),
        )
        return _weighted(list(faces), weights), style

    def class_turns(self, bucket: int) -> tuple[float, ...]:
        """Per-letter rotation offsets (degrees) of bucket `bucket`: a seeded random walk, one step per bucket.

        A walk's squared displacement grows linearly with |i - j| (a smooth trend's grows quadratically), so
        accuracy already drops one bucket ahead and keeps decaying steadily after.
        """
        self._check_bucket(bucket)
        steps = np.random.default_rng(derive_seed(self.seed, 0, 99)).normal(
            0, _CLASS_WALK, (self.num_buckets, len(LETTERS))
        )
        steps[0] = 0.0
        walk = np.cumsum(steps, axis=0)
        walk -= walk.mean(axis=0)  # centred over the stream: no letter drifts off for good
        return tuple(float(v) for v in walk[bucket])

    # -- TemporalSource ----------------------------------------------------------------------------------

    def labeled(self, bucket: int) -> LabeledImages:
        """n_per_class images of each of the 11 classes of bucket `bucket` (1..num_buckets-1), shuffled."""
        self._check_bucket(bucket)
        if bucket not in self.labeled_buckets:
            raise ValueError(
                f"clear-mini: bucket {bucket} has no labels (bucket 0 is unlabeled only); "
                f"labeled buckets are {self.labeled_buckets[0]}..{self.labeled_buckets[-1]}"
            )
        return self._bucket(bucket, "labeled")

    def unlabeled(self, bucket: int) -> np.ndarray:
        """uint8 [unlabeled_per_bucket, size, size, 1]: images of bucket `bucket`'s distribution, labels dropped."""
        self._check_bucket(bucket)
        return self._bucket(bucket, "unlabeled").images

    # -- rendering ---------------------------------------------------------------------------------------

    def _check_bucket(self, bucket: int) -> None:
        if not isinstance(bucket, int | np.integer) or not 0 <= bucket < self.num_buckets:
            raise ValueError(f"clear-mini: bucket must be an integer in 0..{self.num_buckets - 1}, got {bucket!r}")

    def _bucket(self, bucket: int, part: str) -> LabeledImages:
        key = (int(bucket), part)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        if part == "labeled":
            data = self._render(bucket, part, self.n_per_class * len(self.class_names), balanced=True)
        else:
            data = self._render(bucket, part, self.unlabeled_per_bucket, balanced=False)
        if self._cache_size:
            self._cache[key] = data
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return data

    def _render(self, bucket: int, part: str, n: int, *, balanced: bool) -> LabeledImages:
        """n images of bucket `bucket`: exactly n / 11 per class when balanced, else classes drawn at random."""
        part_key = {"labeled": 1, "unlabeled": 2}[part]
        rng = np.random.default_rng(derive_seed(self.seed, bucket, part_key, 0))
        k = len(self.class_names)
        if balanced:
            counts = np.full(k, n // k)
        else:
            counts = rng.multinomial(n, np.full(k, 1.0 / k))
        background = self.class_names.index(BACKGROUND)
        letter_ids = [self.class_names.index(c) for c in LETTERS]
        faces, style = self.style(bucket)
        images = np.empty((n, self.size, self.size, 1), dtype=np.uint8)
        labels = np.empty(n, dtype=np.int64)
        at = 0
        if n:
            letter_counts = counts[letter_ids]
            per_letter = int(letter_counts.max())
            if per_letter:
                letter_style = GlyphStyle.coerce({"class_rotation": self.class_turns(bucket)}, style)
                drawn = render_glyphs(
                    "clear-mini", LETTERS, per_letter, derive_seed(self.seed, bucket, part_key, 1),
                    size=self.size, fonts=faces, style=letter_style,
                )  # fmt: skip
                for j, cls in enumerate(letter_ids):  # the first count[cls] of each letter (drawn in random order)
                    rows = np.flatnonzero(drawn.labels == j)[: counts[cls]]
                    images[at : at + len(rows)] = drawn.images[rows]
                    labels[at : at + len(rows)] = cls
                    at += len(rows)
            if counts[background]:
                per_char = math.ceil(counts[background] / len(BACKGROUND_CHARS))
                drawn = render_glyphs(
                    "clear-mini", BACKGROUND_CHARS, per_char, derive_seed(self.seed, bucket, part_key, 2),
                    size=self.size, fonts=faces, style=style,
                )  # fmt: skip
                take = counts[background]
                images[at : at + take] = drawn.images[:take]  # labels come in random order: chars mixed
                labels[at : at + take] = background
                at += take
        assert at == n
        order = rng.permutation(n)
        return LabeledImages(
            images=images[order],
            labels=labels[order],
            ids=[f"clear-mini[{bucket}][{part}][{i}]" for i in range(n)],
            class_names=self.class_names,
            kind=TaskKind.MULTI_CLASS,
            notes={
                **self.notes,
                "bucket": int(bucket),
                "part": part,
                "progress": self.progress(bucket),
                "style": repr(style),
            },
        )
