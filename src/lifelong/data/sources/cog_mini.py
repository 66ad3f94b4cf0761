"""`cog-mini`: an offline ImageNet-CoG built from emoji artwork (see docs/protocols/cog.md and `emoji_art`).

Concepts: the hand-curated `cog_mini_emoji.csv` maps each emoji to its WordNet 3.0 noun synset. Seen = the mapped
concepts that are ImageNet-1K classes (level "seen"); the rest are ranked by Lin similarity to that seen set
(most similar first, ties by wnid) and cut into levels L1..L5 with `concepts.cut_levels` (small gaps dropped). The
information-content corpus is ImageNet-21K fall 2011 plus every mapped concept, the same for any subset.

Images: train images come from every style outside the test family (default: Noto, Symbola, OpenMoji colour and
black, cycled), test images from the held-out test family (default: Twemoji), so no drawing is in both splits.
Each image is the concept's rendering under a seeded augmentation (random resized crop, rotation, horizontal flip,
colour jitter); a concept's images depend only on the seed, its wnid and the options, not on other concepts.

Output: per level, uint8 [N, S, S, 3] train and test arrays with labels (index into the level's sorted wnids)
and each image's style; `CogMiniLevel.labeled()` gives a `LabeledImages`, and `export_folders` writes an
ImageNet-style tree `root/<level>/<split>/<wnid>/*.png` for folder-based feature extraction. `load_cog_mini`
caches the arrays under `<data root>/cog-mini/<key>/` (one compressed .npz per level, then manifest.json), the
key hashing the mapping, the options and the installed artwork's versions.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
from PIL import Image

from lifelong.concepts import ConceptError, LevelSpec, corpus_with, cut_levels, imagenet1k, taxonomy
from lifelong.concepts.levels import filter_concepts
from lifelong.concepts.similarity import SET_SIMILARITIES
from lifelong.concepts.wnids import check_wnid, imagenet21k
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import progress_bar
from lifelong.core.tasks import TaskKind
from lifelong.data.labeled import LabeledImages
from lifelong.data.roots import resolve_data_root
from lifelong.data.sources.emoji_art import STYLES, EmojiArt, art_cache_key, check_style_split, style_split

MAPPING_FILE = "cog_mini_emoji.csv"
MAPPING_COLUMNS = ("emoji", "codepoints", "emoji_name", "wnid", "synset_name", "note")
CACHE_VERSION = "2"  # 2: levels under the paper's candidate filters (IN-21K only, seen ancestors, leaves)
MIN_LEVEL_SIZE = 30  # the smallest level cog-mini cuts; with fewer concepts per level it falls back to 3 levels
FALLBACK_LEVELS = 3
CANDIDATE_FILTERS = "seen,seen-ancestors,person,manual,leaves"  # the paper's main text, no image counts
SPLIT_CODE = {"train": 0, "test": 1}


@dataclass(frozen=True)
class EmojiConcept:
    """One row of the mapping: an emoji and the WordNet 3.0 noun synset it draws."""

    emoji: str
    codepoints: str
    emoji_name: str
    wnid: str
    synset_name: str
    note: str = ""


@dataclass(frozen=True)
class CogMiniOptions:
    """What to build. `concepts`: a subset of the mapping's wnids (None: all). `train_styles`: None = every style
    outside `test_style`'s family. `levels` levels of at least `min_level_size` unseen concepts (else 3).
    Augmentation: crop area fraction range, max rotation (degrees), flip probability, colour jitter strength
    (brightness/contrast/saturation factors in [1 - j, 1 + j]) and max hue shift (turns)."""

    size: int = 64
    train_per_concept: int = 64
    test_per_concept: int = 16
    test_style: str = "twemoji"
    train_styles: tuple[str, ...] | None = None
    levels: int = 5
    min_level_size: int = MIN_LEVEL_SIZE
    seed: int = 0
    concepts: tuple[str, ...] | None = None
    crop_scale: tuple[float, float] = (0.55, 1.0)
    rotation: float = 15.0
    flip: float = 0.5
    jitter: float = 0.25
    hue: float = 0.04

    def __post_init__(self) -> None:
        if self.size < 16:
            raise ValueError(f"size is {self.size}; give an image side of at least 16 pixels")
        for name in ("train_per_concept", "test_per_concept", "levels", "min_level_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} is {getattr(self, name)}; give at least 1")
        low, high = self.crop_scale
        if not 0 < low <= high <= 1:
            raise ValueError(f"crop_scale must be (low, high) with 0 < low <= high <= 1, got {self.crop_scale}")
        if not (0 <= self.flip <= 1 and 0 <= self.jitter < 1 and self.rotation >= 0 and self.hue >= 0):
            raise ValueError("flip must be in [0, 1], jitter in [0, 1), rotation and hue >= 0")
        check_style_split(self.test_style, self.train_styles)

    def styles(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(train styles, test styles)."""
        return style_split(self.test_style, self.train_styles)


