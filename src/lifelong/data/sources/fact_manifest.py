"""Fact-annotated image collections from CSV manifests, for lifelong fact learning on your own images.

Layouts (`layout="auto"` tells them apart by the header):
- "toolkit": one CSV with columns S,P,O,image,split (or one `fact` column of "<S, P, O>" texts instead of S,P,O; `*`
  or empty = undefined; split = train|test), as `facts_mini_export.export_facts_csv` writes; or two CSVs (train,
  test) without a split column. Image paths are relative to `images` (default: the CSV's folder).
- "authors": the manifests of the authors' code (github.com/Elhoseiny-VisionCAIR-Lab/lifelong_fact_learning): per
  task b, `splits/<T>tasks_<random|semantic>/B<b>_train.csv` and `B<b>_test.csv` with columns image_links, NLP_links,
  SPO, id, w_s, w_p, w_o (one row per image; `id` = the fact; w_* = 1 where that part is defined), and
  `B<b>_facts.csv` with id, type, S, P, O (empty = undefined). Give the task folder (its tasks become the "authors"
  split), or a train CSV (its `_test` sibling is the test CSV unless `test` is given). Facts come from the facts table
  (`fact_table`, default the `_facts` sibling) by id, else from the SPO cell ("<S, P, O>", "S,P,O" or a list such as
  "['man', 'riding', nan]"). image_links are relative to the data set's `images/` folder (default: the nearest
  folder above the CSV that has one); like the authors' loader, stray quotes are dropped and a missing .jpg falls back
  to the .png of the same name.
Errors name the CSV line. A fact with test images but no training image cannot be learned: `unseen_test` = "error"
(default), "warn" (keep it, a zero-shot fact) or "drop" (drop its test images, with a warning). Images are decoded
only when a split is first asked for (with a progress bar when there are many), then kept in memory.
"""

from __future__ import annotations

import csv
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lifelong.core.progress import progress_bar
from lifelong.data.images import CorruptImageError, decode_image, resize_all
from lifelong.facts.facts import Fact, distinct_facts, fact_from_parts, parse_fact, read_facts_csv

LAYOUTS = ("auto", "toolkit", "authors")
UNSEEN_TEST = ("error", "warn", "drop")
SPLITS = ("train", "test")
TOOLKIT_HEADER = "S,P,O,image,split (or fact,image,split; split may be left out when a test CSV is given)"
AUTHORS_HEADER = "image_links,NLP_links,SPO,id,w_s,w_p,w_o (facts table: id,type,S,P,O)"
AUTHORS_TASK = re.compile(r"^B(\d+)_train\.csv$")
CHUNK = 256  # images decoded, then resized together
PROGRESS_MIN = 500  # fewer images decode without a bar
MAX_LISTED = 5
_UNDEFINED_CELLS = ("", "*", "nan", "none")
_FLAGS = {"1": True, "1.0": True, "true": True, "0": False, "0.0": False, "false": False}


