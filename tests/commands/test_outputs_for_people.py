"""At 80 columns the outputs read as words and figures (issue 40, "output that is not for people"): `bench compare`'s
table fits with one progress bar; `data fetch --list` cuts nothing and says which licences are not recorded;
`learners NAME` gives every option its own full sentences; `cog pretrain`'s summary and the run tables' titles."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from commands.test_help_80_columns import _invoke, broken_tokens

from lifelong.commands.listing_api import learner_options, learners

WIDTH = 80


@pytest.fixture
def columns_80(monkeypatch):
    """The consoles at 80 columns, as the CLI tests run them."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


# -- bench compare ---------------------------------------------------------------------------------------------------
METHODS = ["random-mean", "aipw", "anchor-points", "disco", "gp-irt", "irt", "p-irt", "pca-impute", "ridge"]
METHODS += ["ridge-anchors", "sort-search", "stratified-mean", "lifelong"]


def _row(split: str, budget: int, method: str, mae: float) -> dict:
    """A table.json row with wide figures: two-digit errors, intervals on every figure a method can have."""
    row = dict(split=split, budget=budget, method=method, models=36, seeds=2, mae=mae, rmse=mae * 1.1)
    row |= dict(mae_interval=(mae * 0.8, mae * 1.2), ratio=mae / 0.1, ratio_interval=(mae / 0.12, mae / 0.08))
    row |= dict(max_error=0.9999, kendall_tau=-0.12, seconds=123.456, coverage=0.61, width=0.4570)
    return row | dict(sample_error=0.2582, brier=0.239)


def test_the_compare_table_fits_80_columns_and_keeps_every_method_whole():
    from lifelong.commands.bench_compare_table import table_lines

    rows = [_row(split, 1000, m, 0.05 + 0.02 * i) for split in ("extrapolation", "interpolation")
            for i, m in enumerate(METHODS)]  # fmt: skip
    versus = [dict(split=r["split"], budget=r["budget"], other=r["method"], difference=-0.1443,
                   interval=(-0.1609, -0.1263)) for r in rows if r["method"] != "lifelong"]  # fmt: skip
    lines = table_lines(rows, versus)
    assert max(len(line) for line in lines) <= WIDTH, "\n".join(lines)
    text = "\n".join(lines)
    assert not broken_tokens(text, [*METHODS, "extrapolation", "interpolation", "-14.43 [-16.09,-12.63]*"])
    for method in METHODS:  # each method in the error table and in the second one
        assert sum(line.split()[:1] == [method] for line in lines) == 4  # 2 tables x 2 splits


def test_the_compare_protocol_shows_one_bar_and_each_record_only_with_verbose(tmp_path):
    rng = np.random.default_rng(0)
    ability, difficulty = rng.uniform(0.3, 0.95, 40), rng.uniform(0, 1, 300)
    matrix = rng.uniform(size=(40, 300)) < ability[:, None] * (1 - 0.5 * difficulty[None, :]) + 0.2
    np.save(tmp_path / "m.npy", matrix.astype(np.uint8))
    args = ["bench", "compare", "--matrix", tmp_path / "m.npy", "--splits", "interpolation,extrapolation"]
    args += ["--seeds", "2", "--budgets", "20", "--methods", "random-mean,stratified-mean"]
    quiet = _invoke(*args, "--out", tmp_path / "a")
    assert quiet.exit_code == 0, quiet.output
    assert "mean abs error" not in quiet.output and not re.search(r"^\[\d+/\d+\]", quiet.output, re.M)
    assert _widest(quiet.stdout) <= WIDTH, quiet.stdout
    verbose = _invoke(*args, "--out", tmp_path / "b", "--verbose")
    assert verbose.exit_code == 0, verbose.output
    assert len(re.findall(r"^\[\d+/8\] .*mean abs error", verbose.output, re.M)) == 8  # 2 splits x 2 seeds x 2


# -- data fetch --list and what a fetch checked ------------------------------------------------------------------------
def test_the_dataset_list_cuts_nothing_and_names_unrecorded_licences():
    import json

    rows = json.loads(_invoke("data", "fetch", "--list", "--json").output)
    result = _invoke("data", "fetch", "--list")
    assert result.exit_code == 0, result.output
    assert "…" not in result.output and _widest(result.output) <= WIDTH, result.output
    assert not broken_tokens(result.output, [r["name"] for r in rows])
    unknown = sum(r["licence"]["name"] == "unknown" for r in rows)
    assert unknown and not re.search(r"\bunknown\b", result.output)
    assert f"{unknown} licences not recorded in the manifest" in " ".join(result.output.split())
    assert "nevis-full" in result.output  # the streams: each named once below the table


def test_a_fetch_says_what_was_checked_and_what_nothing_checked(columns_80, capsys):
    from lifelong.commands.data_fetch import DataFetchResult
    from lifelong.commands.data_fetch_console import print_fetched
    from lifelong.data.fetch.install import FetchOutcome
    from lifelong.data.fetch.verify import Verified

    unverified = Verified("a.zip", "unverified (no published checksum)", {"sha256": "0" * 64})
    outcomes = [
        FetchOutcome("mnist", "up to date", Path("/data/mnist")),
        FetchOutcome("lab", "installed", Path("/data/lab"), (Verified("b.gz", "md5", {}), unverified)),
    ]
    print_fetched(DataFetchResult(Path("/data"), outcomes))
    out = " ".join(capsys.readouterr().out.split())
    assert "checked by -" not in out and "unverified" not in out
    assert "mnist: up to date (/data/mnist; nothing downloaded: the folder is a finished fetch" in out
    assert "checked by md5; 1 file not checked: no published checksum (sha256 recorded)" in out