@dataclass
class CogMiniLevel:
    """One level: its concepts (label k is wnids[k], sorted) and the train/test images with labels and styles."""

    name: str
    wnids: tuple[str, ...]
    synsets: tuple[str, ...]
    codepoints: tuple[str, ...]
    similarity: np.ndarray  # Lin similarity of each concept to the seen set (1.0 for the seen level)
    train_images: np.ndarray
    train_labels: np.ndarray
    train_styles: np.ndarray  # index into emoji_art.STYLES
    test_images: np.ndarray
    test_labels: np.ndarray
    test_styles: np.ndarray

    def labeled(self) -> LabeledImages:
        """Train and test images together as LabeledImages (official_split says which), classes = wnids."""
        images = np.concatenate([self.train_images, self.test_images])
        split = np.array(["train"] * len(self.train_labels) + ["test"] * len(self.test_labels))
        ids = [
            f"cog-mini/{self.name}/{s}[{i}]"
            for s, n in (("train", len(self.train_labels)), ("test", len(self.test_labels)))
            for i in range(n)
        ]
        return LabeledImages(
            images=images,
            labels=np.concatenate([self.train_labels, self.test_labels]),
            ids=ids,
            class_names=self.wnids,
            kind=TaskKind.MULTI_CLASS,
            official_split=split,
            notes={"source": "cog-mini", "level": self.name},
        )


@dataclass
class CogMini:
    """The benchmark: levels in order (seen, L1 closest .. Ln farthest), the options, notes, the cache folder."""

    levels: dict[str, CogMiniLevel]
    options: CogMiniOptions
    notes: list[str] = field(default_factory=list)
    path: Path | None = None


def read_mapping(path: str | os.PathLike | None = None) -> list[EmojiConcept]:
    """The emoji -> synset mapping (default: the curated file shipped with the package), validated."""
    if path is None:
        return parse_mapping(shipped_mapping_text(), MAPPING_FILE)
    return parse_mapping(Path(path).read_text(encoding="utf-8"), str(path))


def shipped_mapping_text() -> str:
    """The text of the curated mapping shipped with the package."""
    return resources.files("lifelong.data.sources").joinpath(MAPPING_FILE).read_text(encoding="utf-8")


def parse_mapping(text: str, where: str) -> list[EmojiConcept]:
    """The concepts of mapping CSV `text` (`where` names it in errors): known columns, wnids, no repeats."""
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != MAPPING_COLUMNS:
        raise ValueError(f"{where}: columns are {reader.fieldnames}; expected {list(MAPPING_COLUMNS)}")
    concepts, first_row = [], {}
    for row_number, row in enumerate(reader, start=2):
        concept = EmojiConcept(**{k: (row[k] or "").strip() for k in MAPPING_COLUMNS})
        check_wnid(concept.wnid, f"{where}, line {row_number}")
        for key in (concept.wnid, concept.codepoints):
            if key in first_row:
                raise ValueError(f"{where}, line {row_number}: {key} is listed twice (first on line {first_row[key]})")
            first_row[key] = row_number
        concepts.append(concept)
    if not concepts:
        raise ValueError(f"{where} maps no emoji")
    return concepts


