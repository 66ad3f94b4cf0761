"""Print the table of every `lifelong` command x the convention options (docs/cli.md), or write it there.

    python scripts/cli_table.py           # print the markdown table
    python scripts/cli_table.py --write   # replace the table between the markers in docs/cli.md

The table is generated from the command itself (typer's click tree), so it cannot drift from the CLI:
tests/test_readme_commands.py fails when docs/cli.md holds a stale copy.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
START = "<!-- cli-table:start -->"
END = "<!-- cli-table:end -->"
COLUMNS = ("--out", "--resume", "--overwrite", "--skip-corrupt", "--seed", "--seeds", "--json")


def commands() -> list[tuple[str, object]]:
    """Every leaf command of `lifelong` as (`"bench import"`, click command), in alphabetical order."""
    import typer

    from lifelong.cli import app

    found: list[tuple[str, object]] = []

    def walk(command: object, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name in sorted(subcommands):
                walk(subcommands[name], [*path, name])
        else:
            found.append((" ".join(path), command))

    walk(typer.main.get_command(app), [])
    return found


def option_names(command: object) -> set[str]:
    """The long and short names of a command's options (arguments and hidden, deprecated options are not)."""
    names: set[str] = set()
    for parameter in command.params:
        if getattr(parameter, "param_type_name", "") == "option" and not getattr(parameter, "hidden", False):
            names.update(parameter.opts)
            names.update(parameter.secondary_opts)
    return names


def render() -> str:
    """The markdown table: one row per command, `yes` or `-` per convention option."""
    lines = ["| command | " + " | ".join(f"`{c}`" for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, command in commands():
        names = option_names(command)
        cells = ["yes" if column in names else "-" for column in COLUMNS]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def replace_table(text: str, table: str) -> str:
    """`text` with what lies between the markers replaced by `table`; an error if the markers are missing."""
    head, start, rest = text.partition(START)
    body, end, tail = rest.partition(END)
    if not start or not end:
        raise ValueError(f"{DOC} has no {START} ... {END} markers")
    return f"{head}{START}\n{table}{END}{tail}"


def main(argv: list[str]) -> int:
    if argv not in ([], ["--write"]):
        print("usage: python scripts/cli_table.py [--write]", file=sys.stderr)
        return 2
    table = render()
    if argv == ["--write"]:
        DOC.write_text(replace_table(DOC.read_text(), table))
        print(f"wrote the table into {DOC}")
    else:
        print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