# -- learners NAME -----------------------------------------------------------------------------------------------------
def test_every_learner_option_has_its_own_full_sentences_in_cli_words():
    for info in learners():
        options = learner_options(info.name).options
        helps = [o["help"] for o in options]
        for option in options:
            text, where = option["help"], f"{info.name} -o {option['name']}: {option['help']!r}"
            assert text != "-" and text[0].isupper() and text.endswith("."), where
            opened, closed = text.count("(") + text.count("["), text.count(")") + text.count("]")  # (0, 1] is one
            assert opened == closed, where  # nothing cut inside parentheses
            assert "`" not in text and "docstring" not in text and not re.search(r"[A-Z]\w*Config\b", text), where
            assert helps.count(text) == 1, where  # no text shared with (or meant for) another option


def test_option_help_reads_field_docstrings_along_the_bases_and_else_the_sentence_that_names_it():
    from lifelong.learners.options import option_help

    @dataclasses.dataclass
    class Base:
        """`speed`: how fast, in steps. Other words about `speed` and `size` here."""

        size: int = 1
        """How big."""
        speed: int = 2

    @dataclasses.dataclass
    class Child(Base):
        size: int = 3
        """How big, in the child."""

    assert option_help("size", Child) == "How big, in the child." and option_help("size", Base) == "How big."
    assert option_help("speed", Child) == "speed: how fast, in steps."  # only the sentence it begins
    assert option_help("colour", Child) == "-"


def test_learners_name_prints_each_help_under_its_own_option(columns_80):
    result = _invoke("learners", "ewc")
    assert result.exit_code == 0, result.output
    blocks = dict(re.findall(r"^  (\w+): [^\n]*\n((?:      [^\n]*\n)*)", result.output, re.M))
    said = {name: " ".join(text.split()) for name, text in blocks.items()}
    assert "Fisher" in said["ewc_decay"] and "ewc, si, mas or lwf" in said["penalty"]
    assert said["lwf_alpha"].startswith("The weight of Learning without Forgetting")
    assert "(see" not in result.output and _widest(result.output) <= WIDTH


# -- cog pretrain, titles, counts --------------------------------------------------------------------------------------
def test_cog_pretrain_prints_hyper_parameters_flops_and_images_in_words(columns_80, capsys):
    from lifelong.commands.cog_console import print_pretrain_result
    from lifelong.commands.cog_pretrain import CogPretrainResult

    summary = {"path": "enc/sup.pt", "architecture": "resnet_mini", "pretraining_flops": 16449493893120.0}
    summary |= {"trial": {"lr": 0.05, "label_smoothing": 0.1}, "split_sizes": {"train": 2560, "dev": 640}}
    summary |= {"source_options": {}, "dev_error": 0.41234567, "encoder": "enc/sup.pt", "kind": "supervised"}
    summary |= {"images": 3200, "concepts": "seen"}
    print_pretrain_result(CogPretrainResult(Path("enc/sup.pt"), summary, False, 412.0))
    out = capsys.readouterr().out
    assert "{" not in out and "16449493893120" not in out and "source options" not in out, out
    assert out.splitlines()[:2] == ["encoder: enc/sup.pt", "kind: supervised"]
    for line in ("hyper-parameters (the best trial's): lr 0.05, label smoothing 0.1", "pretraining FLOPs: 1.645e+13",
                 "images per split: train 2560, dev 640", "images: 3,200 training images of the seen concepts",
                 "dev error (the best trial's): 0.4123"):  # fmt: skip
        assert line in out.splitlines(), out


LONG_ID = "facts-mini-fact-expertgate-a1b2c3d4e5f6-seed0"


COMMON = {"run_id": LONG_ID, "cumulative_train_flops": 1.0e9, "events_done": 4, "events_total": 4, "path": "r"}


def _one_task_run() -> dict:
    """A run's result over one (meta-test) task, as `print_run` takes it."""
    record = {"type": "predict", "event": 1, "task": "digits", "year": 2019, "task_kind": "multi-class"}
    record |= {"meta_test": True, "error": 0.25, "cumulative_train_flops": 1.0e9}
    one_task = {"records": [record], "mean_error": 0.25, "meta_test_mean_error": 0.25, "num_evaluated_tasks": 1}
    return COMMON | one_task | {"num_meta_test_tasks": 1, "corrupt_skipped": 0, "skipped_labels": 0}


def test_table_titles_keep_run_ids_whole_above_narrow_tables(columns_80, capsys):
    from lifelong.commands.accuracy_matrix_console import print_matrix_run
    from lifelong.commands.fact_console import print_fact_run
    from lifelong.commands.run_console import print_run

    print_fact_run(COMMON | {"fact_R": [[0.5, 0.1], [0.4, 0.6]], "fact_b": [0.05, 0.05]})
    print_matrix_run(COMMON | {"accuracy_matrix": [[0.5, 0.4], [0.45, 0.6]], "matrix_protocol": "iid"})
    print_run(_one_task_run())
    out = capsys.readouterr().out
    assert sum(LONG_ID in line for line in out.splitlines()) == 3, out  # each title's run id on one line


def test_a_run_of_one_task_says_task(columns_80, capsys):
    from lifelong.commands.run_console import print_run

    print_run(_one_task_run())
    flat = " ".join(capsys.readouterr().out.split())
    assert "mean error 0.2500 over 1 task; meta-test mean error 0.2500 over 1 task;" in flat, flat
