"""Facts: the Fact type, parsing fact texts, reading a facts CSV (line numbers in errors), distinct facts."""

from __future__ import annotations

import numpy as np
import pytest

from lifelong.facts.facts import (
    Fact,
    distinct_facts,
    fact_from_parts,
    images_per_fact,
    parse_fact,
    read_facts_csv,
)


def test_fact_is_a_plain_tuple_with_kind_and_text():
    assert Fact("lion") == ("lion", None, None)
    assert Fact("lion", "eating", "meat") == ("lion", "eating", "meat")
    assert [f.kind for f in (Fact("a"), Fact("a", "b"), Fact("a", "b", "c"), Fact("a", None, "c"))] == [
        "S",
        "SP",
        "SPO",
        "SO",
    ]
    assert Fact("lion").text == "<lion>"
    assert Fact("tiger", "jumping").text == "<tiger, jumping>"
    assert Fact("lion", "eating", "meat").text == "<lion, eating, meat>"
    assert Fact("man", None, "hat").text == "<man, *, hat>"


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("<lion>", Fact("lion")),
        ("<tiger, jumping>", Fact("tiger", "jumping")),
        ("<lion,eating,meat>", Fact("lion", "eating", "meat")),
        ("lion, eating, meat", Fact("lion", "eating", "meat")),
        ("  <  polar    bear ,  sitting on , ice floe > ", Fact("polar bear", "sitting on", "ice floe")),
        ("<man, *, hat>", Fact("man", None, "hat")),
        ("<man, , hat>", Fact("man", None, "hat")),
        ("<man, standing, *>", Fact("man", "standing")),
        ("<Lion>", Fact("Lion")),
    ],
)
def test_parse(text, fact):
    parsed = parse_fact(text)
    assert parsed == fact
    assert parse_fact(parsed.text) == parsed  # the canonical text parses back


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty fact"),
        ("   ", "empty fact"),
        ("<lion, eating", "unbalanced brackets"),
        ("lion>", "unbalanced brackets"),
        ("<<lion>>", "unbalanced brackets"),
        ("<a, b, c, d>", "4 parts"),
        ("<*, eating>", "a fact needs a subject"),
        ("<, eating, meat>", "a fact needs a subject"),
    ],
)
def test_parse_errors_start_with_where_and_quote_the_text(text, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_fact(text, where="facts.csv line 7")
    assert str(info.value).startswith("facts.csv line 7: ")
    assert repr(text) in str(info.value)


def test_fact_from_parts():
    assert fact_from_parts(" lion ", "", "*") == Fact("lion")
    assert fact_from_parts("lion", "eating", None) == Fact("lion", "eating")
    with pytest.raises(ValueError, match="^here: a fact needs a subject"):
        fact_from_parts("*", "eating", "meat", where="here: ")
    with pytest.raises(ValueError, match="contains ','"):
        fact_from_parts("hot, dog", "", "")


def write(path, text):
    path.write_text(text)
    return path


def test_read_csv_with_images(tmp_path):
    (tmp_path / "img").mkdir()
    for name in ("a.png", "b.png", "c.png"):
        (tmp_path / "img" / name).write_bytes(b"")
    csv_path = write(
        tmp_path / "facts.csv",
        "s,P,o,Image\nlion,eating,meat,img/a.png\n\nlion,,,img/b.png\nlion,eating,meat,img/c.png\n",
    )
    table = read_facts_csv(csv_path)
    assert table.facts == [Fact("lion", "eating", "meat"), Fact("lion"), Fact("lion", "eating", "meat")]
    assert table.images == [str(tmp_path / "img" / n) for n in ("a.png", "b.png", "c.png")]
    unique, index = distinct_facts(table.facts)
    assert unique == [Fact("lion", "eating", "meat"), Fact("lion")]
    assert index.tolist() == [0, 1, 0]
    np.testing.assert_array_equal(images_per_fact(table.facts), [2, 1])


def test_read_csv_fact_column_and_no_images(tmp_path):
    csv_path = write(tmp_path / "facts.csv", 'fact\n"<lion, eating, meat>"\n<tiger>\n')
    table = read_facts_csv(csv_path)
    assert table.facts == [("lion", "eating", "meat"), ("tiger", None, None)] and table.images is None


def test_missing_images_are_listed_with_their_lines(tmp_path):
    (tmp_path / "there.png").write_bytes(b"")
    rows = "".join(f"lion,,,missing{i}.png\n" for i in range(7))
    csv_path = write(tmp_path / "facts.csv", "S,P,O,image\nlion,,,there.png\n" + rows)
    with pytest.raises(FileNotFoundError, match=r"7 of 8 images are missing") as info:
        read_facts_csv(csv_path)
    assert "line 3: missing0.png" in str(info.value) and "and 2 more" in str(info.value)
    assert str(csv_path) in str(info.value)
    assert len(read_facts_csv(csv_path, check_images=False).facts) == 8
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(FileNotFoundError, match="8 of 8"):
        read_facts_csv(csv_path, image_root=other)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("S,P,O\n", "no facts"),
        ("X,Y\nlion,eating\n", "no S column"),
        ("S,P,O,fact\na,b,c,<a>\n", "both a 'fact' column"),
        ("S,S,O\na,b,c\n", "appears 2 times"),
        ("S,P,O\nlion,eating,meat\n*,eating,meat\n", "line 3: a fact needs a subject"),
        ("S,P,O\nlion,eating\n", "line 2: 2 cells but the header has 3"),
        ("fact\n<lion\n", "line 2: unbalanced brackets"),
        ("S,P,O,image\nlion,,,\n", "line 2: empty image cell"),
    ],
)
def test_csv_errors_name_the_file_and_line(tmp_path, text, message):
    csv_path = write(tmp_path / "facts.csv", text)
    with pytest.raises(ValueError, match=message) as info:
        read_facts_csv(csv_path)
    assert str(csv_path) in str(info.value)


def test_missing_csv(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_facts_csv(tmp_path / "nope.csv")