def plan_levels(
    mapping: list[EmojiConcept],
    levels: int = 5,
    concepts: tuple[str, ...] | None = None,
    *,
    min_level_size: int = MIN_LEVEL_SIZE,
) -> tuple[dict[str, list[tuple[EmojiConcept, float]]], list[str]]:
    """({level name: [(concept, similarity to seen)]}, notes): seen first, then L1 (most similar) .. Ln.

    The unseen candidates go through the paper's rules against cog-mini's seen set before ranking: only ImageNet-21K
    fall 2011 concepts, no ancestor of a seen concept, no person, none of the manual exclusions, and only the leaves
    of what remains (`concepts.filter_concepts`, main-text rules). `levels` levels are cut when each gets at least
    `min_level_size` concepts, else 3 (with a note), else an error.
    """
    by_wnid = {c.wnid: c for c in mapping}
    chosen = list(by_wnid) if concepts is None else list(dict.fromkeys(concepts))
    unknown = [w for w in chosen if w not in by_wnid]
    if unknown:
        raise ConceptError(f"concept(s) {unknown[:5]} are not in the cog-mini mapping; pick wnids from {MAPPING_FILE}")
    in1k = set(imagenet1k())
    seen = sorted(w for w in chosen if w in in1k)
    if not seen:
        raise ConceptError("no chosen concept is an ImageNet-1K class, so the seen set is empty; add some")
    corpus, notes = corpus_with(("cog-mini", [c.wnid for c in mapping]))  # one corpus for every subset
    in21k = set(imagenet21k())
    outside = sorted(w for w in chosen if w not in in1k and w not in in21k)
    candidates = sorted(w for w in chosen if w not in in1k and w in in21k)
    if outside:
        notes.append(f"{len(outside)} unseen concept(s) are not ImageNet-21K concepts and are left out")
    unseen: list[str] = []
    if candidates:
        found = filter_concepts(LevelSpec(seen=seen, candidates=candidates, order=CANDIDATE_FILTERS))
        unseen = sorted(found.taxonomy.wnids[i] for i in found.eligible)
        for step in found.steps[1:]:
            if step.removed:
                notes.append(f"the {step.name} filter removed {step.removed} unseen concept(s) ({step.description})")
    levels = _level_count(len(unseen), levels, min_level_size, notes)
    tax = taxonomy(corpus)
    scores = SET_SIMILARITIES["lin"](tax, tax.indices(unseen, "unseen concept"), tax.indices(seen, "seen concept"))
    order = sorted(range(len(unseen)), key=lambda i: (-scores[i], unseen[i]))
    _, bounds = cut_levels(len(unseen), levels)
    plan = {"seen": [(by_wnid[w], 1.0) for w in seen]}
    placed = set()
    for number, (start, stop) in enumerate(bounds, start=1):
        plan[f"L{number}"] = [(by_wnid[unseen[i]], float(scores[i])) for i in order[start:stop]]
        placed.update(order[start:stop])
    gaps = [unseen[i] for i in order if i not in placed]
    if gaps:
        notes.append(f"{len(gaps)} unseen concept(s) fall in the gaps between levels and are left out: {gaps}")
    return plan, notes


def _plan(options: CogMiniOptions, mapping: list[EmojiConcept]):
    """`plan_levels` with the options' level count, concepts and minimum level size."""
    return plan_levels(mapping, options.levels, options.concepts, min_level_size=options.min_level_size)


def _level_count(eligible: int, levels: int, min_size: int, notes: list[str]) -> int:
    """`levels` if each level gets `min_size` concepts, else FALLBACK_LEVELS (noted), else a ConceptError."""
    if eligible >= levels * min_size:
        return levels
    if levels > FALLBACK_LEVELS and eligible >= FALLBACK_LEVELS * min_size:
        notes.append(
            f"{eligible} eligible unseen concepts cannot fill {levels} levels of at least {min_size}: "
            f"{FALLBACK_LEVELS} levels instead"
        )
        return FALLBACK_LEVELS
    raise ConceptError(
        f"{eligible} eligible unseen concept(s) cannot fill {min(levels, FALLBACK_LEVELS)} levels of at least "
        f"{min_size}; choose more concepts or lower min_level_size"
    )


def augment(source: Image.Image, rng: np.random.Generator, options: CogMiniOptions) -> np.ndarray:
    """One augmented view of `source` (RGB, options.size square): crop + rotation + flip, then colour jitter."""
    size = options.size
    side = source.width
    area = rng.uniform(*options.crop_scale) * side * side
    ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
    w, h = min(side, math.sqrt(area * ratio)), min(side, math.sqrt(area / ratio))
    cx, cy = rng.uniform(w / 2, side - w / 2), rng.uniform(h / 2, side - h / 2)
    angle = math.radians(rng.uniform(-options.rotation, options.rotation))
    mirror = -1.0 if rng.random() < options.flip else 1.0
    cos, sin, start = math.cos(angle), math.sin(angle), 0.5 / size - 0.5
    a, b, d, e = mirror * cos * w / size, -sin * h / size, mirror * sin * w / size, cos * h / size
    c = cx + (a + b) * size * start
    f = cy + (d + e) * size * start
    view = source.transform(
        (size, size), Image.Transform.AFFINE, (a, b, c, d, e, f), Image.Resampling.BILINEAR, fillcolor=(255, 255, 255)
    )
    pixels = np.asarray(view, dtype=np.float32)
    low, high = 1 - options.jitter, 1 + options.jitter
    gray = pixels @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    pixels = gray[..., None] + (pixels - gray[..., None]) * rng.uniform(low, high)  # saturation
    pixels = pixels @ _hue_rotation(rng.uniform(-options.hue, options.hue)).T
    pixels = pixels * rng.uniform(low, high)  # brightness
    mean = float(pixels.mean())
    pixels = mean + (pixels - mean) * rng.uniform(low, high)  # contrast
    return np.clip(pixels + 0.5, 0, 255).astype(np.uint8)


