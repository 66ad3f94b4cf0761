"""Where a Nevis'22 task's data is, and what a user must provide when it is missing (path checks only).

Each dataset lives at <data root>/<dataset name>/ in any layout of lifelong.data.sources.LAYOUTS, detected
from file names. The data root is the `data_root` argument, else $LIFELONG_DATA, else ~/.lifelong/data.
Fashion-MNIST is also found in Debian's `dataset-fashion-mnist` package when the data root lacks it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lifelong.data.roots import resolve_data_root
from lifelong.data.sources import LAYOUTS, detect_source
from lifelong.data.sources.idx import FASHION_MNIST_DIRS

# Copies installed outside the data root: dataset name -> (source spec, folders that hold it).
SYSTEM_COPIES: dict[str, tuple[str, tuple[Path, ...]]] = {"fashion_mnist": ("fashion-mnist", FASHION_MNIST_DIRS)}


@dataclass(frozen=True)
class TaskData:
    """Where one dataset's data was looked for and, when found, the source spec that loads it."""

    name: str
    expected: Path
    source: str | None
    looked_in: tuple[str, ...]

    @property
    def available(self) -> bool:
        return self.source is not None

    def provide(self, display: str, published: str) -> str:
        """One line telling the user what to put where."""
        layouts = "; ".join(text for _, text in LAYOUTS)
        return f"put {display} ({published}) in {self.expected}/ as one of: {layouts}"


def locate(name: str, data_root: str | os.PathLike | None = None) -> TaskData:
    """Find dataset `name` under the data root (then in SYSTEM_COPIES), from file and folder names only."""
    expected = resolve_data_root(data_root) / name
    looked = [str(expected)]
    source = detect_source(expected)
    if source is None and name in SYSTEM_COPIES:
        spec, folders = SYSTEM_COPIES[name]
        for folder in folders:
            looked.append(str(folder))
            if (detect_source(folder) or "").startswith("idx:"):
                source = spec
                break
    return TaskData(name, expected, source, tuple(looked))
