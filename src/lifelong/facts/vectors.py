"""Word vectors of fact parts: t(f) = [w(S); w(P); w(O)], zero for an undefined part
(docs/protocols/facts.md#facts-and-the-fact-space).

Vectors come from a word-vector file (word2vec text, word2vec binary or GloVe text, optionally gzipped; streamed
record by record, keeping only the words asked for) or, without a file, from the offline sentence model of
`lifelong.concepts.text_similarity` (optional extra `lifelong[text]`), which embeds each part's whole text.

Phrase rule (PHRASE_RULE) for a part text in a word-vector file: (1) the whole text with spaces joined by "_"
("polar bear" -> "polar_bear"), exact then lower-cased; else (2) the mean of its words' vectors, words split on
spaces, underscores and hyphens, each looked up exact then lower-cased. Out-of-vocabulary (OOV) words: "error"
(default) lists them; "skip" leaves them out of their phrase (a part with no known word is still an error, never a
silent zero); "random" gives each a seeded unit-norm random vector from a hash of its lower-cased form.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import re
import sys
import warnings
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import progress_bar

PHRASE_RULE = "phrase-v1: whole text with spaces->'_' (exact, lower); else mean of words split on ' _-' (exact, lower)"
OOV_MODES = ("error", "skip", "random")
FORMATS = ("text", "glove", "binary")  # word2vec text, GloVe text (no header), word2vec binary
TEXT_KIND = "fact-part"  # the sentence model's store name in text_similarity's cache
MAX_LISTED = 20  # OOV words named in an error message
CHUNK = 1 << 20  # bytes per read of a binary file
MAX_WORD_BYTES = 4096  # a longer word in a binary file means the file is not word2vec binary
_WORD_SPLIT = re.compile(r"[ _\-]+")


@dataclass
class WordVectors:
    """Words and their vectors (float32 [n, d]) read from `source`."""

    words: list[str]
    matrix: np.ndarray
    source: str

    @functools.cached_property
    def index(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words)}

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])


def cache_root() -> Path:
    """$LIFELONG_FACT_VECTORS_CACHE, else $XDG_CACHE_HOME or ~/.cache, /lifelong/fact-vectors."""
    if os.environ.get("LIFELONG_FACT_VECTORS_CACHE"):
        return Path(os.environ["LIFELONG_FACT_VECTORS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lifelong" / "fact-vectors"


# -- the phrase rule ------------------------------------------------------------------------------------------------


def _whole(text: str) -> str:
    return "_".join(text.split())


def _words(text: str) -> list[str]:
    return [w for w in _WORD_SPLIT.split(text.strip()) if w]


def lookup_keys(texts: Iterable[str]) -> set[str]:
    """Every entry the phrase rule may look up for these part texts (what a reader has to keep)."""
    keys: set[str] = set()
    for text in texts:
        for key in (_whole(text), *_words(text)):
            keys.update((key, key.lower()))
    return keys


def _find(key: str, index: dict[str, int]) -> int | None:
    row = index.get(key)
    return index.get(key.lower()) if row is None else row


def resolve_phrase(text: str, index: dict[str, int]) -> tuple[list[int], list[str]]:
    """(rows to average, OOV words) for a part text under the phrase rule."""
    row = _find(_whole(text), index)
    if row is not None:
        return [row], []
    rows, missing = [], []
    for word in _words(text):
        found = _find(word, index)
        if found is None:
            missing.append(word)
        else:
            rows.append(found)
    return rows, missing


def random_vector(word: str, dim: int, seed: int = 0) -> np.ndarray:
    """A unit-norm float32 vector from (seed, a hash of the lower-cased word): the same word gets the same vector."""
    digest = hashlib.blake2b(word.lower().encode("utf-8"), digest_size=8).digest()
    v = np.random.default_rng([seed, int.from_bytes(digest, "little")]).standard_normal(dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


# -- reading word-vector files --------------------------------------------------------------------------------------


def _base_suffix(path: Path) -> str:
    return Path(path.stem).suffix.lower() if path.suffix.lower() == ".gz" else path.suffix.lower()


def _open(raw: BinaryIO, path: Path) -> BinaryIO:
    return gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix.lower() == ".gz" else raw  # type: ignore[return-value]


def _is_int(field: bytes) -> bool:
    return field.isdigit()


def _is_float(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _looks_like_text(line: bytes) -> bool:
    """A word2vec text record: UTF-8, no control characters but whitespace, a word and at least one value."""
    try:
        decoded = line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not line:
        return True  # no record after the header
    return not any(ord(ch) < 32 and ch not in "\t\r\n" for ch in decoded) and len(decoded.split()) >= 2


def detect_format(path: str | Path) -> tuple[str, int | None, int]:
    """(format, word count from the header or None for GloVe, dimension) of a word-vector file."""
    path = Path(path)
    with open(path, "rb") as raw, _open(raw, path) as f:
        try:
            first = f.readline(1 << 20)
        except (OSError, EOFError) as exc:
            raise ValueError(f"{path}: cannot read it as a word-vector file ({exc})") from None
        fields = first.split()
        if len(fields) == 2 and all(_is_int(x) for x in fields):
            count, dim = int(fields[0]), int(fields[1])
            if dim < 1:
                raise ValueError(f"{path} line 1: header says dimension {dim}; it must be >= 1")
            if _base_suffix(path) == ".bin":
                return "binary", count, dim
            second = f.readline(64 * dim + 4096)
            return ("text" if _looks_like_text(second) else "binary"), count, dim
    if len(fields) < 2:
        raise ValueError(
            f"{path} line 1: {first[:80]!r} is neither a word2vec header 'count dim' nor a GloVe line 'word v1 ... vd'"
        )
    bad = next((x for x in fields[1:] if not _is_float(x)), None)
    if bad is not None:
        raise ValueError(f"{path} line 1: non-numeric value {bad.decode(errors='replace')!r} (GloVe format assumed)")
    return "glove", None, len(fields) - 1


def read_word_vectors(
    path: str | Path, words: Iterable[str] | None = None, progress: bool | None = None
) -> WordVectors:
    """Read a word2vec text/binary or GloVe file (format detected), keeping only what `words` needs.

    `words` are part texts (words or phrases): the reader keeps every entry the phrase rule may look up for them
    (`lookup_keys`). Duplicate words keep their first vector. Progress: a bar over the file's bytes (default: when
    the terminal is interactive).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"word-vector file {path} not found")
    fmt, count, dim = detect_format(path)
    wanted = None if words is None else {key.encode("utf-8") for key in lookup_keys(words)}
    show = sys.stdout.isatty() if progress is None else progress
    size = path.stat().st_size
    with (
        open(path, "rb") as raw,
        _open(raw, path) as f,
        progress_bar(show, round(size / 2**20, 1), description=f"reading {path.name} (MB)") as advance,
    ):

        def moved() -> None:
            advance(completed=round(raw.tell() / 2**20, 1))

        if count is not None:
            f.readline()  # the header
        if fmt == "binary":
            kept, total = _read_binary(f, path, count or 0, dim, wanted, moved)
        else:
            kept, total = _read_text(f, path, fmt == "text", dim, wanted, moved)
            if count is not None and total != count:
                raise ValueError(f"{path}: the header says {count} words but the file holds {total} (truncated?)")
    names = list(kept)
    matrix = np.stack(list(kept.values())) if kept else np.zeros((0, dim), dtype=np.float32)
    return WordVectors(names, matrix, f"{path} ({fmt}, {len(names)} of {total} words, {dim}-d)")


