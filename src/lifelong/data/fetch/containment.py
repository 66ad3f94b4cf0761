"""The one check for every output path a fetch builds from outside data: it must stay inside its folder.

Archive members, converter options (`rename`, `root`, ...), paths read from annotation files (VOC's
`<filename>`), CSV cells and server file names all pass through `inside(folder, relative, ...)` before anything
is read from or written to the path. The check is lexical first (no absolute path, no drive, no `..`, no control
character), then real: the resolved path must lie under the resolved folder, so a link on the way cannot lead
out either.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path, PurePosixPath

from lifelong.core.errors import DataError

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class UnsafePathError(DataError, ValueError):
    """A path from outside data that would leave its folder: names the dataset, the field and the value."""


def _refuse(dataset: str, field: str, value: str, why: str) -> UnsafePathError:
    return UnsafePathError(f"{dataset}: {field} {value!r} {why}; refused (nothing is written outside the dataset)")


def relative_parts(value: str, *, dataset: str, field: str) -> tuple[str, ...]:
    """The parts of a relative POSIX path (backslashes count as separators); UnsafePathError when it could leave."""
    if not isinstance(value, str) or not value:
        raise _refuse(dataset, field, str(value), "is not a path")
    if _CONTROL.search(value):
        raise _refuse(dataset, field, value, "holds a control character")
    path = PurePosixPath(value.replace("\\", "/"))
    if path.is_absolute() or re.match(r"^[A-Za-z]:", value):
        raise _refuse(dataset, field, value, "is an absolute path")
    if ".." in path.parts:
        raise _refuse(dataset, field, value, "climbs out with '..'")
    parts = tuple(p for p in path.parts if p != ".")
    if not parts:
        raise _refuse(dataset, field, value, "names the folder itself, not a file in it")
    return parts


@functools.lru_cache(maxsize=64)
def _real_folder(folder: str) -> str:
    """A folder's resolved path, kept: a conversion checks thousands of paths against the same few folders."""
    return os.path.realpath(folder)


def inside(folder: Path, value: str, *, dataset: str, field: str) -> Path:
    """`folder / value`, checked to stay inside `folder` (lexically and after resolving links on the way)."""
    target = folder.joinpath(*relative_parts(value, dataset=dataset, field=field))
    root = _real_folder(os.fspath(folder))
    real = os.path.realpath(target)
    if real != root and not real.startswith(root.rstrip(os.sep) + os.sep):
        raise _refuse(dataset, field, value, f"leads outside {folder} through a link")
    return target


def plain_name(value: str, *, dataset: str, field: str) -> str:
    """A single file name (no folder part) from outside data, e.g. a server's Content-Disposition name."""
    parts = relative_parts(value, dataset=dataset, field=field)
    if len(parts) != 1:
        raise _refuse(dataset, field, value, "must be a file name, not a path")
    return parts[0]
