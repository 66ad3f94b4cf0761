"""The `lifelong` command: run learners over streams, inspect streams, learners, data and results.

Thin typer adapters, one module per group of commands; this module builds the app in `--help` order.
"""

from __future__ import annotations

import signal
import sys
import warnings

import typer

from lifelong.cli import _startup  # noqa: F401  first: portable mode's variables before numpy and torch load
from lifelong.cli.bench import bench_app
from lifelong.cli.cog import cog_app
from lifelong.cli.common import handled, parse_options
from lifelong.cli.data import data_app
from lifelong.cli.facts import facts_app
from lifelong.cli.help_format import readable_help
from lifelong.cli.listing import learners_command, streams_command
from lifelong.cli.models import models_app
from lifelong.cli.results import matrix_summary_cli, report_command, results_command
from lifelong.cli.run import run_command
from lifelong.cli.training import pretrain_cli, pretrain_ssl_cli, transfer_matrix_cli
from lifelong.commands import portable

__all__ = ["app", "main", "parse_options"]

app = typer.Typer(
    help="Lifelong benchmarking of visual learners: task streams, compute-aware results.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(data_app, name="data")
app.add_typer(bench_app, name="bench")
app.add_typer(cog_app, name="cog")
app.add_typer(facts_app, name="facts")
app.add_typer(models_app, name="models")
app.command("run")(run_command)
app.command("streams")(streams_command)
app.command("learners")(learners_command)
app.command("report")(report_command)
app.command("pretrain")(pretrain_cli)
app.command("matrix-summary")(matrix_summary_cli)
app.command("pretrain-ssl")(pretrain_ssl_cli)
app.command("transfer-matrix")(transfer_matrix_cli)
app.command("results")(results_command)


def _print_version(value: bool) -> None:
    """`lifelong --version`: the installed versions of lifelong and torch (package metadata: nothing is imported)."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    typer.echo(f"lifelong {version('lifelong')}")
    try:
        typer.echo(f"torch {version('torch')}")
    except PackageNotFoundError:
        typer.echo("torch not installed")
    raise typer.Exit()


@app.callback()
def _app_options(
    show_version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the versions of lifelong and torch."
    ),
) -> None:
    """The options of `lifelong` itself, before any command (the help text is the app's)."""


readable_help(app)  # help pages like a usual CLI's at any width: `--out OUT`, bare flags, words never cut


def _notes_for_renamed_options() -> None:
    """A learner option given by its former name is said as a `note:` line, as the CLI says everything else (Python
    would print a warning with a source line); other warnings show as before."""
    from lifelong.commands.terminal import note
    from lifelong.learners.options import RenamedOptionWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001, ANN202 (warnings' hook)
        if issubclass(category, RenamedOptionWarning):
            note(str(message))
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(prog_name: str = "lifelong") -> None:
    """The `lifelong` command. Once a command has ended, its exit code stands: the output is flushed and a late
    Ctrl-C or SIGTERM is ignored while the interpreter shuts down (Python resets its own handlers then, so a
    signal during the teardown of torch and friends would otherwise kill a finished command with 130/143)."""
    _notes_for_renamed_options()
    try:
        handled(portable.ensure_if_requested)  # LIFELONG_PORTABLE=1: every command in portable mode, checked first
        app(prog_name=prog_name)
    except typer.Exit as refused:  # `handled` said why portable mode cannot hold here
        raise SystemExit(refused.exit_code) from None
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach the reader
                pass
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