def _hue_rotation(turns: float) -> np.ndarray:
    """The RGB matrix that rotates hue by `turns` of a full turn (through YIQ)."""
    to_yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], dtype=np.float32)
    angle = 2 * math.pi * turns
    rotate = np.array(
        [[1, 0, 0], [0, math.cos(angle), -math.sin(angle)], [0, math.sin(angle), math.cos(angle)]], dtype=np.float32
    )
    return (np.linalg.inv(to_yiq) @ rotate @ to_yiq).astype(np.float32)


def _concept_images(
    art: EmojiArt, concept: EmojiConcept, styles: tuple[str, ...], count: int, split: str, options: CogMiniOptions
) -> tuple[np.ndarray, np.ndarray]:
    """`count` augmented images of `concept` cycling over its `styles` that draw it, and each one's style index."""
    have = [s for s in styles if art.has(s, concept.codepoints)]
    if not have:
        raise ConceptError(
            f"{concept.codepoints} ({concept.emoji_name}, {concept.wnid}) has no {split} drawing in styles "
            f"{list(styles)}; "
            "choose another test_style or train_styles, or drop the concept with `concepts=`"
        )
    sources = [Image.fromarray(art.render(s, concept.codepoints, options.size)) for s in have]
    rng = np.random.default_rng([options.seed, int(concept.wnid[1:]), SPLIT_CODE[split]])
    images = np.stack([augment(sources[i % len(have)], rng, options) for i in range(count)])
    style_codes = np.array([STYLES.index(have[i % len(have)]) for i in range(count)], dtype=np.uint8)
    return images, style_codes


def build_level(
    name: str, members: list[tuple[EmojiConcept, float]], art: EmojiArt, options: CogMiniOptions, advance=None
) -> CogMiniLevel:
    """The images of one level (concepts sorted by wnid; label k = k-th wnid)."""
    train_styles, test_styles = options.styles()
    members = sorted(members, key=lambda m: m[0].wnid)
    parts: dict[str, list] = {k: [] for k in ("train", "train_styles", "test", "test_styles")}
    for concept, _ in members:
        for split, styles, count in (
            ("train", train_styles, options.train_per_concept),
            ("test", test_styles, options.test_per_concept),
        ):
            images, codes = _concept_images(art, concept, styles, count, split, options)
            parts[split].append(images)
            parts[f"{split}_styles"].append(codes)
        if advance is not None:
            advance(1)
    labels = np.arange(len(members), dtype=np.int64)
    return CogMiniLevel(
        name=name,
        wnids=tuple(m[0].wnid for m in members),
        synsets=tuple(m[0].synset_name for m in members),
        codepoints=tuple(m[0].codepoints for m in members),
        similarity=np.array([m[1] for m in members], dtype=np.float64),
        train_images=np.concatenate(parts["train"]),
        train_labels=np.repeat(labels, options.train_per_concept),
        train_styles=np.concatenate(parts["train_styles"]),
        test_images=np.concatenate(parts["test"]),
        test_labels=np.repeat(labels, options.test_per_concept),
        test_styles=np.concatenate(parts["test_styles"]),
    )


def build_cog_mini(
    options: CogMiniOptions | None = None,
    art: EmojiArt | None = None,
    mapping: list[EmojiConcept] | None = None,
    progress: bool = False,
) -> CogMini:
    """Build cog-mini in memory (no cache); `load_cog_mini` is the cached entry point."""
    options = options or CogMiniOptions()
    art = art or EmojiArt()
    art.require(sum(options.styles(), ()), what="cog-mini")
    plan, notes = _plan(options, mapping or read_mapping())
    total = sum(len(m) for m in plan.values())
    with progress_bar(progress, total, description="cog-mini: rendering") as advance:
        levels = {name: build_level(name, members, art, options, advance) for name, members in plan.items()}
    return CogMini(levels, options, notes)


