"""`lifelong facts split` from Python (lifelong.api): the split and its balance as objects, the same file as the
command line writes, nothing printed, progress through a callback, the CLI's errors, --resume and --overwrite."""

from __future__ import annotations

import csv

import pytest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app

ROWS = [("lion", "eating", "meat"), ("lion", "eating", "meat"), ("tiger", "eating", "meat"), ("lion", "", ""),
        ("tiger", "eating", ""), ("car", "driving", "road"), ("bus", "driving", "road"), ("bus", "driving", "road"),
        ("car", "*", "*")]  # fmt: skip
WORDS = {"lion": [1, 0.1, 0, 0], "tiger": [1, 0.2, 0, 0], "eating": [0.9, 0, 0.1, 0], "meat": [1, 0, 0.2, 0],
         "car": [0, 0, 1, 0.1], "bus": [0, 0, 1, 0.2], "driving": [0, 0.1, 0.9, 0], "road": [0, 0, 1, 0.3]}  # fmt: skip


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFELONG_FACT_VECTORS_CACHE", str(tmp_path / "cache"))
    facts = tmp_path / "facts.csv"
    with open(facts, "w", newline="") as f:
        csv.writer(f).writerows([("S", "P", "O"), *ROWS])
    vectors = tmp_path / "words.txt"
    vectors.write_text("\n".join([f"{len(WORDS)} 4"] + [w + " " + " ".join(map(str, v)) for w, v in WORDS.items()]))
    return tmp_path, facts, vectors


def invoke(*args):
    return CliRunner().invoke(app, ["facts", "split", *map(str, args)], terminal_width=200)


def test_a_semantic_split_is_the_clis_and_prints_nothing(files, capsys):
    tmp_path, facts, vectors = files
    calls = []
    spec = api.FactsSplitSpec(facts, tmp_path / "api.csv", tasks=2, vectors=vectors)
    result = api.facts_split(spec, progress=lambda *call: calls.append(call))
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    assert calls and calls[-1][0].startswith("reading words.txt")  # the word vectors' bar, as a callback
    cli = invoke(facts, "--vectors", vectors, "--tasks", 2, "--out", tmp_path / "cli.csv")
    assert cli.exit_code == 0, cli.output
    assert (tmp_path / "api.csv").read_text() == (tmp_path / "cli.csv").read_text()
    assert f"balance score {result.score:.3f}" in cli.output and result.images == len(ROWS)
    frame = result.frame()
    assert list(frame.columns) == ["S", "P", "O", "task"] and len(frame) == len(result.facts) == 7
    animals = set(frame[frame.S.isin(["lion", "tiger"])].task)
    vehicles = set(frame[frame.S.isin(["car", "bus"])].task)
    assert len(animals) == len(vehicles) == 1 and animals != vehicles  # the two themes are the two tasks
    assert sum(row["images"] for row in result.split.balance) == len(ROWS) and len(result.split.info["variants"]) > 1


def test_a_random_split_notes_the_unused_vectors_instead_of_printing(files, capsys):
    tmp_path, facts, vectors = files
    spec = api.FactsSplitSpec(
        facts, tmp_path / "r.csv", tasks=3, method="random", seed=4, candidates=20, vectors=vectors
    )
    result = api.facts_split(spec)
    assert capsys.readouterr().err == "" and result.notes == ["--vectors is not used by --method random"]
    assert sorted(result.frame().task.unique()) == [0, 1, 2] and result.split.seed == 4


@pytest.mark.parametrize(
    ("changes", "args", "message"),
    [
        ({"method": "sideways"}, ["--method", "sideways"], "unknown --method 'sideways'; choose one of semantic"),
        ({"oov": "maybe"}, ["--oov", "maybe"], "unknown --oov 'maybe'"),
        ({"tasks": 8}, ["--tasks", "8"], "cannot split the 7 distinct facts of"),
    ],
)
def test_bad_values_raise_usage_errors_with_the_clis_words(files, changes, args, message):
    tmp_path, facts, vectors = files
    fields = {"facts_csv": facts, "out": tmp_path / "s.csv", "tasks": 2, "method": "random"} | changes
    with pytest.raises(api.UsageError) as raised:
        api.facts_split(api.FactsSplitSpec(**fields))
    assert message in str(raised.value)
    result = invoke(facts, "--method", "random", "--tasks", 2, "--out", tmp_path / "s.csv", *args)
    assert result.exit_code == 2 and message in result.output


def test_an_existing_split_is_refused_kept_with_resume_and_redone_with_overwrite(files):
    tmp_path, facts, _ = files
    spec = api.FactsSplitSpec(facts, tmp_path / "s.csv", tasks=2, method="random")
    first = api.facts_split(spec)
    with pytest.raises(api.ResumeRefused, match="--resume"):
        api.facts_split(spec)
    kept = api.facts_split(api.FactsSplitSpec(facts, tmp_path / "s.csv", tasks=2, method="random", resume=True))
    assert kept.already_done and kept.split is None
    redone = api.facts_split(api.FactsSplitSpec(facts, tmp_path / "s.csv", tasks=2, method="random", overwrite=True))
    assert not redone.already_done and list(redone.split.task) == list(first.split.task)