@dataclass
class FactManifest:
    """Facts, and per split the image files with their fact index and CSV line; images decode lazily, once per split.

    `fact_task`: the task of each fact where the files give one (the authors' task folders), else None.
    """

    facts: list[Fact]
    files: dict[str, list[Path]]
    fact_index: dict[str, np.ndarray]
    where: dict[str, list[str]]
    resolution: int
    layout: str
    source: Path
    fact_task: np.ndarray | None = None
    skip_corrupt: bool = False
    progress: bool | None = None
    notes: dict = field(default_factory=dict)
    _decoded: dict = field(default_factory=dict, repr=False)

    def images_per_fact(self, split: str = "train") -> np.ndarray:
        """Listed images per fact (before decoding: corrupt images skipped later still count)."""
        return np.bincount(self.fact_index[_check_split(split)], minlength=len(self.facts))

    def images(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        """(uint8 [N, R, R, 3], fact index [N]) of a split, decoded and resized on the first call, then cached."""
        if _check_split(split) not in self._decoded:
            self._decoded[split] = self._decode(split)
        return self._decoded[split]

    train_images = property(lambda self: self.images("train")[0], doc="uint8 [N, R, R, 3] (decoded on first use)")
    train_facts = property(lambda self: self.images("train")[1], doc="the fact index of each train image")
    test_images = property(lambda self: self.images("test")[0], doc="uint8 [N, R, R, 3] (decoded on first use)")
    test_facts = property(lambda self: self.images("test")[1], doc="the fact index of each test image")

    def _decode(self, split: str) -> tuple[np.ndarray, np.ndarray]:
        files, where, size = self.files[split], self.where[split], self.resolution
        out = np.empty((len(files), size, size, 3), dtype=np.uint8)
        kept: list[int] = []
        skipped: list[str] = []
        show = (sys.stdout.isatty() and len(files) >= PROGRESS_MIN) if self.progress is None else self.progress
        with progress_bar(show, len(files), description=f"{self.source.name}: {split} images") as advance:
            for start in range(0, len(files), CHUNK):
                batch = []
                for i in range(start, min(start + CHUNK, len(files))):
                    try:
                        batch.append(decode_image(files[i], item=f"{files[i]} ({where[i]})"))
                    except CorruptImageError:
                        if not self.skip_corrupt:
                            raise
                        skipped.append(where[i])
                        continue
                    kept.append(i)
                if batch:
                    out[len(kept) - len(batch) : len(kept)] = resize_all(batch, size, 3)
                advance(min(CHUNK, len(files) - start))
        self.notes[f"{split}_corrupt_skipped"] = skipped
        return out[: len(kept)], self.fact_index[split][kept]


def load_fact_manifest(
    facts: str | Path,
    test: str | Path | None = None,
    *,
    images: str | Path | None = None,
    layout: str = "auto",
    resolution: int = 64,
    skip_corrupt: bool = False,
    fact_table: str | Path | None = None,
    unseen_test: str = "error",
    progress: bool | None = None,
) -> FactManifest:
    """Read the manifests (no image is decoded yet): `facts` is a CSV (train, or train and test with a split column)
    or the authors' task folder; `test` a separate test CSV; `images` the folder image paths are relative to."""
    facts, layout = Path(facts), str(layout)
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    if unseen_test not in UNSEEN_TEST:
        raise ValueError(f"unknown unseen_test {unseen_test!r}; choose one of {', '.join(UNSEEN_TEST)}")
    if int(resolution) < 1:
        raise ValueError(f"resolution must be a positive side in pixels, got {resolution}")
    if facts.is_dir() and layout != "toolkit":
        rows, fact_task = _authors_folder(facts, images, fact_table, test)
        layout = "authors"
    else:
        if not facts.is_file():
            raise FileNotFoundError(f"facts file {facts} not found (a folder is read as the authors' task folder)")
        if layout == "auto":
            layout = detect_layout(facts)
        read = _toolkit_rows if layout == "toolkit" else _authors_rows
        rows, fact_task = read(facts, None if test is None else Path(test), images, fact_table), None
    rows = _check_unseen(rows, unseen_test)
    unique, index = distinct_facts([fact for _, fact, _, _ in rows])
    task_of = None if fact_task is None else np.array([fact_task[f] for f in unique], dtype=np.int64)
    split_of = np.array([split for split, _, _, _ in rows])
    return FactManifest(
        facts=unique,
        files={s: [file for split, _, file, _ in rows if split == s] for s in SPLITS},
        fact_index={s: index[split_of == s] for s in SPLITS},
        where={s: [where for split, _, _, where in rows if split == s] for s in SPLITS},
        resolution=int(resolution),
        layout=layout,
        source=facts,
        fact_task=task_of,
        skip_corrupt=bool(skip_corrupt),
        progress=progress,
    )


def detect_layout(path: Path) -> str:
    """ "toolkit" or "authors" from a CSV's header; an unrecognised header is an error listing both layouts."""
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        header = next(csv.reader(f), None)
    return _layout(path, header or [])


def _layout(path: Path, header: list[str]) -> str:
    names = {name.strip().lower() for name in header}
    if {"image_links", "id"} <= names:
        return "authors"
    if names & {"s", "fact"} and "image" in names:
        return "toolkit"
    raise ValueError(
        f"{path}: header {header} is no fact manifest layout; expected the toolkit's columns {TOOLKIT_HEADER}, or "
        f"the authors' columns {AUTHORS_HEADER}"
    )


Row = tuple[str, Fact, Path, str]  # (split, fact, image file, "CSV line n")


def _read(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line, {lower-case column: stripped cell})]) with blank rows left out."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise ValueError(
                f"{path} is empty; expected a header (toolkit: {TOOLKIT_HEADER}; authors: {AUTHORS_HEADER})"
            )
        names = [name.strip().lower() for name in header]
        rows = []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise ValueError(f"{path} line {reader.line_num}: {len(row)} cells but the header has {len(header)}")
            rows.append((reader.line_num, {n: cell.strip() for n, cell in zip(names, row, strict=True)}))
    if not rows:
        raise ValueError(f"{path} has a header but no rows; add one row per image")
    return header, rows


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; a fact manifest has {SPLITS}")
    return split


# -- the toolkit layout ---------------------------------------------------------------------------------------------