def cache_key(options: CogMiniOptions, art: EmojiArt, mapping_text: str) -> str:
    """A short hash of everything the images depend on: mapping, options, artwork versions, cache format."""
    return art_cache_key(CACHE_VERSION, {"mapping": mapping_text}, asdict(options), art, sum(options.styles(), ()))


def _level_bytes(level: CogMiniLevel) -> bytes:
    out = io.BytesIO()
    arrays = {k: getattr(level, k) for k in ("similarity", "train_images", "train_labels", "train_styles")}
    arrays.update({k: getattr(level, k) for k in ("test_images", "test_labels", "test_styles")})
    np.savez_compressed(out, **arrays)
    return out.getvalue()


def _read_level(path: Path, meta: dict) -> CogMiniLevel:
    try:
        with np.load(path) as arrays:
            data = {k: arrays[k] for k in arrays.files}
    except (OSError, ValueError, KeyError) as exc:  # numpy's message would suggest allow_pickle
        raise ValueError(f"cannot read the cached cog-mini level {path} (damaged); delete it to rebuild it") from exc
    names = {k: tuple(meta[k]) for k in ("wnids", "synsets", "codepoints")}
    return CogMiniLevel(name=meta["name"], **names, **data)


def load_cog_mini(
    options: CogMiniOptions | None = None,
    *,
    data_root: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    emoji_dir: str | os.PathLike | None = None,
    rebuild: bool = False,
    progress: bool = False,
) -> CogMini:
    """cog-mini from the cache (`cache_dir`, default `<data root>/cog-mini`), building what is missing.

    Levels are written one by one (atomically), so an interrupted build resumes where it stopped; manifest.json
    is written last and records the options, the concepts of each level, notes and the build time.
    """
    options = options or CogMiniOptions()
    art = EmojiArt(emoji_dir)
    art.require(sum(options.styles(), ()), what="cog-mini")
    mapping_text = shipped_mapping_text()
    root = Path(cache_dir) if cache_dir is not None else resolve_data_root(data_root) / "cog-mini"
    folder = root / cache_key(options, art, mapping_text)
    manifest_path = folder / "manifest.json"
    if rebuild and folder.exists():
        shutil.rmtree(folder)
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        levels = {m["name"]: _read_level(folder / f"{m['name']}.npz", m) for m in manifest["levels"]}
        return CogMini(levels, options, manifest["notes"], folder)
    started = time.perf_counter()
    plan, notes = _plan(options, parse_mapping(mapping_text, MAPPING_FILE))
    levels = {}
    total = sum(len(m) for m in plan.values())
    with progress_bar(progress, total, description="cog-mini: rendering") as advance:
        for name, members in plan.items():
            path = folder / f"{name}.npz"
            meta = _level_meta(name, members)
            if path.is_file():  # written by an interrupted earlier run with the same key
                levels[name] = _read_level(path, meta)
                advance(len(members))
                continue
            levels[name] = build_level(name, members, art, options, advance)
            atomic_write_bytes(path, _level_bytes(levels[name]))
    manifest = {
        "key": folder.name,
        "options": asdict(options),
        "sources": {s: art.source_id(s) for s in sum(options.styles(), ())},
        "levels": [_level_meta(name, members) for name, members in plan.items()],
        "notes": notes,
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    atomic_write_bytes(manifest_path, json.dumps(manifest, indent=1, default=list).encode("utf-8"))
    return CogMini(levels, options, notes, folder)


def _level_meta(name: str, members: list[tuple[EmojiConcept, float]]) -> dict:
    members = sorted(members, key=lambda m: m[0].wnid)
    return {
        "name": name,
        "wnids": [m[0].wnid for m in members],
        "synsets": [m[0].synset_name for m in members],
        "codepoints": [m[0].codepoints for m in members],
    }


def export_folders(cog: CogMini, root: str | os.PathLike, levels: list[str] | None = None) -> Path:
    """Write ImageNet-style trees `root/<level>/<split>/<wnid>/<split>_<i>.png`; a level appears whole or not at all."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for name in levels or list(cog.levels):
        level = cog.levels[name]
        if (root / name).exists():
            raise FileExistsError(f"{root / name} exists; remove it or export into another folder")
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
        try:
            for split in ("train", "test"):
                images, labels = getattr(level, f"{split}_images"), getattr(level, f"{split}_labels")
                for i, (image, label) in enumerate(zip(images, labels, strict=True)):
                    folder = staging / split / level.wnids[label]
                    folder.mkdir(parents=True, exist_ok=True)
                    Image.fromarray(image).save(folder / f"{split}_{i:06d}.png")
            os.replace(staging, root / name)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return root
