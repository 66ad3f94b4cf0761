"""The `lifelong` command: run learners over streams, inspect streams, learners, data and results.

Thin typer adapters, one module per group of commands; this module builds the app in `--help` order.
"""

from __future__ import annotations

import signal
import sys
import warnings

import typer

from lifelong.cli.bench import bench_app
from lifelong.cli.cog import cog_app
from lifelong.cli.common import parse_options
from lifelong.cli.data import data_app
from lifelong.cli.facts import facts_app
from lifelong.cli.help_format import readable_help
from lifelong.cli.listing import learners_command, streams_command
from lifelong.cli.models import models_app
from lifelong.cli.results import matrix_summary_cli, report_command, results_command
from lifelong.cli.run import run_command
from lifelong.cli.training import pretrain_cli, pretrain_ssl_cli, transfer_matrix_cli

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
        app(prog_name=prog_name)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach the reader
                pass
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)