def _toolkit_rows(path: Path, test: Path | None, images, fact_table) -> list[Row]:
    if fact_table is not None:
        raise ValueError("fact_table belongs to the authors' layout; the toolkit layout has the facts in its rows")
    parts = [(path, None if test is None else "train")] + ([] if test is None else [(test, "test")])
    rows: list[Row] = []
    for csv_path, role in parts:
        if not csv_path.is_file():
            raise FileNotFoundError(f"facts file {csv_path} not found")
        table = read_facts_csv(csv_path, image_root=images, check_images=True)  # names missing images and lines
        if table.images is None:
            raise ValueError(f"{csv_path} has no image column; expected columns {TOOLKIT_HEADER}")
        lines = _read(csv_path)[1]
        for (line, cells), fact, file in zip(lines, table.facts, table.images, strict=True):
            where = f"{csv_path} line {line}"
            split = cells.get("split", role)
            if split is None:
                raise ValueError(
                    f"{csv_path} has no split column; add one (train/test) or give the test images in a second CSV"
                )
            if split not in SPLITS or (role is not None and split != role):
                wanted = f"'{role}' (it is the {role} CSV)" if role else "'train' or 'test'"
                raise ValueError(f"{where}: split {split!r}; expected {wanted}")
            rows.append((split, fact, Path(file), where))
    return rows


# -- the authors' layout --------------------------------------------------------------------------------------------


def _authors_folder(folder: Path, images, fact_table, test) -> tuple[list[Row], dict[Fact, int]]:
    """Every task b of a `splits/<T>tasks_<split>/` folder, in order; each fact belongs to the task listing it."""
    if test is not None or fact_table is not None:
        raise ValueError(
            f"{folder} is a task folder, its B<b>_test.csv and B<b>_facts.csv are used: drop test=, fact_table="
        )
    found = sorted((int(m.group(1)), p) for p in folder.iterdir() if (m := AUTHORS_TASK.match(p.name)))
    if not found:
        raise FileNotFoundError(f"{folder} holds no B<b>_train.csv; expected the authors' splits/<T>tasks_<split>/")
    rows: list[Row] = []
    task_of: dict[Fact, int] = {}
    for t, (b, train) in enumerate(found):
        task_rows = _authors_rows(train, folder / f"B{b}_test.csv", images, None)
        for _, fact, _, where in task_rows:
            if task_of.setdefault(fact, t) != t:
                raise ValueError(
                    f"{where}: fact {fact.text} is in task B{b} and in an earlier task; tasks share no fact"
                )
        rows += task_rows
    return rows, task_of


def _sibling(path: Path, part: str) -> Path | None:
    name = path.name.replace("_train", f"_{part}", 1)
    return path.with_name(name) if name != path.name else None


def _authors_rows(path: Path, test: Path | None, images, fact_table) -> list[Row]:
    test = test if test is not None else _sibling(path, "test")
    if test is None or not test.is_file():
        raise FileNotFoundError(
            f"the test manifest of {path} ({test or 'a B<b>_test.csv'}) not found; give test=FILE or the task folder"
        )
    table_path = Path(fact_table) if fact_table is not None else _sibling(path, "facts")
    by_id = _fact_table(table_path) if table_path is not None and table_path.is_file() else None
    if fact_table is not None and by_id is None:
        raise FileNotFoundError(f"facts table {fact_table} not found")
    root = Path(images) if images is not None else _images_folder(path)
    rows: list[Row] = []
    seen: dict[str, tuple[Fact, str]] = {}
    missing: list[str] = []
    for csv_path, split in ((path, "train"), (test, "test")):
        header, lines = _read(csv_path)
        if _layout(csv_path, header) != "authors":
            raise ValueError(f"{csv_path}: not in the authors' layout; expected columns {AUTHORS_HEADER}")
        for line, cells in lines:
            where = f"{csv_path} line {line}"
            fact = _authors_fact(cells, by_id, table_path, where)
            first = seen.setdefault(cells["id"], (fact, where))
            if first[0] != fact:
                raise ValueError(
                    f"{where}: fact id {cells['id']} is {fact.text} here but {first[0].text} at {first[1]}"
                )
            link = cells["image_links"].strip("'\"")
            if not link:
                raise ValueError(f"{where}: empty image_links cell for fact {fact.text}")
            file = root / link
            if not file.is_file() and file.suffix.lower() == ".jpg" and file.with_suffix(".png").is_file():
                file = file.with_suffix(".png")  # the authors' loader does the same
            if not file.is_file():
                missing.append(f"{csv_path.name} line {line}: {link}")
            rows.append((split, fact, file, where))
    if missing:
        more = f" (and {len(missing) - MAX_LISTED} more)" if len(missing) > MAX_LISTED else ""
        raise FileNotFoundError(
            f"{len(missing)} images of {path.name} are missing (image_links are relative to {root}; pass images=DIR "
            f"for another folder): {', '.join(missing[:MAX_LISTED])}{more}"
        )
    return rows


