"""The `table` converter: images and labels listed in text tables (CSV, whitespace lists), joined when needed.

Each table row becomes a record: column name -> cell (names from the header row; "0", "1", ... without one;
a header one shorter than the rows leaves the first column "0"). Options (any of them may be set per table in
`tables = [{table = "glob", split = "train", ...}, ...]`, over the shared ones):

- which tables: `table` (a glob or a list of globs, relative to the unpacked artefacts) or `table_splits =
  {glob = split}`; `table_label` a regex on a table's path whose groups `label` / `split` apply to its rows
  (per-class lists such as PASCAL's ImageSets/<class>_train.txt).
- reading: `delimiter` ("," or "whitespace"), `maxsplit` (whitespace only: the last column keeps its blanks),
  `header` (true), `skip_rows`, `comment`, `encoding`.
- joining: `join = [{table = "glob", on = "0", columns = {"1" = "label"}}]` adds the named columns of another
  table's row with the same key (`main_on` names the key column of this table when it differs; `main_key` a
  regex whose group `key` takes the key from that cell, e.g. '^(?P<key>[^/]+)/'); `many = true` makes it an
  inner one-to-many join: one record per matching row of the other table, none when no row matches (DDSM).
- which rows: `keep = {column = value or [values]}`, `exclude` (a regex on the path cell), `missing = "skip"`,
  `first_per_image = true` (only the first row of each image in each split counts: pandas' drop_duplicates).
- the image: `path` (the column, default "path"), `path_sub = ["regex", "replacement"]` (re.sub on the path cell
  first, e.g. ['^.*/([^/]+/[^/]+)$', 'jpeg/\\1']; exclude, path_label and the image see the result),
  `path_template` ("{}"), `path_root` (the table's folder by default; "/" the root of the unpacked artefacts, or a
  folder there); `path_search = true` finds the image by its file name anywhere in the artefacts (NIH's
  images_001..012 folders).
- the label: `label` (a column), or `labels` with `labels_separator` (several per row), or `label_columns` (0/1
  or -1/1 columns; `positive` the values that count, ["1", "1.0"]; `one_of = true` for one class per row with
  `none_label` for rows with none), or `path_label` (a regex on the path cell with group `label`, and maybe
  `split`), or the table's `table_label`; `label_map` renames.
- the split: the table's own (`table_splits`, or `table_split` in a `tables` entry), or `split` as a column
  with `split_values` mapping, or a `split` group of `path_label` / `table_label`.
"""

from __future__ import annotations

import csv
import fnmatch
import re
from pathlib import Path
from typing import Any

from lifelong.data.fetch.conversion import Conversion, Row, data_files


def _lines(job: Conversion, table: Path, opts: dict[str, Any]) -> list[list[str]]:
    text = table.read_text(encoding=opts.get("encoding", "utf-8"), errors="replace")
    lines = text.splitlines()[int(opts.get("skip_rows", 0)) :]
    if opts.get("comment"):
        lines = [line for line in lines if not line.lstrip().startswith(opts["comment"])]
    delimiter = opts.get("delimiter", ",")
    if delimiter == "whitespace":
        maxsplit = int(opts.get("maxsplit", -1))
        return [line.split(None, maxsplit) for line in lines if line.strip()]
    return [row for row in csv.reader(lines, delimiter=delimiter) if any(cell.strip() for cell in row)]


def records(job: Conversion, table: Path, opts: dict[str, Any]) -> list[tuple[int, dict[str, str]]]:
    """(line number, column -> cell) for every data row of a table."""
    rows = _lines(job, table, opts)
    if not opts.get("header", True):
        return [(i + 1, {str(k): c.strip() for k, c in enumerate(row)}) for i, row in enumerate(rows)]
    if not rows:
        return []
    header = [c.strip() for c in rows[0]]
    named = []
    for i, row in enumerate(rows[1:], start=2):
        names = header if len(header) == len(row) else ["0", *header] if len(header) == len(row) - 1 else None
        if names is None:
            raise job.fail(f"{table.name}:{i}: {len(row)} cells under a header of {len(header)} columns")
        named.append((i, {name: cell.strip() for name, cell in zip(names, row, strict=True)}))
    return named


