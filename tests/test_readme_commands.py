"""Every `lifelong ...` command in the README and docs/*.md parses as written, and docs/cli.md's table is current.

A command is checked the way `--help` would be: the click command is resolved from the words, then
`make_context` parses the arguments (unknown options, bad choices, wrong types, missing values) without running
anything. A synopsis line (one with `[`, `...`, `<NAME>`, `a|b` alternatives or an ALL-CAPS placeholder such as
`DIR`, `RUN_DIR`, `KEY=VALUE`) documents a shape, not a command to copy: it is not parsed, but its command and
every option it names must exist. No documented command may use a hidden (deprecated) option.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from markdown_it import MarkdownIt

try:  # typer >= 0.26 ships its own click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer on the real click
    from click.exceptions import UsageError

from lifelong.cli import app

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_INSTALL = (
    "python3 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e '.[ray,hf,bench,test,models,fetch]' "
    "&& .venv/bin/lifelong run"
)
README_TESTS = ".venv/bin/python -m pytest -q"
PLACEHOLDER = re.compile(
    r"\[|(?<!,)\.\.\.|…"  # optional parts, repetition (`8,16,...,16384` is a value, checked as written)
    r"|<[A-Za-z_ ]+>"  # <NAME>
    r"|\w\|\w"  # local|ray alternatives (a shell pipe has spaces around it)
    r"|(?<![\w.-])[A-Z][A-Z0-9_]+(?![\w])"  # DIR, RUN_DIR, KEY=VALUE, HEAD_IP:6379, FACTS.csv
)
OPERATOR = re.compile(r"\s(?:&&|\|\||\||;|>>|>|2>&1|<)\s|\s#.*$")  # spaced shell operators, `# comments`
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")  # COLUMNS=80 lifelong ...


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    text: str  # the command as the user copies it (continuations joined, comment stripped)

    @property
    def args(self) -> list[str]:
        """The words after `lifelong`, as the shell hands them over."""
        return shlex.split(self.text)[1:]

    @property
    def synopsis(self) -> bool:
        return bool(PLACEHOLDER.search(self.text))


def code_lines(markdown: str) -> list[tuple[int, str]]:
    """(line number, text) of every line in a fenced or indented shell code block, continuations joined.

    A continuation is a line ending in a backslash or, in a synopsis, a following line that starts with `[` or `-`.
    """
    lines: list[tuple[int, str]] = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type not in ("fence", "code_block") or token.map is None:
            continue
        if token.type == "fence" and token.info.strip() not in ("", "sh", "bash", "shell", "console"):
            continue  # yaml, toml, python: not shell
        first = token.map[0] + (1 if token.type == "fence" else 0)
        joined = False
        for offset, line in enumerate(token.content.splitlines()):
            text = line.strip()
            if lines and (joined or (lines[-1][1].lstrip().startswith("lifelong ") and text[:1] in "[-" and text)):
                lines[-1] = (lines[-1][0], f"{lines[-1][1]} {text}")
            else:
                lines.append((first + offset + 1, text))
            joined = text.endswith("\\")
            if joined:
                lines[-1] = (lines[-1][0], lines[-1][1][:-1].rstrip())
    return lines


def lifelong_commands(markdown: str, name: str) -> list[Command]:
    """Every `lifelong ...` command of one markdown text, `name` its file (for messages)."""
    found: list[Command] = []
    for number, line in code_lines(markdown):
        for segment in OPERATOR.split(f" {line} "):
            words = segment.split()
            while words and ASSIGNMENT.fullmatch(words[0]):
                words.pop(0)
            if words and (words[0] == "lifelong" or words[0].endswith("/lifelong")):
                found.append(Command(f"{name}:{number}", " ".join(["lifelong", *words[1:]])))
    return found


def all_commands() -> list[Command]:
    return [c for path in DOCS for c in lifelong_commands(path.read_text(), str(path.relative_to(ROOT)))]


def resolve(args: list[str]):
    """(click command, its name as typed, the remaining words) for `lifelong ARGS`; raises LookupError if none."""
    command, name, rest = typer.main.get_command(app), "lifelong", list(args)
    while getattr(command, "commands", None) and rest and not rest[0].startswith("-"):
        word = rest.pop(0)
        if word not in command.commands:
            raise LookupError(f"no command `{name} {word}`")
        command, name = command.commands[word], f"{name} {word}"
    return command, name, rest


def option_names(command, *, hidden: bool) -> set[str]:
    """The names of a command's visible options, or of its hidden (deprecated) ones."""
    return {
        name
        for p in command.params
        if getattr(p, "param_type_name", "") == "option" and bool(getattr(p, "hidden", False)) == hidden
        for name in [*p.opts, *p.secondary_opts]
    }