def _vector(values: Sequence[bytes], path: Path, where: str, word: bytes) -> np.ndarray:
    try:
        vector = np.array(values, dtype=np.float32)
    except ValueError:
        bad = next(v for v in values if not _is_float(v))
        raise ValueError(
            f"{path} {where}: non-numeric value {bad.decode(errors='replace')!r} in the vector of "
            f"{word.decode(errors='replace')!r}"
        ) from None
    if not np.isfinite(vector).all():
        raise ValueError(f"{path} {where}: non-finite value in the vector of {word.decode(errors='replace')!r}")
    return vector


def _read_text(f, path: Path, header: bool, dim: int, wanted: set[bytes] | None, moved) -> tuple[dict, int]:
    kept: dict[str, np.ndarray] = {}
    total = 0
    for n, line in enumerate(f, start=2 if header else 1):
        fields = line.split()
        if not fields:
            continue
        total += 1
        if len(fields) == dim + 1:
            word, values = fields[0], fields[1:]
        elif len(fields) > dim + 1 and not any(_is_float(x) for x in fields[1:-dim]):
            word, values = b" ".join(fields[:-dim]), fields[-dim:]  # a GloVe token with spaces
        else:
            raise ValueError(
                f"{path} line {n}: {len(fields) - 1} values after the word {fields[0].decode(errors='replace')!r}, "
                f"expected {dim} (the dimension of {'the header' if header else 'line 1'}): inconsistent dimension"
            )
        if (wanted is None or word in wanted) and word.decode("utf-8", "replace") not in kept:
            kept[word.decode("utf-8", "replace")] = _vector(values, path, f"line {n}", word)
        if n % 65536 == 0:
            moved()
    return kept, total