def _cell(job: Conversion, record: dict[str, str], column: Any, where: str) -> str:
    key = str(column)
    if key not in record:
        raise job.fail(f"{where}: no column {key!r} (columns: {sorted(record)})")
    return record[key]


def _find(job: Conversion, base: Path, pattern: str | list[str]) -> list[Path]:
    globs = [pattern] if isinstance(pattern, str) else list(pattern)
    found = [p for p in data_files(base) if any(fnmatch.fnmatch(p.relative_to(base).as_posix(), g) for g in globs)]
    if not found:
        raise job.fail(f"no table in the artefacts matches {globs}")
    return found


def _joined(job: Conversion, base: Path, spec: dict[str, Any], opts: dict[str, Any]) -> dict[str, list[dict]]:
    """key -> the named columns of each row of a joined table with that key (the last one only unless `many`)."""
    read = {**{k: opts[k] for k in ("delimiter", "header", "maxsplit", "encoding") if k in opts}, **spec}
    found: dict[str, list[dict[str, str]]] = {}
    for table in _find(job, base, spec["table"]):
        for line, record in records(job, table, read):
            key = _cell(job, record, spec["on"], f"{table.name}:{line}")
            columns = {new: _cell(job, record, old, f"{table.name}:{line}") for old, new in spec["columns"].items()}
            found[key] = [*found.get(key, []), columns] if spec.get("many") else [columns]
    return found


def _join_all(job: Conversion, record: dict[str, str], joins: list, where: str) -> list[dict[str, str]]:
    """The record with each join's columns: one record per matching row for a `many` join (none without one)."""
    out = [record]
    for spec, found in joins:
        cell = _cell(job, record, spec.get("main_on", spec["on"]), where)
        if spec.get("main_key"):
            match = re.search(spec["main_key"], cell)
            if match is None or match.groupdict().get("key") is None:
                raise job.fail(f"{where}: {cell!r} has no join key (main_key {spec['main_key']!r}, group 'key')")
            cell = match.group("key")
        rows = found.get(cell, [] if spec.get("many") else [{}])
        out = [done | columns for done in out for columns in rows]
    return out


def _label(job: Conversion, record: dict[str, str], opts: dict[str, Any], groups: dict[str, str], where: str):
    label_map = opts.get("label_map", {})
    if opts.get("label_columns"):
        positive = set(opts.get("positive", ["1", "1.0"]))
        on = [str(c) for c in opts["label_columns"] if _cell(job, record, c, where) in positive]
        if not opts.get("one_of"):
            return on
        if len(on) > 1:
            raise job.fail(f"{where}: one_of, but {len(on)} label columns are set: {on}")
        return on[0] if on else str(opts["none_label"])
    if opts.get("labels"):
        cells = _cell(job, record, opts["labels"], where).split(opts.get("labels_separator"))
        return [label_map.get(v.strip(), v.strip()) for v in cells if v.strip()]
    if opts.get("label") is not None:
        value = _cell(job, record, opts["label"], where)
    elif "label" in groups:
        value = groups["label"]
    else:
        raise job.fail("a table needs label, labels, label_columns, path_label or table_label")
    return label_map.get(value, value)


def _split(job: Conversion, record: dict[str, str], opts: dict[str, Any], groups: dict[str, str], where: str):
    from lifelong.data.fetch.converters_tables import split_name

    if opts.get("table_split"):
        return opts["table_split"]
    if opts.get("split") is not None:
        return split_name(job, _cell(job, record, opts["split"], where), opts.get("split_values", {}))
    if "split" in groups:
        return split_name(job, groups["split"], opts.get("split_values", {}))
    return None


