"""Custom streams from a YAML or TOML manifest, so users stream their own data without code.

name: my-stream              # optional, defaults to the file name
meta_test_from_year: 2019    # optional; tasks from this year on are meta-test
tasks:
  - name: fashion
    source: idx              # builtin | idx | fashion-mnist | folder | csv
    path: data/fashion       # relative to the manifest's folder
    year: 2017
    kind: multi-class        # optional: read from the data when absent
    resolution: 28
    domain: fashion
    classes: [...]           # optional: skips reading the data when the stream is built
    options: {}              # passed to the source
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from lifelong.core.streams import Stream
from lifelong.core.tasks import TaskKind
from lifelong.suites.spec import TaskSpec, build_stream

PATH_SOURCES = ("idx", "folder", "csv")
MANIFEST_FIELDS = {"name", "meta_test_from_year", "tasks"}
TASK_FIELDS = {"name", "source", "path", "year", "kind", "resolution", "domain", "classes", "options"}


def read_manifest(path: str | Path) -> dict[str, Any]:
    """Parse a .yaml/.yml/.toml manifest into a dict, with errors naming the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"stream manifest {path} does not exist")
    try:
        if path.suffix == ".toml":
            return tomllib.loads(path.read_text())
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(path.read_text())
            return data if isinstance(data, dict) else {}
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"stream manifest {path} is not valid {path.suffix[1:].upper()}: {exc}") from exc
    raise ValueError(f"stream manifest {path} must end in .yaml, .yml or .toml")


def manifest_specs(path: str | Path) -> tuple[str, list[TaskSpec], int | None]:
    """The stream name, task specs and meta-test start year that a manifest declares."""
    path = Path(path)
    data = read_manifest(path)
    unknown = set(data) - MANIFEST_FIELDS
    if unknown:
        raise ValueError(
            f"stream manifest {path}: unknown field(s) {sorted(unknown)}; allowed: {sorted(MANIFEST_FIELDS)}"
        )
    meta_test_from_year = data.get("meta_test_from_year")
    if meta_test_from_year is not None and (
        isinstance(meta_test_from_year, bool) or not isinstance(meta_test_from_year, int)
    ):
        raise ValueError(
            f"stream manifest {path}: meta_test_from_year must be a year (integer), got {meta_test_from_year!r}"
        )
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        raise ValueError(f"stream manifest {path} needs a non-empty `tasks` list")
    specs = [_task_spec(path, i, entry) for i, entry in enumerate(tasks)]
    return str(data.get("name") or path.stem), specs, meta_test_from_year


def load_manifest(path: str | Path, **stream_options: Any) -> Stream:
    """The stream a manifest declares; errors from its data name the manifest too."""
    name, specs, meta_test_from_year = manifest_specs(path)
    try:
        return build_stream(name, specs, meta_test_from_year=meta_test_from_year, **stream_options)
    except (FileNotFoundError, ValueError) as exc:
        raise type(exc)(f"stream manifest {path}: {exc}") from exc


def _task_spec(path: Path, index: int, entry: Any) -> TaskSpec:
    where = f"stream manifest {path}, task {index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: each task must be a mapping, got {entry!r}")
    unknown = set(entry) - TASK_FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(TASK_FIELDS)}")
    for required in ("name", "source"):
        if required not in entry:
            raise ValueError(f"{where}: missing `{required}`")
    source = str(entry["source"])
    if source in PATH_SOURCES:
        if "path" not in entry:
            raise ValueError(f"{where} ({entry['name']!r}): source {source!r} needs a `path`")
        source = f"{source}:{(path.parent / Path(str(entry['path'])).expanduser()).resolve()}"
    elif source == "builtin":
        raise ValueError(f"{where} ({entry['name']!r}): name the generator, e.g. `source: builtin:letters`")
    elif "path" in entry:
        raise ValueError(f"{where}: `path` is only used with sources {PATH_SOURCES}, not {source!r}")
    try:
        kind = TaskKind(entry["kind"]) if "kind" in entry else None
    except ValueError:
        raise ValueError(f"{where}: kind {entry['kind']!r} must be 'multi-class' or 'multi-label'") from None
    name = str(entry["name"])
    if not name or "/" in name or "#" in name:
        raise ValueError(f"{where}: task name {name!r} must be non-empty and contain no '/' or '#'")
    year, resolution = entry.get("year"), entry.get("resolution", 32)
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
        raise ValueError(f"{where} ({name!r}): year must be an integer, got {year!r}")
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 1:
        raise ValueError(f"{where} ({name!r}): resolution must be a positive integer, got {resolution!r}")
    classes, options = entry.get("classes", []), entry.get("options", {})
    if not isinstance(classes, list):
        raise ValueError(f"{where} ({name!r}): classes must be a list of names, got {classes!r}")
    if not isinstance(options, dict):
        raise ValueError(f"{where} ({name!r}): options must be a mapping, got {options!r}")
    return TaskSpec(
        name=name,
        source=source,
        year=year,
        kind=kind,
        domain=str(entry.get("domain", "")),
        resolution=resolution,
        classes=tuple(str(c) for c in classes),
        options=options,
    )
