"""At COLUMNS=80: every --help and the main tables keep their tokens whole (issue 22, "80 columns").

A token is broken when a name, option, default, path or run id the output must show is not found whole in the
output once box characters are stripped and whitespace is normalised (a fold inside a table cell or a wrap
inside a word puts a space, or another column's text, in the middle of it), or when a line ends in a fragment
such as `meta-` (a word wrapped at its hyphen).
"""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from lifelong.cli import app

WIDTH = 80
BOX = re.compile(r"[\u2500-\u257f]")  # rich's box-drawing characters (tables, help panels)
PLACEHOLDER = re.compile(r"<(?:bool|str|int|float|path|file|dir|uuid|datetime|list\[[^\]]*\]|[a-z]+ range)>")


def _invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=WIDTH, env={"COLUMNS": str(WIDTH)})


def _flat(text: str) -> str:
    """The output as one line of words: box characters gone, every run of whitespace one space."""
    return " ".join(BOX.sub(" ", text).split())


def broken_tokens(output: str, expected: list[str]) -> list[str]:
    """The expected tokens not found whole, and lines that end inside a word (`meta-` + `test`)."""
    flat = _flat(output)
    broken = [token for token in expected if token and token not in flat]
    for line in BOX.sub(" ", output).splitlines():
        words = line.split()
        if words and re.search(r"[A-Za-z0-9]-$", words[-1]):
            broken.append(f"line ends in a word fragment: {line.strip()!r}")
    return broken


def _commands(command=None, path=()):
    command = command or typer.main.get_command(app)
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _expected_help_tokens(command) -> list[str]:
    tokens = []
    for param in command.params:
        if param.param_type_name == "option":  # an argument shows its metavar, not its Python name
            tokens += [*param.opts, *getattr(param, "secondary_opts", [])]
        if param.metavar:
            tokens.append(param.metavar)
        default = param.default
        if getattr(param, "show_default", True) and default not in (None, "", (), []) and not callable(default):
            if not isinstance(default, bool):
                tokens.append(str(default))
    return [t for t in tokens if t]


COMMANDS = list(_commands())


def test_the_walk_finds_every_group_and_command():
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "streams", "data status", "bench import", "cog run", "facts split"} <= paths


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(p) or "lifelong" for p, _ in COMMANDS])
def test_help_at_80_columns(path, command):
    result = _invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    text = result.output
    assert not PLACEHOLDER.findall(text), PLACEHOLDER.findall(text)
    assert "…" not in text  # no value, default or description cut
    assert "{" + "}" not in text and not re.search(r"\{[A-Z_]+\}", text)  # usage lines say NAME, not {NAME}
    assert max(len(line) for line in text.splitlines()) <= WIDTH, text
    assert not broken_tokens(text, _expected_help_tokens(command)), (broken_tokens(text, []), text)
    for name in getattr(command, "commands", {}):
        assert name in _flat(text).split()  # every subcommand listed, whole


def test_the_check_catches_a_broken_token():
    folded = "│ nevis-major-d │ 70 │\n│ omain-object  │    │"
    assert broken_tokens(folded, ["nevis-major-domain-object"])
    assert broken_tokens("Counts per part: meta-\ntest", [])
    assert not broken_tokens("│ nevis-major-domain-object │ 70 │", ["nevis-major-domain-object"])


def _table_ok(args, expected):
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    assert not broken_tokens(result.output, expected), (broken_tokens(result.output, expected), result.output)
    return result.output


def test_streams_tables_fit_80_columns():
    names = [row["name"] for row in json.loads(_invoke("streams", "--json").output)]
    for args in (("streams",), ("streams", "-v")):
        output = _table_ok(args, names)
        assert max(len(line) for line in output.splitlines()) <= WIDTH, output
    _table_ok(("streams", "nevis-full"), ["ablation", "meta_test_from_year", "shuffle_seed", "2019"])


def test_learners_tables_fit_80_columns():
    names = [row["name"] for row in json.loads(_invoke("learners", "--json").output)]
    output = _table_ok(("learners",), names)
    assert max(len(line) for line in output.splitlines()) <= WIDTH, output
    options = json.loads(_invoke("learners", "finetune-knn", "--json").output)["options"]
    _table_ok(("learners", "finetune-knn"), [o["name"] for o in options] + [o["default"] for o in options])


def test_data_status_paths_can_be_copied(tmp_path):
    root = tmp_path / "a-rather-long-folder-name-for-the-data-root" / "that-goes-on" / "datasets"
    (root / "mnist").mkdir(parents=True)
    expected = [str(root), f"{root}/caltech101/", "pascal_2012", "mnist#1"]
    output = _table_ok(("data", "status", "--stream", "nevis-tiny", "--data-root", root), expected)
    assert f"  caltech101: {root}/caltech101/" in output.splitlines()  # a line of its own, unbroken


def test_data_inspect_keeps_paths_and_values_whole(tmp_path):
    from support import write_png

    root = tmp_path / "a-rather-long-folder-name-for-images" / "that-goes-on-and-on" / "pets"
    for i in range(3):
        write_png(root / "cat" / f"{i}.png", i, 8, 8)
        write_png(root / "dog" / f"{i}.png", i + 5, 8, 8)
    output = _table_ok(("data", "inspect", f"folder:{root}"), [f"folder:{root}", "cat=3", "dog=3"])
    assert "None" not in output and "{" not in output and "[" not in output  # no Python reprs


@pytest.mark.slow  # two runs of nearest-mean over mini: ~10 s on a 2-core machine
def test_results_table_keeps_run_ids_whole(tmp_path):
    runs = tmp_path / "runs"
    made = _invoke("run", "--stream", "mini", "--learner", "nearest-mean", "--out", runs, "--seeds", "2")
    assert made.exit_code == 0, made.output
    run_ids = sorted(p.name for p in runs.iterdir() if p.is_dir())
    assert len(run_ids) == 2
    result = _invoke("results", runs)
    if result.exit_code != 0:  # `results --out RUNS` before the runs folder became its argument
        result = _invoke("results", "--out", runs)
    assert result.exit_code == 0, result.output
    assert not broken_tokens(result.output, run_ids), (broken_tokens(result.output, run_ids), result.output)
