"""Word vectors of fact parts: the three file formats read alike, the phrase rule, OOV modes, the cache, t(f)."""

from __future__ import annotations

import gzip
import hashlib
import os

import numpy as np
import pytest

from lifelong.facts.vectors import (
    PHRASE_RULE,
    WordVectors,
    cached_part_vectors,
    detect_format,
    embed_parts,
    fact_matrix,
    random_vector,
    read_word_vectors,
)

WORDS = ["lion", "eating", "meat", "polar", "bear", "Ice", "polar_bear", "é-word"]


def vectors(dim=4, seed=0):
    return np.random.default_rng(seed).normal(size=(len(WORDS), dim)).astype(np.float32)


def write_text(path, matrix, header=True):
    lines = [f"{len(WORDS)} {matrix.shape[1]}"] if header else []
    lines += [w + " " + " ".join(repr(float(x)) for x in row) for w, row in zip(WORDS, matrix, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_binary(path, matrix, newline=True):
    data = f"{len(WORDS)} {matrix.shape[1]}\n".encode()
    for word, row in zip(WORDS, matrix, strict=True):
        data += word.encode() + b" " + row.astype("<f4").tobytes() + (b"\n" if newline else b"")
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", ["text", "glove", "binary", "binary-no-newline", "text-gz", "binary-gz", "bin-suffix"])
def test_formats_read_to_the_same_vectors(tmp_path, kind):
    matrix = vectors()
    if kind.startswith("text"):
        path = write_text(tmp_path / "v.txt", matrix)
    elif kind == "glove":
        path = write_text(tmp_path / "v.txt", matrix, header=False)
    elif kind == "bin-suffix":
        path = write_binary(tmp_path / "v.bin", matrix)
    else:
        path = write_binary(tmp_path / "v.w2v", matrix, newline=kind != "binary-no-newline")
    if kind.endswith("gz"):
        gz = tmp_path / (path.name + ".gz")
        gz.write_bytes(gzip.compress(path.read_bytes()))
        path = gz
    expected_format = "glove" if kind == "glove" else "text" if kind.startswith("text") else "binary"
    assert detect_format(path)[0] == expected_format
    read = read_word_vectors(path, progress=False)
    assert read.words == WORDS
    np.testing.assert_array_equal(read.matrix, matrix)
    assert read.matrix.dtype == np.float32 and read.dim == 4
    some = read_word_vectors(path, words=["meat", "lion"], progress=False)
    assert some.words == ["lion", "meat"]
    np.testing.assert_array_equal(some.matrix, matrix[[0, 2]])


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_binary_reads_across_buffer_refills(tmp_path, monkeypatch, chunk):
    from lifelong.facts import vectors as module

    monkeypatch.setattr(module, "CHUNK", chunk)
    matrix = vectors(dim=5, seed=2)
    for newline in (True, False):
        path = write_binary(tmp_path / f"v{newline}.bin", matrix, newline=newline)
        read = read_word_vectors(path, progress=False)
        assert read.words == WORDS
        np.testing.assert_array_equal(read.matrix, matrix)
        np.testing.assert_array_equal(read_word_vectors(path, words=["bear"], progress=False).matrix, matrix[[4]])


def test_reading_keeps_what_the_phrase_rule_needs(tmp_path):
    path = write_text(tmp_path / "v.txt", vectors())
    read = read_word_vectors(path, words=["Polar Bear", "ice"], progress=False)
    assert read.words == ["polar", "bear", "polar_bear"]  # the whole phrase, its words, and their lower-case forms
    read = read_word_vectors(path, words=["meat-eating"], progress=False)
    assert read.words == ["eating", "meat"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2 3\na 1 2 3\nb 1 2\n", "line 3: 2 values after the word 'b', expected 3"),
        ("2 3\na 1 2 3\nb 1 2 3 4\n", "line 3: 4 values"),
        ("2 3\na 1 2 3\nb 1 x 3\n", "line 3: non-numeric value 'x'"),
        ("a 1 2\nb 1 2 3\n", "line 2: 3 values after the word 'b', expected 2"),
        ("a 1 x\n", "line 1: non-numeric value 'x'"),
        ("3 3\na 1 2 3\nb 1 2 3\n", "header says 3 words but the file holds 2"),
        ("2 3\na 1 2 3\nb 1 nan 3\n", "line 3: non-finite"),
        ("hello\n", "neither a word2vec header"),
    ],
)
def test_text_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "v.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_word_vectors(path, progress=False)


def test_glove_tokens_with_spaces(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("a 1 2\n. . . 3 4\nb 5 6\n")
    read = read_word_vectors(path, progress=False)
    assert read.words == ["a", ". . .", "b"]


def test_binary_errors(tmp_path):
    path = write_binary(tmp_path / "v.bin", vectors())
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match=r"ends in record 8 of 8 \(truncated"):
        read_word_vectors(path, progress=False)
    with pytest.raises(FileNotFoundError, match="nope.bin"):
        read_word_vectors(tmp_path / "nope.bin")


def table(words, matrix):
    return WordVectors(list(words), np.asarray(matrix, dtype=np.float32), "test vectors")


def test_phrase_rule():
    matrix = vectors()
    wv = table(WORDS, matrix)
    parts, report = embed_parts([["lion", "LION", "polar bear", "Lion-Meat"], ["Ice", "Ice_bear"], []], wv)
    np.testing.assert_array_equal(parts[0][0], matrix[0])
    np.testing.assert_array_equal(parts[0][1], matrix[0])  # exact first, then lower-case
    np.testing.assert_array_equal(parts[0][2], matrix[6])  # the whole phrase as polar_bear
    np.testing.assert_allclose(parts[0][3], (matrix[0] + matrix[2]) / 2, rtol=1e-6)  # split on hyphens, mean
    np.testing.assert_array_equal(parts[1][0], matrix[5])  # "Ice" found by its exact form (no "ice" in the file)
    with pytest.raises(ValueError, match="'ice'"):
        embed_parts([["ice"], [], []], wv)  # lower-casing is a fallback, not case-insensitive matching
    np.testing.assert_allclose(parts[1][1], (matrix[5] + matrix[4]) / 2, rtol=1e-6)
    assert parts[2].shape == (0, 4)
    assert report["phrases_averaged"] == 2 and report["oov_words"] == [] and report["rule"] == PHRASE_RULE


def test_oov_error_lists_the_words():
    wv = table(WORDS[:3], vectors()[:3])
    vocab = [["lion", "zebra stripes"], [f"w{i}" for i in range(25)], ["meat"]]
    with pytest.raises(ValueError, match=r"27 word\(s\) of the facts not in the word vectors") as info:
        embed_parts(vocab, wv)
    message = str(info.value)
    assert "'zebra' (in S 'zebra stripes')" in message and "'w17'" in message and "'w18'" not in message
    assert "--oov skip" in message and "--oov random" in message


def test_oov_skip_and_random():
    matrix = vectors()
    wv = table(WORDS, matrix)
    parts, report = embed_parts([["lion zebra"], ["eating"], ["meat"]], wv, oov="skip")
    np.testing.assert_array_equal(parts[0][0], matrix[0])
    assert report["skipped_words"] == ["zebra"]
    with pytest.raises(ValueError, match=r"1 fact part\(s\) with no word .* S 'zebra'"):
        embed_parts([["zebra"], ["eating"], ["meat"]], wv, oov="skip")
    parts, report = embed_parts([["lion zebra", "Zebra"], ["eating"], ["meat"]], wv, oov="random", seed=3)
    zebra = random_vector("zebra", 4, seed=3)
    assert np.isclose(np.linalg.norm(zebra), 1.0)
    np.testing.assert_allclose(parts[0][1], zebra)  # the lower-cased word is hashed
    np.testing.assert_allclose(parts[0][0], (matrix[0] + zebra) / 2, rtol=1e-6)
    assert report["random_words"] == ["Zebra", "zebra"] and report["seed"] == 3
    again, _ = embed_parts([["lion zebra", "Zebra"], ["eating"], ["meat"]], wv, oov="random", seed=3)
    np.testing.assert_array_equal(again[0], parts[0])
    other, _ = embed_parts([["Zebra"], ["eating"], ["meat"]], wv, oov="random", seed=4)
    assert not np.allclose(other[0][0], zebra)
    with pytest.raises(ValueError, match="unknown OOV mode"):
        embed_parts([["lion"], [], []], wv, oov="zero")


def test_cache_hit_returns_identical_arrays(tmp_path):
    path = write_text(tmp_path / "v.txt", vectors())
    vocab = [["lion", "polar bear"], ["eating"], ["meat", "zebra"]]
    cache = tmp_path / "cache"
    first, report = cached_part_vectors(vocab, path, oov="random", cache_dir=cache, progress=False)
    assert report["cache"] == "miss" and report["random_words"] == ["zebra"]
    second, again = cached_part_vectors(vocab, path, oov="random", cache_dir=cache, progress=False)
    assert again["cache"] == "hit" and again["random_words"] == ["zebra"]
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    cached_part_vectors(vocab, path, oov="random", seed=1, cache_dir=cache, progress=False)
    assert len(list(cache.glob("*.npz"))) == 2  # the seed of random vectors is part of the key
    os.utime(path, ns=(1, 1))  # a changed file is another source
    assert cached_part_vectors(vocab, path, oov="random", cache_dir=cache, progress=False)[1]["cache"] == "miss"
    with pytest.raises(ValueError, match="'zebra'"):
        cached_part_vectors(vocab, path, cache_dir=cache, progress=False)


def test_cache_root_env(monkeypatch, tmp_path):
    from lifelong.facts.vectors import cache_root

    monkeypatch.setenv("LIFELONG_FACT_VECTORS_CACHE", str(tmp_path))
    assert cache_root() == tmp_path


class FakeEmbedder:
    def __init__(self):
        self.texts = []

    def __call__(self, texts):
        self.texts.extend(texts)
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        return np.array([np.random.default_rng(s).normal(size=6) for s in seeds])


def test_sentence_vectors_embed_whole_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text"))
    embed = FakeEmbedder()
    vocab = [["lion", "polar bear"], ["eating"], []]
    parts, report = cached_part_vectors(vocab, embed=embed, model="fake", cache_dir=tmp_path / "c")
    assert sorted(embed.texts) == ["eating", "lion", "polar bear"]
    assert [p.shape for p in parts] == [(2, 6), (1, 6), (0, 6)]
    np.testing.assert_allclose(np.linalg.norm(parts[0], axis=1), 1.0, rtol=1e-6)
    again, report = cached_part_vectors(vocab, embed=embed, model="fake", cache_dir=tmp_path / "c")
    assert report["cache"] == "hit" and len(embed.texts) == 3


def test_missing_sentence_model_says_what_to_do(tmp_path, monkeypatch):
    from lifelong.concepts import text_similarity as ts

    monkeypatch.setattr(ts, "PACKAGE", "no_such_package_here")
    with pytest.raises(ValueError, match=r"lifelong\[text\].*--vectors"):
        cached_part_vectors([["lion"], [], []], cache_dir=tmp_path)


def test_fact_matrix_zero_blocks():
    s = np.arange(6, dtype=np.float32).reshape(3, 2)
    p = np.full((1, 2), 7, dtype=np.float32)
    o = np.full((2, 2), 9, dtype=np.float32)
    t = fact_matrix(np.array([[2, -1, -1], [0, 0, 1], [1, -1, 0]]), [s, p, o])
    assert t.dtype == np.float32 and t.shape == (3, 6)
    np.testing.assert_array_equal(t[0], [4, 5, 0, 0, 0, 0])
    np.testing.assert_array_equal(t[1], [0, 1, 7, 7, 9, 9])
    np.testing.assert_array_equal(t[2], [2, 3, 0, 0, 9, 9])
    with pytest.raises(ValueError, match="part P: ids must lie in -1..0"):
        fact_matrix(np.array([[0, 1, -1]]), [s, p, o])
