"""`facts-mini`: an offline mid-scale lifelong fact-learning dataset built from emoji artwork (docs/protocols/facts.md).

Facts over the 24 objects of `facts_mini_objects.csv` (one-word names, drawn by every style); default 186 = 24 S
(each object alone, neutral: UNKNOWN on P and O) + 62 SP (ATTRIBUTES: tints red/green/blue/purple, small/big,
"upside down" = turned 180 degrees, "lying" = 90) + 100 SPO (RELATIONS: "left of", "right of", "above", "below" side
by side with a gap; "on top of": a smaller S standing on O; "in front of": a smaller S drawn over O), SP and SPO
stratified over P and picked with `seed`; never both <a, left of, b> and its mirror <b, right of, a> (same scene).

Images: one style per image; train from every style outside the test family (default: Noto, Symbola, OpenMoji colour
and black), test from the held-out family (default: Twemoji). Each object is rendered once per style; tints and turns
are made from that rendering, placed on white with a seeded jitter of position and scale, then passed through
cog-mini's augmentation (crop, small rotation, colour jitter; no flip, which would swap left and right). A fact's
images depend only on the seed, the fact and the options. Counts (`plan_counts`): `n_images` in all, `test_per_fact`
test images per fact, the rest Zipf over a seeded rank order (n_f ~ rank^-zipf, clipped to [min, max] per fact).

Word vectors: `facts_mini_vectors.txt` (word2vec text, 384-d), one per part text keyed with "_" for spaces (the
whole-phrase key of `lifelong.facts.vectors.PHRASE_RULE`): the offline sentence model's embedding of the text.
Regenerate it (needs `lifelong[text]`) with `write_facts_mini_vectors()`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import time
import zlib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.ndimage import binary_dilation, binary_fill_holes

from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import progress_bar
from lifelong.data.roots import resolve_data_root
from lifelong.data.sources.cog_mini import CogMiniOptions, augment
from lifelong.data.sources.emoji_art import STYLES, EmojiArt, art_cache_key, check_style_split, style_split
from lifelong.facts.facts import Fact

OBJECTS_FILE = "facts_mini_objects.csv"
VECTORS_FILE = "facts_mini_vectors.txt"
OBJECT_COLUMNS = ("name", "emoji", "codepoints", "note")
CACHE_VERSION = "1"
SPLIT_CODE = {"train": 0, "test": 1}
TINTS = {"red": (215, 35, 35), "green": (30, 150, 45), "blue": (35, 75, 215), "purple": (140, 45, 190)}
TURNS = {"upside down": 2, "lying": 1}  # quarter turns (counter-clockwise)
SIDES = {"small": 0.34, "big": 0.95}  # object side as a fraction of the image; neutral NEUTRAL_SIDE
ATTRIBUTES = (*TINTS, *SIDES, *TURNS)
RELATIONS = ("left of", "right of", "above", "below", "on top of", "in front of")
INVERSE = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}
DIRECTION = {"left of": (-1, 0), "right of": (1, 0), "above": (0, -1), "below": (0, 1)}
NEUTRAL_SIDE = 0.62
PAIR_SIDE, PAIR_OFFSET = 0.44, 0.23  # side by side: each object's side, its centre's distance from the middle
TOP_SIDES, TOP_BOTTOM, TOP_OVERLAP = (0.40, 0.58), 0.94, 0.12  # "on top of": S and O sides, O's base, S sinks in
FRONT_SIDES, FRONT_SHIFT = (0.5, 0.8), (0.1, 0.14)  # "in front of": S and O sides; S's centre right of and below O's
HALO = 1 / 32  # a white border around each drawing (fraction of the side) keeps a drawing in front readable
LICENCE_NOTE = "images derived from Twemoji (CC-BY 4.0) and OpenMoji (CC-BY-SA 4.0) artwork must credit them"
_NAME = re.compile(r"^[a-z]+$")


@dataclass(frozen=True)
class FactsMiniObject:
    """One row of the objects table: the word, the emoji, its codepoints and a note."""

    name: str
    emoji: str
    codepoints: str
    note: str = ""


@dataclass(frozen=True)
class FactsMiniOptions:
    """What to build. `n_images`: train + test images in all (default: the paper's mid scale, 28,624); `n_sp`, `n_spo`:
    SP and SPO facts next to one S fact per object. Jitter: `shift` (position, fraction of the side), `scale_jitter`
    (log-scale); the rest is cog-mini's augmentation (crop area range, max rotation, colour jitter, max hue shift)."""

    size: int = 64
    seed: int = 0
    test_style: str = "twemoji"
    train_styles: tuple[str, ...] | None = None
    n_images: int = 28_624
    n_sp: int = 62
    n_spo: int = 100
    zipf: float = 1.5
    min_per_fact: int = 8
    max_per_fact: int = 1000
    test_per_fact: int = 16
    shift: float = 0.04
    scale_jitter: float = 0.1
    crop_scale: tuple[float, float] = (0.85, 1.0)
    rotation: float = 5.0
    jitter: float = 0.1
    hue: float = 0.02

    def __post_init__(self) -> None:
        for name in ("n_images", "min_per_fact", "test_per_fact"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} is {getattr(self, name)}; give at least 1")
        if self.n_sp < 0 or self.n_spo < 0:
            raise ValueError(f"n_sp and n_spo are {self.n_sp}, {self.n_spo}; give counts >= 0")
        if self.max_per_fact < self.min_per_fact:
            raise ValueError(f"max_per_fact {self.max_per_fact} is below min_per_fact {self.min_per_fact}")
        if not (self.zipf >= 0 and 0 <= self.shift <= 0.2 and 0 <= self.scale_jitter <= 0.3):
            raise ValueError("zipf must be >= 0, shift in [0, 0.2] and scale_jitter in [0, 0.3]")
        check_style_split(self.test_style, self.train_styles)
        self.augmentation()  # validates size, crop_scale, rotation, jitter and hue

    def augmentation(self) -> CogMiniOptions:
        """cog-mini's augmentation settings for these options (no flip: it would swap left and right)."""
        kept = {k: getattr(self, k) for k in ("size", "crop_scale", "rotation", "jitter", "hue")}
        return CogMiniOptions(flip=0.0, **kept)

    def styles(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(train styles, test styles)."""
        return style_split(self.test_style, self.train_styles)


@dataclass
class FactsMini:
    """The dataset: facts, train/test images (uint8 [N, S, S, 3]) with fact indices and styles (index into
    emoji_art.STYLES), the options and the cache folder."""

    facts: list[Fact]
    train_images: np.ndarray
    train_facts: np.ndarray
    train_styles: np.ndarray
    test_images: np.ndarray
    test_facts: np.ndarray
    test_styles: np.ndarray
    options: FactsMiniOptions
    folder: Path | None = None
    notes: list[str] = field(default_factory=list)

    def images_per_fact(self) -> np.ndarray:
        """Train images per fact (in the order of `facts`)."""
        return np.bincount(self.train_facts, minlength=len(self.facts))


# -- objects and the plan -------------------------------------------------------------------------------------------


def shipped_objects_text() -> str:
    """The text of the objects table shipped with the package."""
    return resources.files("lifelong.data.sources").joinpath(OBJECTS_FILE).read_text(encoding="utf-8")


def read_objects(text: str | None = None, where: str = OBJECTS_FILE) -> list[FactsMiniObject]:
    """The objects of table `text` (default: the shipped one), validated: known columns, one-word names, no repeats."""
    reader = csv.DictReader(io.StringIO(shipped_objects_text() if text is None else text))
    if tuple(reader.fieldnames or ()) != OBJECT_COLUMNS:
        raise ValueError(f"{where}: columns are {reader.fieldnames}; expected {list(OBJECT_COLUMNS)}")
    objects, first = [], {}
    for line, row in enumerate(reader, start=2):
        obj = FactsMiniObject(**{k: (row[k] or "").strip() for k in OBJECT_COLUMNS})
        if not _NAME.match(obj.name):
            raise ValueError(f"{where}, line {line}: name {obj.name!r} must be one lower-case English word")
        for key in (obj.name, obj.codepoints):
            if key in first:
                raise ValueError(f"{where}, line {line}: {key} is listed twice (first on line {first[key]})")
            first[key] = line
        objects.append(obj)
    if len(objects) < 2:
        raise ValueError(f"{where} lists {len(objects)} object(s); SPO facts need at least 2")
    return objects


def _quotas(total: int, groups: int) -> list[int]:
    return [total // groups + (i < total % groups) for i in range(groups)]


def plan_facts(options: FactsMiniOptions | None = None, objects: list[FactsMiniObject] | None = None) -> list[Fact]:
    """The facts, in order: one S fact per object, `n_sp` SP facts, `n_spo` SPO facts (stratified, seeded)."""
    options = options or FactsMiniOptions()
    names = [o.name for o in objects or read_objects()]
    rng = np.random.default_rng([options.seed, 1])
    facts = [Fact(name) for name in names]
    if options.n_sp > len(names) * len(ATTRIBUTES):
        raise ValueError(f"n_sp is {options.n_sp}; at most {len(names) * len(ATTRIBUTES)} SP facts exist")
    for attribute, quota in zip(ATTRIBUTES, _quotas(options.n_sp, len(ATTRIBUTES)), strict=True):
        chosen = np.sort(rng.choice(len(names), quota, replace=False))
        facts += [Fact(names[i], attribute) for i in chosen]
    picked: set[tuple[str, str, str]] = set()
    for relation, quota in zip(RELATIONS, _quotas(options.n_spo, len(RELATIONS)), strict=True):
        inverse = INVERSE.get(relation)
        pairs = [(s, o) for s in names for o in names if s != o and (o, inverse, s) not in picked]
        if quota > len(pairs):
            raise ValueError(f"n_spo is {options.n_spo}: {relation!r} has {len(pairs)} free pairs for {quota} facts")
        for i in np.sort(rng.choice(len(pairs), quota, replace=False)):
            s, o = pairs[i]
            picked.add((s, relation, o))
            facts.append(Fact(s, relation, o))
    return facts


def plan_counts(options: FactsMiniOptions | None = None, n_facts: int | None = None) -> np.ndarray:
    """Train images per fact (int64, in plan order): Zipf over a seeded rank order, clipped, summing exactly to
    `n_images - test_per_fact * n_facts` (n_facts default: the plan's)."""
    options = options or FactsMiniOptions()
    count = len(plan_facts(options)) if n_facts is None else n_facts
    total = options.n_images - options.test_per_fact * count
    low, high = options.min_per_fact, options.max_per_fact
    if not count * low <= total <= count * high:
        raise ValueError(
            f"{count} facts leave {total} train images after {options.test_per_fact} test images each, outside "
            f"[{count * low}, {count * high}] (min/max_per_fact {low}/{high} x facts); change n_images or the bounds"
        )
    ranks = np.random.default_rng([options.seed, 2]).permutation(count) + 1.0
    weights = ranks ** -float(options.zipf)
    lo, hi = total / weights.sum() * 1e-6, total / weights.min() * 10.0  # sum(clip(c * w)) is monotone in c
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if np.clip(mid * weights, low, high).sum() <= total else (lo, mid)
    real = np.clip(lo * weights, low, high)
    counts = np.floor(real).astype(np.int64)
    order = np.argsort(counts - real, kind="stable")  # largest remainder first
    order = order[counts[order] < high]
    counts[order[: total - int(counts.sum())]] += 1
    assert counts.sum() == total, (counts.sum(), total)
    return counts


# -- rendering ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sprite:
    image: Image.Image  # RGBA, opaque over the drawing (holes filled), white and transparent elsewhere
    box: tuple[float, float, float, float]  # the drawing's bounding box, fractions of the side


def _sprite(rgb: np.ndarray, variant: str | None) -> _Sprite:
    """The rendering `rgb` (on white) as a sprite, tinted or turned by the attribute `variant`."""
    ink = binary_dilation((255 - rgb.min(axis=2)) > 12, iterations=max(1, round(HALO * len(rgb))))
    mask = binary_fill_holes(ink)  # the dilation closes small gaps in outlines, so line art gets an opaque inside
    if variant in TINTS:  # a ramp: black -> dark tint, mid grey -> tint, white -> white
        light = (rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32))[..., None] / 255
        tint = np.array(TINTS[variant], dtype=np.float32)
        dark = np.where(light < 0.45, 0.55 + light, 1.0) * tint
        ramp = np.where(light < 0.45, dark, tint + (255 - tint) * (light - 0.45) / 0.55)
        rgb = np.clip(ramp + 0.5, 0, 255).astype(np.uint8)
    if variant in TURNS:
        rgb, mask = np.rot90(rgb, TURNS[variant]), np.rot90(mask, TURNS[variant])
    rgba = np.dstack([rgb, np.where(mask, 255, 0).astype(np.uint8)])
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    side = float(mask.shape[0])
    box = (cols[0] / side, rows[0] / side, (cols[-1] + 1) / side, (rows[-1] + 1) / side)
    return _Sprite(Image.fromarray(np.ascontiguousarray(rgba), "RGBA"), box)


class _Renderer:
    """Composes fact images; renders each (style, object) once and keeps its variants and resized copies."""

    def __init__(self, art: EmojiArt, objects: list[FactsMiniObject], options: FactsMiniOptions) -> None:
        self.art, self.options = art, options
        self.codepoints = {o.name: o.codepoints for o in objects}
        self.work = max(64, 2 * options.size)
        self.aug = options.augmentation()
        self._base: dict[tuple[str, str], np.ndarray] = {}
        self._sprites: dict[tuple[str, str, str | None], _Sprite] = {}
        self._resized: dict[tuple[str, str, str | None, int], Image.Image] = {}

    def sprite(self, style: str, name: str, variant: str | None = None) -> _Sprite:
        key = (style, name, variant)
        if key not in self._sprites:
            if (style, name) not in self._base:
                self._base[style, name] = self.art.render(style, self.codepoints[name], self.work)
            self._sprites[key] = _sprite(self._base[style, name], variant)
        return self._sprites[key]

    def paste(self, canvas, style, name, variant, side, x, y, bottom=False) -> tuple[float, float, float, float]:
        """Draw the object with its drawing centred on x (and centred on y, or with its base on y if `bottom`);
        return the drawing's box in pixels."""
        sprite = self.sprite(style, name, variant)
        px = max(2, round(side))
        key = (style, name, variant, px)
        if key not in self._resized:
            self._resized[key] = sprite.image.resize((px, px), Image.Resampling.BILINEAR)
        x0, y0, x1, y1 = (v * px for v in sprite.box)
        left, top = round(x - (x0 + x1) / 2), round(y - (y1 if bottom else (y0 + y1) / 2))
        canvas.paste(self._resized[key], (left, top), self._resized[key])
        return left + x0, top + y0, left + x1, top + y1

    def image(self, fact: Fact, style: str, rng: np.random.Generator) -> np.ndarray:
        """One augmented image of `fact` drawn in `style`: uint8 [size, size, 3]."""
        size, opts = self.options.size, self.options
        canvas = Image.new("RGB", (size, size), (255, 255, 255))
        dx, dy = rng.uniform(-opts.shift, opts.shift, 2) * size
        mid_x, mid_y = size / 2 + dx, size / 2 + dy

        def side(fraction: float) -> float:
            return fraction * size * math.exp(rng.uniform(-opts.scale_jitter, opts.scale_jitter))

        subject, part, obj = fact
        if obj is None and (part is None or part in ATTRIBUTES):
            variant = part if part in TINTS or part in TURNS else None
            self.paste(canvas, style, subject, variant, side(SIDES.get(part, NEUTRAL_SIDE)), mid_x, mid_y)
        elif part in DIRECTION:
            ux, uy = DIRECTION[part]
            for name, sign in ((obj, -1), (subject, 1)):
                x, y = mid_x + sign * ux * PAIR_OFFSET * size, mid_y + sign * uy * PAIR_OFFSET * size
                self.paste(canvas, style, name, None, side(PAIR_SIDE), x, y)
        elif part == "on top of":
            s_side, o_side = side(TOP_SIDES[0]), side(TOP_SIDES[1])
            box = self.paste(canvas, style, obj, None, o_side, mid_x, min(TOP_BOTTOM * size + dy, size - 1), True)
            self.paste(canvas, style, subject, None, s_side, (box[0] + box[2]) / 2, box[1] + TOP_OVERLAP * s_side, True)
        elif part == "in front of":
            (fx, fy), s_side, o_side = FRONT_SHIFT, side(FRONT_SIDES[0]), side(FRONT_SIDES[1])
            self.paste(canvas, style, obj, None, o_side, mid_x - fx * size / 2, mid_y - fy * size / 2)
            self.paste(canvas, style, subject, None, s_side, mid_x + fx * size / 2, mid_y + fy * size / 2)
        else:
            raise ValueError(f"fact {fact.text} has no drawing: P must be one of {ATTRIBUTES} or {RELATIONS}")
        return augment(canvas, rng, self.aug)


def _fact_images(renderer: _Renderer, fact: Fact, styles: tuple[str, ...], count: int, split: str):
    """`count` images of `fact` cycling over `styles` from a seeded start, and each one's style index."""
    rng = np.random.default_rng([renderer.options.seed, zlib.crc32(fact.text.encode()), SPLIT_CODE[split]])
    start = int(rng.integers(len(styles)))
    chosen = [styles[(start + i) % len(styles)] for i in range(count)]
    images = np.stack([renderer.image(fact, style, rng) for style in chosen])
    return images, np.array([STYLES.index(s) for s in chosen], dtype=np.uint8)


def check_artwork(options: FactsMiniOptions | None = None, emoji_dir: str | os.PathLike | None = None) -> None:
    """Raise EmojiArtMissingError (what is missing, the command that installs it) unless every style of `options`
    draws every object: a run checks this when it builds the stream, before it makes its run folder."""
    _check_art(EmojiArt(emoji_dir), read_objects(), sum((options or FactsMiniOptions()).styles(), ()))


def _check_art(art: EmojiArt, objects: list[FactsMiniObject], styles: tuple[str, ...]) -> None:
    art.require(styles, what="facts-mini")
    absent = [f"{o.name} ({o.codepoints}) in {s}" for o in objects for s in styles if not art.has(s, o.codepoints)]
    if absent:
        raise ValueError(f"the installed artwork lacks {absent}; choose other styles or objects drawn by every style")


def build_split(renderer, facts, counts, styles, split, advance=None) -> dict[str, np.ndarray]:
    """The images, fact indices and style codes of one split (`counts[k]` images of `facts[k]`)."""
    images, codes = [], []
    for fact, count in zip(facts, counts, strict=True):
        fact_images, fact_codes = _fact_images(renderer, fact, styles, int(count), split)
        images.append(fact_images)
        codes.append(fact_codes)
        if advance is not None:
            advance(int(count))
    labels = np.repeat(np.arange(len(facts), dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return {"images": np.concatenate(images), "facts": labels, "styles": np.concatenate(codes)}


def _build(options: FactsMiniOptions, art: EmojiArt, progress: bool, folder: Path | None = None) -> FactsMini:
    """Plan and render both splits; with `folder`, reuse a split file found there and write each new one (atomic)."""
    objects = read_objects()
    styles = dict(zip(("train", "test"), options.styles(), strict=True))
    _check_art(art, objects, sum(styles.values(), ()))
    facts = plan_facts(options, objects)
    counts = {"train": plan_counts(options, len(facts)), "test": np.full(len(facts), options.test_per_fact)}
    renderer, parts = _Renderer(art, objects, options), {}
    with progress_bar(progress, int(sum(c.sum() for c in counts.values())), description="facts-mini") as advance:
        for split in ("train", "test"):
            path = None if folder is None else folder / f"{split}.npz"
            if path is not None and path.is_file():  # written by an interrupted earlier run with the same key
                parts[split] = _read_split(path)
                advance(int(counts[split].sum()))
                continue
            parts[split] = build_split(renderer, facts, counts[split], styles[split], split, advance)
            if path is not None:
                atomic_write_bytes(path, _split_bytes(parts[split]))
    return _assemble(facts, parts, options, folder, [LICENCE_NOTE])


def build_facts_mini(
    options: FactsMiniOptions | None = None, art: EmojiArt | None = None, progress: bool = False
) -> FactsMini:
    """Build facts-mini in memory (no cache); `load_facts_mini` is the cached entry point."""
    return _build(options or FactsMiniOptions(), art or EmojiArt(), progress)


def _assemble(facts, parts, options, folder, notes) -> FactsMini:
    arrays = {f"{split}_{k}": v for split, part in parts.items() for k, v in part.items()}
    return FactsMini(facts=facts, options=options, folder=folder, notes=list(notes), **arrays)


# -- the cache ------------------------------------------------------------------------------------------------------


def cache_key(options: FactsMiniOptions, art: EmojiArt, objects_text: str) -> str:
    """A short hash of everything the images depend on: objects table, options, artwork versions, cache format."""
    return art_cache_key(CACHE_VERSION, {"objects": objects_text}, asdict(options), art, sum(options.styles(), ()))


def _split_bytes(part: dict[str, np.ndarray]) -> bytes:
    out = io.BytesIO()
    np.savez_compressed(out, **part)
    return out.getvalue()


def _read_split(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as arrays:
            return {k: arrays[k] for k in ("images", "facts", "styles")}
    except (OSError, ValueError, KeyError) as exc:  # numpy's message would suggest allow_pickle
        raise ValueError(f"cannot read the cached facts-mini split {path} (damaged); delete it to rebuild it") from exc


def load_facts_mini(
    options: FactsMiniOptions | None = None,
    *,
    data_root: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    emoji_dir: str | os.PathLike | None = None,
    rebuild: bool = False,
    progress: bool = False,
) -> FactsMini:
    """facts-mini from the cache (`cache_dir`, default `<data root>/facts-mini`), building what is missing.

    Each split is written atomically (an interrupted build resumes at the missing split); manifest.json is written
    last and records the options, facts, train counts, artwork versions and the build time.
    """
    options = options or FactsMiniOptions()
    art = EmojiArt(emoji_dir)
    art.require(sum(options.styles(), ()), what="facts-mini")
    root = Path(cache_dir) if cache_dir is not None else resolve_data_root(data_root) / "facts-mini"
    folder = root / cache_key(options, art, shipped_objects_text())
    manifest_path = folder / "manifest.json"
    if rebuild and folder.exists():
        shutil.rmtree(folder)
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        parts = {split: _read_split(folder / f"{split}.npz") for split in ("train", "test")}
        return _assemble([Fact(*f) for f in manifest["facts"]], parts, options, folder, manifest["notes"])
    started = time.perf_counter()
    fm = _build(options, art, progress, folder)
    manifest = {
        "key": folder.name,
        "options": asdict(options),
        "sources": {s: art.source_id(s) for s in sum(options.styles(), ())},
        "facts": [list(f) for f in fm.facts],
        "train_per_fact": fm.images_per_fact().tolist(),
        "notes": fm.notes,
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    atomic_write_bytes(manifest_path, json.dumps(manifest, indent=1).encode("utf-8"))
    return fm


# -- export and word vectors ----------------------------------------------------------------------------------------


def vocabulary(objects: list[FactsMiniObject] | None = None) -> list[str]:
    """Every part text a facts-mini fact can have: object names, ATTRIBUTES, RELATIONS."""
    return [o.name for o in objects or read_objects()] + list(ATTRIBUTES) + list(RELATIONS)


def vector_key(text: str) -> str:
    """The key of a part text in the vectors file: words joined by '_' ("left of" -> "left_of")."""
    return "_".join(text.split())


def shipped_vectors_path() -> Path:
    """Where the shipped word vectors are (word2vec text format)."""
    return Path(str(resources.files("lifelong.data.sources").joinpath(VECTORS_FILE)))


def write_facts_mini_vectors(path: str | os.PathLike | None = None, embed=None, model: str | None = None) -> Path:
    """Write the vectors file (default: the shipped one) from the offline sentence model (`lifelong[text]`), or from
    `embed` (texts -> array) named `model`; 6 significant digits."""
    from lifelong.facts.vectors import sentence_vectors  # imports the model only when called

    texts = vocabulary()
    matrix = sentence_vectors(texts, embed=embed, model=model)
    lines = [f"{len(texts)} {matrix.shape[1]}"]
    lines += [vector_key(t) + " " + " ".join(f"{v:.6g}" for v in row) for t, row in zip(texts, matrix, strict=True)]
    target = Path(path) if path is not None else shipped_vectors_path()
    atomic_write_bytes(target, ("\n".join(lines) + "\n").encode("utf-8"))
    return target