def _read_binary(f, path: Path, count: int, dim: int, wanted: set[bytes] | None, moved) -> tuple[dict, int]:
    kept: dict[str, np.ndarray] = {}
    buf, pos, size = b"", 0, 4 * dim

    def fill(needed: int, record: int) -> None:
        nonlocal buf, pos
        while len(buf) - pos < needed:
            chunk = f.read(max(CHUNK, needed))
            if not chunk:
                raise ValueError(f"{path}: the file ends in record {record + 1} of {count} (truncated?)")
            buf, pos = buf[pos:] + chunk, 0

    for r in range(count):
        fill(1, r)
        while buf[pos : pos + 1] in (b"\n", b"\r"):
            pos += 1
            fill(1, r)
        end = buf.find(b" ", pos, pos + MAX_WORD_BYTES)
        while end < 0:
            if len(buf) - pos >= MAX_WORD_BYTES:
                raise ValueError(f"{path}: record {r + 1} has no word within {MAX_WORD_BYTES} bytes (not word2vec?)")
            fill(len(buf) - pos + 1, r)
            end = buf.find(b" ", pos, pos + MAX_WORD_BYTES)
        word = buf[pos:end]
        fill(len(word) + 1 + size, r)  # may move the buffer: offsets from pos only
        start = pos + len(word) + 1
        if (wanted is None or word in wanted) and word.decode("utf-8", "replace") not in kept:
            vector = np.frombuffer(buf, dtype="<f4", count=dim, offset=start).astype(np.float32)
            if not np.isfinite(vector).all():
                raise ValueError(f"{path} record {r + 1}: non-finite value in the vector of {word!r}")
            kept[word.decode("utf-8", "replace")] = vector
        pos = start + size
        if r % 65536 == 0:
            moved()
    rest = buf[pos:] + f.read(64)
    if rest.strip():
        raise ValueError(f"{path}: data after the {count} records of the header; is the header's count right?")
    return kept, count


# -- part vectors ---------------------------------------------------------------------------------------------------