def _kept(record: dict[str, str], keep: dict[str, Any]) -> bool:
    for column, wanted in keep.items():
        values = [str(v) for v in wanted] if isinstance(wanted, list) else [str(wanted)]
        if record.get(str(column)) not in values:
            return False
    return True


def _tables(job: Conversion, base: Path, opts: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """Each table with the options that apply to its rows (its split and `table_label` groups folded in)."""
    by_split = opts.get("table_splits", {})
    found = []
    for table in _find(job, base, opts.get("table", list(by_split))):
        relative = table.relative_to(base).as_posix()
        local = dict(opts)
        matched = next((s for g, s in by_split.items() if fnmatch.fnmatch(relative, g)), None)
        local["table_split"] = matched or opts.get("table_split")
        if opts.get("table_label"):
            match = re.fullmatch(opts["table_label"], relative)
            if match is None:
                raise job.fail(f"table {relative} does not match table_label {opts['table_label']!r}")
            local["table_groups"] = {k: v for k, v in match.groupdict().items() if v is not None}
        found.append((table, local))
    return found


def by_name(job: Conversion, base: Path) -> dict[str, Path]:
    """Every file of the unpacked artefacts by its name, built once per conversion (each fetch its own: `--jobs`)."""
    if not job.names:
        job.names.update({p.name: p for p in data_files(base)})
    return job.names


def table_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    """The rows of every table the options name; images are moved into out/images/ once each."""
    from lifelong.data.fetch.converters_tables import place

    base = job.unpacked().resolve()
    shared = {k: v for k, v in options.items() if k != "tables"}
    rows: list[Row] = []
    placed: dict[Path, str] = {}
    seen: set[tuple[Path, str | None]] = set()
    for spec in options.get("tables") or [{}]:
        opts = {**shared, **spec}
        joins = [(j, _joined(job, base, j, opts)) for j in opts.get("join", [])]
        exclude = re.compile(opts["exclude"]) if opts.get("exclude") else None
        path_label = re.compile(opts["path_label"]) if opts.get("path_label") else None
        path_sub = opts.get("path_sub")
        for table, local in _tables(job, base, opts):
            root = local.get("path_root")
            if not root or root == "/":
                folder = base if root else table.parent
            else:
                folder = job.inside_unpacked(root, "option path_root", base)
            joined = [
                (f"{table.name}:{line}", one)
                for line, record in records(job, table, local)
                for one in _join_all(job, record, joins, f"{table.name}:{line}")
            ]
            for where, record in joined:
                if not _kept(record, local.get("keep", {})):
                    continue
                cell = _cell(job, record, local.get("path", "path"), where).strip('"')
                if path_sub:
                    cell = re.sub(path_sub[0], path_sub[1], cell)
                if exclude and exclude.search(cell):
                    continue
                groups = dict(local.get("table_groups", {}))
                if path_label:
                    match = path_label.fullmatch(cell)
                    if match is None:
                        raise job.fail(f"{where}: path {cell!r} does not match path_label {path_label.pattern!r}")
                    groups |= {k: v for k, v in match.groupdict().items() if v is not None}
                name = local.get("path_template", "{}").format(cell)
                if not name.strip():  # an empty cell names no image
                    if local.get("missing") == "skip":
                        continue
                    raise job.fail(f"{where}: the path cell is empty")
                search = local.get("path_search")
                image = job.inside_unpacked(name, f"image path of {where}", base if search else folder)
                if search:  # by its file name anywhere in the artefacts, else from their root
                    image = by_name(job, base).get(image.name, image)
                split = _split(job, record, local, groups, where)
                if local.get("first_per_image"):
                    if (image, split) in seen:
                        continue
                    seen.add((image, split))
                if image not in placed:
                    if not image.is_file():
                        if local.get("missing") == "skip":
                            continue
                        raise job.fail(f"{where}: image {image.relative_to(base)} is not in the artefacts")
                    placed[image] = place(job, image, base)
                rows.append((placed[image], _label(job, record, local, groups, where), split))
    return rows