def _images_folder(path: Path) -> Path:
    for folder in path.resolve().parents:
        if (folder / "images").is_dir():
            return folder / "images"
    raise FileNotFoundError(
        f"no images/ folder above {path}; the authors' image_links are relative to <data>/<scale>/images/: pass "
        "images=DIR"
    )


def _undefined(cell: str | None) -> str | None:
    return None if cell is None or cell.strip().strip("'\"").lower() in _UNDEFINED_CELLS else cell.strip("'\" ")


def _fact_table(path: Path) -> dict[str, Fact]:
    header, rows = _read(path)
    names = {name.strip().lower() for name in header}
    if not {"id", "s"} <= names:
        raise ValueError(f"{path}: header {header} is no facts table; expected columns id,type,S,P,O")
    table: dict[str, Fact] = {}
    for line, cells in rows:
        where = f"{path} line {line}"
        fact = fact_from_parts(*(_undefined(cells.get(c)) for c in "spo"), where=where)
        if table.setdefault(cells["id"], fact) != fact:
            raise ValueError(
                f"{where}: fact id {cells['id']} appears twice, as {table[cells['id']].text} and {fact.text}"
            )
    return table


def _authors_fact(cells: dict[str, str], by_id: dict[str, Fact] | None, table: Path | None, where: str) -> Fact:
    if not cells["id"]:
        raise ValueError(f"{where}: empty fact id")
    if by_id is not None:
        if cells["id"] not in by_id:
            raise ValueError(f"{where}: fact id {cells['id']} is not in the facts table {table}")
        fact = by_id[cells["id"]]
    elif "spo" in cells:
        fact = _spo_cell(cells["spo"], where)
    else:
        raise ValueError(
            f"{where}: no SPO column and no facts table (B<b>_facts.csv with id,type,S,P,O): pass fact_table="
        )
    for name, part in zip("SPO", fact, strict=True):
        flag = cells.get(f"w_{name.lower()}", "").lower()
        if flag and flag not in _FLAGS:
            raise ValueError(f"{where}: w_{name.lower()} = {flag!r}; expected 1 or 0 (is part {name} defined)")
        if flag and _FLAGS[flag] != (part is not None):
            raise ValueError(
                f"{where}: w_{name.lower()} = {flag} but {fact.text} {'lacks' if part is None else 'has'} {name}; "
                "the flags and the fact disagree (a facts table with id,type,S,P,O settles it: fact_table=)"
            )
    return fact


def _spo_cell(cell: str, where: str) -> Fact:
    """'<S, P, O>' or 'S,P,O' (parse_fact), or a list/tuple text such as "['man', 'riding', nan]"."""
    text = cell.strip()
    if text[:1] in "[(" and text[-1:] in "])":
        cells = text[1:-1].split(",")
        if len(cells) > 3:
            raise ValueError(f"{where}: fact {cell!r} has {len(cells)} parts; a fact has at most 3 (<S, P, O>)")
        return fact_from_parts(*(_undefined(c) for c in cells), where=where)
    return parse_fact(text, where)


def _check_unseen(rows: list[Row], unseen_test: str) -> list[Row]:
    trained = {fact for split, fact, _, _ in rows if split == "train"}
    unseen: dict[Fact, str] = {}
    for split, fact, _, where in rows:
        if split == "test" and fact not in trained:
            unseen.setdefault(fact, where)
    if not unseen:
        return rows
    listed = ", ".join(f"{fact.text} ({where})" for fact, where in list(unseen.items())[:MAX_LISTED])
    what = f"{len(unseen)} fact(s) have test images but no training image: {listed}"
    if unseen_test == "error":
        raise ValueError(
            f"{what}; add training images, remove those test rows, or pass unseen_test=drop (drop their test images) "
            "or unseen_test=warn (keep them as zero-shot facts)"
        )
    if unseen_test == "warn":
        warnings.warn(f"{what}; kept as zero-shot facts (never trained on)", stacklevel=3)
        return rows
    warnings.warn(f"{what}; their test images are dropped", stacklevel=3)
    return [row for row in rows if row[0] == "train" or row[1] in trained]


__all__ = ["LAYOUTS", "UNSEEN_TEST", "FactManifest", "detect_layout", "load_fact_manifest"]