def embed_parts(
    vocabularies: Sequence[Sequence[str]], vectors: WordVectors, oov: str = "error", seed: int = 0
) -> tuple[list[np.ndarray], dict]:
    """One float32 array [len(vocabularies[c]), d] per part (S, P, O) under the phrase rule, and a report.

    Report: oov mode, source, phrases averaged, the OOV words and what was done with them.
    """
    if oov not in OOV_MODES:
        raise ValueError(f"unknown OOV mode {oov!r}; choose one of {', '.join(OOV_MODES)}")
    if len(vocabularies) != 3:
        raise ValueError(f"vocabularies must be 3 lists of part texts (S, P, O), got {len(vocabularies)}")
    index, d = vectors.index, vectors.dim
    out, averaged = [], 0
    missing: dict[str, str] = {}  # OOV word -> the first part text it occurs in
    empty: list[str] = []  # parts with no known word (skip mode)
    for c, vocab in enumerate(vocabularies):
        rows = np.zeros((len(vocab), d), dtype=np.float32)
        for i, text in enumerate(vocab):
            found, oov_words = resolve_phrase(text, index)
            for word in oov_words:
                missing.setdefault(word, f"{'SPO'[c]} {text!r}")
            parts = [vectors.matrix[j] for j in found]
            if oov == "random":
                parts += [random_vector(word, d, seed) for word in oov_words]
            if not parts:
                empty.append(f"{'SPO'[c]} {text!r}")
                continue
            averaged += len(parts) > 1
            rows[i] = np.mean(parts, axis=0, dtype=np.float64)
        out.append(rows)
    if missing and oov == "error":
        listed = ", ".join(f"{word!r} (in {where})" for word, where in list(missing.items())[:MAX_LISTED])
        raise ValueError(
            f"{len(missing)} word(s) of the facts not in the word vectors {vectors.source}: {listed}"
            f"{' ...' if len(missing) > MAX_LISTED else ''}; pass --oov skip to leave them out of their phrases, "
            "--oov random for seeded random vectors, or use word vectors that have them"
        )
    if empty:
        raise ValueError(
            f"{len(empty)} fact part(s) with no word in the word vectors {vectors.source} (--oov skip never gives a "
            f"part a silent zero vector): {', '.join(empty[:MAX_LISTED])}{' ...' if len(empty) > MAX_LISTED else ''}"
            "; pass --oov random or use word vectors that have them"
        )
    report = {
        "source": vectors.source,
        "oov": oov,
        "rule": PHRASE_RULE,
        "dim": d,
        "phrases_averaged": int(averaged),
        "oov_words": sorted(missing),
    }
    if oov == "skip":
        report["skipped_words"] = sorted(missing)
    if oov == "random":
        report |= {"random_words": sorted(missing), "seed": seed}
    return out, report


def sentence_vectors(texts: Sequence[str], embed=None, model: str | None = None, cache_dir=None) -> np.ndarray:
    """L2-normalised sentence-model embeddings of `texts` (default: the packaged all-MiniLM-L6-v2, cached per text)."""
    from lifelong.concepts import text_similarity as ts

    try:
        if embed is None:
            model = model or ts.model_id()
            embed = ts.load_embedder()
        elif not model:
            raise ValueError("an injected embedder needs a model name (model=...) to key its caches")
        return ts.embed_texts(list(texts), embed, model, TEXT_KIND, cache_dir)
    except ImportError as exc:
        raise ValueError(
            f"fact vectors without a word-vector file use the offline sentence model, which is not usable here "
            f"({exc}); install it with {ts.INSTALL_HINT}, or pass --vectors FILE (word2vec or GloVe)"
        ) from None


