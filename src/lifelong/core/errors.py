"""The toolkit's own exceptions: what the Python API raises and the `lifelong` command prints unchanged.

Every error a user can act on is a `LifelongError`; its message is written for the command line (it names the
option, `--resume`, the file or the item) and reads the same from Python, where each option is the spec field of
the same name (`--max-unpacked` is `max_unpacked`). Each family also keeps the builtin base its callers already
catch (`UsageError` is a ValueError, `DataError` a ValueError, ...). Ctrl-C in long work raises `Interrupted`,
a KeyboardInterrupt saying what is kept and how to continue.
"""

from __future__ import annotations


class LifelongError(Exception):
    """An error the user can act on; `lifelong` prints `error: <message>` and exits with code 2."""


class UsageError(LifelongError, ValueError):
    """A bad option value, or options that exclude each other."""


class DataError(LifelongError, ValueError):
    """Missing, corrupt or unexpected data: a file, an image, a label, a manifest, a store."""


class ResumeRefused(LifelongError, ValueError):
    """An output (or its work folder) exists, or holds other settings, and neither resume nor overwrite applies."""


class Interrupted(KeyboardInterrupt):
    """Long work stopped by Ctrl-C or SIGTERM; `kept` says what is kept and how to continue (may be empty)."""

    def __init__(self, kept: str = "") -> None:
        super().__init__(kept)
        self.kept = kept

    def __str__(self) -> str:
        return ("Interrupted. " + self.kept).rstrip()


__all__ = ["DataError", "Interrupted", "LifelongError", "ResumeRefused", "UsageError"]