def parse_error(args: list[str]) -> str | None:
    """Why `lifelong ARGS` does not parse (or uses a hidden, deprecated option), or None when it is fine.

    Nothing is run."""
    try:
        command, name, rest = resolve(args)
        command.make_context(name, list(rest), resilient_parsing=False)  # click consumes the list it parses
    except LookupError as error:
        return str(error)
    except UsageError as error:
        return f"{type(error).__name__}: {error.format_message()}"
    deprecated = sorted(option_names(command, hidden=True) & {word.split("=")[0] for word in rest})
    return f"`{name}` {', '.join(deprecated)} is deprecated (hidden from --help)" if deprecated else None


def synopsis_error(text: str) -> str | None:
    """Why a synopsis line is stale: its command does not exist, or it names an option the command lacks."""
    words = [w for w in text.split()[1:] if re.fullmatch(r"[a-z][a-z-]*", w)]
    try:
        command, name, _ = resolve(words)
    except LookupError as error:
        return str(error)
    known = option_names(command, hidden=False)
    named = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", text))
    unknown = sorted(named - known - {"--help"})
    return f"`{name}` has no {', '.join(unknown)}" if unknown else None


COMMANDS = all_commands()
CONCRETE = [c for c in COMMANDS if not c.synopsis]
SYNOPSIS = [c for c in COMMANDS if c.synopsis]


def test_the_docs_hold_commands_to_check():
    """The extraction finds the commands it should: a broken extractor would make the tests below vacuous."""
    texts = {c.text for c in CONCRETE}
    assert "lifelong run" in texts  # the install line's `.venv/bin/lifelong run`
    assert len(CONCRETE) >= 30, [c.text for c in CONCRETE]
    assert len(SYNOPSIS) >= 10, [c.text for c in SYNOPSIS]


@pytest.mark.parametrize("command", CONCRETE, ids=lambda c: f"{c.where} {c.text}"[:100])
def test_documented_command_parses(command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths in the docs resolve to nothing here
    error = parse_error(command.args)
    assert error is None, f"{command.where}: `{command.text}` does not parse: {error}"


@pytest.mark.parametrize("command", SYNOPSIS, ids=lambda c: f"{c.where} {c.text}"[:100])
def test_documented_synopsis_names_real_options(command):
    error = synopsis_error(command.text)
    assert error is None, f"{command.where}: `{command.text}`: {error}"


def test_parse_check_catches_what_a_user_would_hit():
    """The checker itself: a bad flag, a bad value, an unknown command and a stale synopsis are caught."""
    assert parse_error(["run", "--learner", "finetune", "--seeds", "3"]) is None
    assert "NoSuchOption" in parse_error(["run", "--no-such-flag"])
    assert "BadParameter" in parse_error(["run", "--seeds", "three"])
    assert parse_error(["nope"]) == "no command `lifelong nope`"
    probe = typer.Typer()

    @probe.command()
    def main(new: int = typer.Option(0, "--new"), old: int = typer.Option(0, "--old", hidden=True)) -> None: ...

    command = typer.main.get_command(probe)
    assert option_names(command, hidden=True) == {"--old"} and "--new" in option_names(command, hidden=False)
    assert synopsis_error("lifelong run [--stream NAME] [--seeds K] [-o KEY=VALUE ...]") is None
    assert synopsis_error("lifelong run [--no-such-flag]") == "`lifelong run` has no --no-such-flag"
    markdown = (
        "text\n\n    lifelong run --out DIR [--seed N]\n        [--seeds K]\n    lifelong streams  # list\n\n"
        "```\nlifelong run --learner independent \\\n    -o trials=2 > log.txt\n```\n\n```yaml\nlifelong: x\n```\n"
    )
    found = lifelong_commands(markdown, "probe.md")
    assert [(c.where, c.text, c.synopsis) for c in found] == [
        ("probe.md:3", "lifelong run --out DIR [--seed N] [--seeds K]", True),
        ("probe.md:5", "lifelong streams", False),
        ("probe.md:8", "lifelong run --learner independent -o trials=2", False),
    ]
    assert found[2].args == ["run", "--learner", "independent", "-o", "trials=2"]


def test_readme_top_commands_are_the_ones_ci_runs():
    """The README opens with the install+run line and the test line; `.ci/run` runs the test line verbatim."""
    readme = (ROOT / "README.md").read_text().splitlines()
    code = [line.strip() for line in readme[:15] if line.startswith("    ")]
    assert code[:2] == [README_INSTALL, README_TESTS]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert README_TESTS in [line.strip() for line in ci]


def test_cli_table_in_docs_is_current():
    spec = importlib.util.spec_from_file_location("cli_table", ROOT / "scripts" / "cli_table.py")
    cli_table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli_table)
    doc = (ROOT / "docs" / "cli.md").read_text()
    assert cli_table.replace_table(doc, cli_table.render()) == doc, (
        "docs/cli.md's command table is stale: run python scripts/cli_table.py --write"
    )


def test_links_between_the_readme_and_docs_resolve():
    """The README is a front page of links: each relative link names a file that exists."""
    broken = [
        f"{path.relative_to(ROOT)}: {target}"
        for path in DOCS
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text())
        if "://" not in target and not (path.parent / target).exists()
    ]
    assert not broken, broken