def _source_identity(vectors: str | Path | None, model: str | None, embed) -> dict:
    if vectors is not None:
        path = Path(vectors)
        if not path.is_file():
            raise FileNotFoundError(f"word-vector file {path} not found")
        stat = path.stat()
        return {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    if embed is not None:
        if not model:
            raise ValueError("an injected embedder needs a model name (model=...) to key its caches")
        return {"model": model}
    from lifelong.concepts import text_similarity as ts

    try:
        return {"model": model or ts.model_id()}
    except ImportError as exc:
        raise ValueError(f"{exc}; or pass --vectors FILE (word2vec or GloVe)") from None


def cached_part_vectors(
    vocabularies: Sequence[Sequence[str]],
    vectors: str | Path | None = None,
    *,
    oov: str = "error",
    seed: int = 0,
    cache_dir: str | Path | None = None,
    embed=None,
    model: str | None = None,
    progress: bool | None = None,
) -> tuple[list[np.ndarray], dict]:
    """`embed_parts` over a word-vector file, or sentence vectors without one, cached on disk under `cache_dir`
    (default `cache_root()`) by a hash of (source identity: path + size + mtime or model id, vocabularies, phrase
    rule, OOV mode and seed); a second call with the same inputs reads the file instead of the vectors."""
    if oov not in OOV_MODES:
        raise ValueError(f"unknown OOV mode {oov!r}; choose one of {', '.join(OOV_MODES)}")
    vocabularies = [list(v) for v in vocabularies]
    identity = _source_identity(vectors, model, embed)
    material = {"source": identity, "vocabularies": vocabularies, "rule": PHRASE_RULE}
    if vectors is not None:
        material |= {"oov": oov, "seed": seed if oov == "random" else None}
    key = hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    path = Path(cache_dir or cache_root()) / f"{key}.npz"
    stored = _read_cache(path, [len(v) for v in vocabularies])
    if stored is not None:
        return stored[0], {**stored[1], "cache": "hit", "cache_file": str(path)}
    if vectors is not None:
        words = read_word_vectors(vectors, words=[t for v in vocabularies for t in v], progress=progress)
        parts, report = embed_parts(vocabularies, words, oov=oov, seed=seed)
    else:
        texts = sorted({t for v in vocabularies for t in v})
        if not texts:
            raise ValueError("no fact parts to embed; give at least one fact")
        table = sentence_vectors(texts, embed, identity["model"])
        row = {t: i for i, t in enumerate(texts)}
        parts = [table[[row[t] for t in v]].reshape(len(v), table.shape[1]) for v in vocabularies]
        report = {"source": f"sentence model {identity['model']}", "rule": "whole part text", "dim": table.shape[1]}
    buffer = io.BytesIO()
    np.savez(buffer, s=parts[0], p=parts[1], o=parts[2], report=np.array(json.dumps(report)))
    atomic_write_bytes(path, buffer.getvalue())
    return parts, {**report, "cache": "miss", "cache_file": str(path)}


def _read_cache(path: Path, sizes: list[int]) -> tuple[list[np.ndarray], dict] | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            parts = [data[name].astype(np.float32, copy=False) for name in "spo"]
            report = json.loads(str(data["report"]))
        if [len(p) for p in parts] != sizes or len({p.shape[1] for p in parts}) != 1:
            raise ValueError(f"part sizes {[p.shape for p in parts]} do not match vocabularies of {sizes}")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        warnings.warn(f"fact-vector cache {path} is unreadable ({exc}); recomputing it", stacklevel=3)
        return None
    return parts, report


def fact_matrix(part_ids: np.ndarray, part_vectors: Sequence[np.ndarray]) -> np.ndarray:
    """t(f) = [w(S); w(P); w(O)] as float32 [n, 3d]; part id -1 (undefined) gives a zero block."""
    ids = np.asarray(part_ids)
    if ids.ndim != 2 or ids.shape[1] != 3 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise ValueError(f"part_ids must be an int array [n, 3] (S, P, O; -1 = undefined), got {ids.dtype} {ids.shape}")
    if len(part_vectors) != 3 or len({np.shape(v)[1] for v in part_vectors}) != 1:
        raise ValueError(
            f"part_vectors must be 3 arrays [vocab_c, d] with one d, got {[np.shape(v) for v in part_vectors]}"
        )
    d = np.shape(part_vectors[0])[1]
    out = np.zeros((len(ids), 3 * d), dtype=np.float32)
    for c in range(3):
        table = np.asarray(part_vectors[c], dtype=np.float32)
        column = ids[:, c]
        if len(column) and (column.max() >= len(table) or column.min() < -1):
            raise ValueError(f"part {'SPO'[c]}: ids must lie in -1..{len(table) - 1} (vocabulary size {len(table)})")
        defined = column >= 0
        out[defined, c * d : (c + 1) * d] = table[column[defined]]
    return out


__all__ = [
    "FORMATS",
    "OOV_MODES",
    "PHRASE_RULE",
    "WordVectors",
    "cache_root",
    "cached_part_vectors",
    "detect_format",
    "embed_parts",
    "fact_matrix",
    "lookup_keys",
    "random_vector",
    "read_word_vectors",
    "resolve_phrase",
    "sentence_vectors",
]
