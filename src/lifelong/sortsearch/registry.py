"""SQLite registry of a benchmark store: samples, models, estimated rows, sort versions and the committed n and m.

The registry is the source of truth for which rows and columns of the matrix exist (see `store.py`). It runs in
WAL mode with a busy timeout; every change happens inside `transaction()` (BEGIN IMMEDIATE ... COMMIT), so a
killed process rolls back to the last commit. Writers are serialised by the store's file lock, not by SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.core.suggest import did_you_mean

FORMAT_VERSION = 2  # 2 added the best estimate and its interval to estimated_rows (`Registry` migrates 1)
SAMPLE_FIELDS = ("source", "domain", "label", "content_hash")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY, source TEXT NOT NULL, domain TEXT NOT NULL, label, content_hash TEXT NOT NULL UNIQUE
);
CREATE TABLE models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, metadata TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE sorts (
    version INTEGER PRIMARY KEY, created TEXT NOT NULL, file TEXT NOT NULL UNIQUE,
    n_samples INTEGER NOT NULL, n_models INTEGER NOT NULL, ranking_models TEXT NOT NULL
);
CREATE TABLE estimated_rows (
    model_id INTEGER PRIMARY KEY, threshold INTEGER NOT NULL, n_samples INTEGER NOT NULL,
    sort_version INTEGER NOT NULL, method TEXT NOT NULL, budget INTEGER NOT NULL, created TEXT NOT NULL,
    estimate REAL, low REAL, high REAL, confidence REAL, interval TEXT, row_ones INTEGER
);
"""
# format 1 -> 2: the interval columns (NULL in old rows until the store fills them in, see store.BenchStore)
_INTERVAL_COLUMNS = (
    ("estimate", "REAL"),
    ("low", "REAL"),
    ("high", "REAL"),
    ("confidence", "REAL"),
    ("interval", "TEXT"),
    ("row_ones", "INTEGER"),
)
_ESTIMATE_FIELDS = "model_id, threshold, n_samples, sort_version, method, budget, created, " + ", ".join(
    name for name, _ in _INTERVAL_COLUMNS
)
_BATCH = 500  # parameters per IN (...) query, well under SQLite's variable limit


@dataclass(frozen=True)
class ModelRecord:
    """One registered model: its row index, unique name, free-form metadata and creation time (UTC, ISO 8601)."""

    id: int
    name: str
    metadata: dict[str, Any]
    created: str


@dataclass(frozen=True)
class SortRecord:
    """One saved sample order: version, file name under the store's sorts/ folder, and what it covered."""

    version: int
    created: str
    file: str
    n_samples: int
    n_models: int
    ranking_models: list[int]


@dataclass(frozen=True)
class EstimateInterval:
    """The best estimate of an estimated row's accuracy over the n_samples of its sort, with its interval.

    `estimate`, `low`, `high`: accuracies over those n_samples (`intervals.accuracy_interval`, method `interval` at
    level `confidence`); `row_ones`: the correct cells the stored row held over them when this was computed (the
    store turns the pair into an accuracy over all current samples). `low`/`high` are None without a sampled fact.
    """

    estimate: float
    low: float | None
    high: float | None
    confidence: float
    interval: str
    row_ones: int


@dataclass(frozen=True)
class EstimateRecord:
    """How a model's row was estimated: DP threshold k over n_samples ranked samples, from a sort and a budget,
    and its best estimate with interval (None in a row migrated from format 1 until the store fills it in)."""

    model_id: int
    threshold: int
    n_samples: int
    sort_version: int
    method: str
    budget: int
    created: str
    interval: EstimateInterval | None = None


def _estimate_record(row: Sequence[Any]) -> EstimateRecord:
    """An EstimateRecord from a row of `SELECT _ESTIMATE_FIELDS FROM estimated_rows`."""
    estimate, low, high, confidence, method, row_ones = row[7:]
    interval = None if estimate is None else EstimateInterval(estimate, low, high, confidence, method, row_ones)
    return EstimateRecord(*row[:7], interval)


def _interval_values(interval: EstimateInterval | None) -> tuple[Any, ...]:
    """The interval columns of one estimated_rows row."""
    if interval is None:
        return (None,) * len(_INTERVAL_COLUMNS)
    return (interval.estimate, interval.low, interval.high, interval.confidence, interval.interval, interval.row_ones)


def _now() -> str:
    """Current UTC time as ISO 8601 text."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _connect(path: Path) -> sqlite3.Connection:
    """Open the registry in autocommit mode (transactions are explicit), WAL journal, 30 s busy timeout."""
    con = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process never corrupts or loses a commit
    con.execute("PRAGMA busy_timeout=30000")
    con.execute("PRAGMA cache_size=-65536")  # 64 MiB of pages: the content-hash index of 1.7M samples stays cached
    return con


def _duplicates(values: Sequence[str]) -> list[str]:
    """Values that occur more than once in `values`, in first-seen order."""
    return [value for value, count in Counter(values).items() if count > 1]


class Registry:
    """The registry tables of one store, over one SQLite connection (one per process or thread)."""

    def __init__(self, path: Path) -> None:
        """Open an existing registry, migrating format 1 to 2; refuse files of any other format version."""
        if not path.is_file():
            raise FileNotFoundError(
                f"no registry at {path}: is this a benchmark store? Create one with `lifelong bench create`"
            )
        self.path = path
        try:
            self._con = _connect(path)
        except sqlite3.DatabaseError as error:
            raise ValueError(f"{path} is not a readable store registry ({error}): restore it from a backup") from None
        try:
            version = self.meta().get("format_version")
        except sqlite3.DatabaseError as error:
            self._con.close()
            raise ValueError(f"{path} is not a readable store registry ({error}): restore it from a backup") from None
        if version == 1:
            try:
                self._migrate_from_1()
            except sqlite3.Error as error:
                self._con.close()
                raise ValueError(
                    f"registry {path} has format version 1 and could not be migrated to {FORMAT_VERSION} ({error}): "
                    "open the store once with write access"
                ) from None
            version = self.meta().get("format_version")
        if version != FORMAT_VERSION:
            self._con.close()
            raise ValueError(
                f"registry {path} has format version {version!r}, this code reads {FORMAT_VERSION}: "
                "use the lifelong version that wrote it"
            )

    def _migrate_from_1(self) -> None:
        """Format 1 -> 2 in one transaction: add the (NULL) interval columns to estimated_rows."""
        with self.transaction():
            if self.meta().get("format_version") != 1:  # another process migrated it meanwhile
                return
            known = {row[1] for row in self._con.execute("PRAGMA table_info(estimated_rows)")}
            for name, kind in _INTERVAL_COLUMNS:
                if name not in known:
                    self._con.execute(f"ALTER TABLE estimated_rows ADD COLUMN {name} {kind}")
            self._set_meta("format_version", FORMAT_VERSION)

    @classmethod
    def create(cls, path: Path, *, chunk_models: int, chunk_samples: int) -> Registry:
        """Create the tables and meta (n = m = 0) in one transaction."""
        meta = {"format_version": FORMAT_VERSION, "n": 0, "m": 0}
        meta |= {"chunk_models": chunk_models, "chunk_samples": chunk_samples}
        con = _connect(path)
        try:
            con.execute("BEGIN IMMEDIATE")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                con.execute(statement)
            con.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            con.execute("COMMIT")
        finally:
            con.close()
        return cls(path)

    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT; ROLLBACK if the body raises (a killed process rolls back on its own)."""
        self._con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------------------------------
    def meta(self) -> dict[str, int]:
        """All meta entries (format_version, n, m, chunk_models, chunk_samples)."""
        return dict(self._con.execute("SELECT key, value FROM meta").fetchall())

    def counts(self) -> tuple[int, int]:
        """Committed (n samples, m models)."""
        meta = self.meta()
        return meta["n"], meta["m"]

    def _set_meta(self, key: str, value: int) -> None:
        """Update one meta entry (inside a transaction)."""
        self._con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))

    # -- samples ------------------------------------------------------------------------------------------------
    def insert_samples(self, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append samples as columns n..n+k-1 and raise n (inside a transaction); refuse duplicate content hashes."""
        for index, record in enumerate(records):
            if set(record) != set(SAMPLE_FIELDS):
                raise ValueError(
                    f"sample record {index} has fields {sorted(record)}; expected exactly {list(SAMPLE_FIELDS)}"
                )
            if not isinstance(record["content_hash"], str) or not record["content_hash"]:
                raise ValueError(f"sample record {index} has content_hash {record['content_hash']!r}: need text")
        hashes = [record["content_hash"] for record in records]
        stored = (
            "a sample with content_hash {} is already in the store (id {}): drop it from the records, or look it up "
            "with sample_ids()"
        )
        self._refuse_repeats(
            "samples", "content_hash", hashes, "duplicate content_hash {} within the new samples: add each sample once"
        )
        n, _ = self.counts()
        ids = list(range(n, n + len(records)))
        rows = ((i, r["source"], r["domain"], r["label"], r["content_hash"]) for i, r in zip(ids, records, strict=True))
        try:  # the UNIQUE index refuses a stored hash: only then look for it (a lookup first costs seconds at 1M)
            self._con.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?)", rows)
        except sqlite3.IntegrityError:
            self._refuse_repeats("samples", "content_hash", hashes, "", stored)
            raise
        self._set_meta("n", n + len(records))
        return ids

    def sample_ids_where(self, *, source: str | None, domain: str | None) -> np.ndarray:
        """Ids (int64, ascending) of the samples from one source and/or domain (None matches any)."""
        query, args = "SELECT id FROM samples WHERE 1", []
        for column, value in (("source", source), ("domain", domain)):
            if value is not None:
                query += f" AND {column} = ?"
                args.append(value)
        return np.fromiter((row[0] for row in self._con.execute(query + " ORDER BY id", args)), dtype=np.int64)

    def sample_domains(self) -> list[str]:
        """Every sample's domain, in id order."""
        return [row[0] for row in self._con.execute("SELECT domain FROM samples ORDER BY id")]

    # -- models -------------------------------------------------------------------------------------------------
    def insert_models(self, names: Sequence[str], metadata: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append models as rows m..m+k-1 and raise m (inside a transaction); refuse duplicate names."""
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"model name {name!r} is not a non-empty string")
        self._refuse_repeats(
            "models",
            "name",
            names,
            "duplicate model name {} within the new models: give each a unique name",
            "a model named {} is already in the store (id {}): pick another name (`lifelong bench status` lists them)",
        )
        texts = []
        for name, meta in zip(names, metadata, strict=True):
            try:
                texts.append(json.dumps(dict(meta), sort_keys=True))
            except (TypeError, ValueError) as error:
                raise ValueError(f"metadata of model {name!r} is not JSON-serialisable: {error}") from error
        _, m = self.counts()
        ids = list(range(m, m + len(names)))
        created = _now()
        rows = ((i, name, text, created) for i, name, text in zip(ids, names, texts, strict=True))
        self._con.executemany("INSERT INTO models VALUES (?, ?, ?, ?)", rows)
        self._set_meta("m", m + len(names))
        return ids

    def sample_hashes(self) -> list[str]:
        """The content hash of every sample, in id order."""
        return [row[0] for row in self._con.execute("SELECT content_hash FROM samples ORDER BY id")]

    def model_by_name(self, name: str) -> ModelRecord:
        """The model registered under `name`."""
        row = self._con.execute("SELECT id, name, metadata, created FROM models WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self._con.execute("SELECT name FROM models")]
            raise KeyError(
                f"no model named {name!r} in the store{did_you_mean(name, names)}: `lifelong bench status` lists them"
            )
        return ModelRecord(row[0], row[1], json.loads(row[2]), row[3])

    def model_records(self) -> list[ModelRecord]:
        """Every model (id, name, metadata, created), by id."""
        rows = self._con.execute("SELECT id, name, metadata, created FROM models ORDER BY id").fetchall()
        return [ModelRecord(r[0], r[1], json.loads(r[2]), r[3]) for r in rows]

    def _refuse_repeats(self, table: str, column: str, values: Sequence[str], within: str, stored: str = "") -> None:
        """Raise ValueError if `values` repeat among themselves (message `within`, formatted with the value's repr)
        or, given a message `stored`, one of them is already in table.column (formatted with its repr and id)."""
        repeated = _duplicates(values)
        if repeated:
            raise ValueError(within.format(repr(repeated[0])))
        known = self._existing(table, column, values) if stored else None
        if known:
            raise ValueError(stored.format(repr(known[0]), known[1]))

    def _existing(self, table: str, column: str, values: Sequence[str]) -> tuple[str, int] | None:
        """The first (value, id) of `values` already present in table.column, or None."""
        for start in range(0, len(values), _BATCH):
            batch = list(values[start : start + _BATCH])
            marks = ",".join("?" * len(batch))
            row = self._con.execute(f"SELECT {column}, id FROM {table} WHERE {column} IN ({marks})", batch).fetchone()
            if row is not None:
                return row[0], row[1]
        return None

    # -- estimated rows -----------------------------------------------------------------------------------------
    def put_estimates(
        self,
        model_ids: Sequence[int],
        thresholds: Sequence[int],
        n_samples: int,
        sort_version: int,
        method: str,
        budget: int,
        intervals: Sequence[EstimateInterval | None] | None = None,
    ) -> None:
        """Record (or replace) how models' rows were estimated, with their best estimates (inside a transaction)."""
        now = _now()
        intervals = [None] * len(model_ids) if intervals is None else intervals
        rows = [
            (int(i), int(k), n_samples, sort_version, method, budget, now, *_interval_values(iv))
            for i, k, iv in zip(model_ids, thresholds, intervals, strict=True)
        ]
        marks = ", ".join("?" * (7 + len(_INTERVAL_COLUMNS)))
        self._con.executemany(f"INSERT OR REPLACE INTO estimated_rows ({_ESTIMATE_FIELDS}) VALUES ({marks})", rows)

    def put_intervals(self, intervals: Mapping[int, EstimateInterval]) -> None:
        """Fill in the best estimates of existing estimated rows, by model id (inside a transaction)."""
        sets = ", ".join(f"{name} = ?" for name, _ in _INTERVAL_COLUMNS)
        rows = [(*_interval_values(iv), int(i)) for i, iv in intervals.items()]
        self._con.executemany(f"UPDATE estimated_rows SET {sets} WHERE model_id = ?", rows)

    def estimates_without_interval(self) -> list[int]:
        """Ids of estimated rows with no best estimate yet (rows migrated from format 1)."""
        rows = self._con.execute("SELECT model_id FROM estimated_rows WHERE estimate IS NULL ORDER BY model_id")
        return [row[0] for row in rows]

    def estimates(self) -> dict[int, EstimateRecord]:
        """Every estimated row's record, by model id."""
        rows = self._con.execute(f"SELECT {_ESTIMATE_FIELDS} FROM estimated_rows ORDER BY model_id").fetchall()
        return {row[0]: _estimate_record(row) for row in rows}

    # -- sorts --------------------------------------------------------------------------------------------------
    def next_sort_version(self) -> int:
        """The version number the next saved sort gets (1 for the first)."""
        return self._con.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM sorts").fetchone()[0]

    def put_sort(self, version: int, file: str, n_samples: int, n_models: int, ranking_models: Sequence[int]) -> None:
        """Register a saved sort whose file is already in place (inside a transaction)."""
        self._con.execute(
            "INSERT INTO sorts VALUES (?, ?, ?, ?, ?, ?)",
            (version, _now(), file, n_samples, n_models, json.dumps([int(i) for i in ranking_models])),
        )

    def sorts(self) -> list[SortRecord]:
        """Every saved sort, oldest first."""
        rows = self._con.execute("SELECT * FROM sorts ORDER BY version").fetchall()
        return [SortRecord(*row[:5], json.loads(row[5])) for row in rows]

    # -- integrity ----------------------------------------------------------------------------------------------
    def check(self) -> list[str]:
        """Registry-internal problems: meta n/m against the tables, ids not 0..k-1, dangling estimated rows."""
        problems = []
        n, m = self.counts()
        for table, count, letter in (("samples", n, "n"), ("models", m, "m")):
            rows, low, high = self._con.execute(f"SELECT COUNT(*), MIN(id), MAX(id) FROM {table}").fetchone()
            if rows != count or (rows and (low, high) != (0, rows - 1)):
                problems.append(
                    f"registry: meta {letter} = {count} but table {table} has {rows} rows with ids {low}..{high}; "
                    f"ids must be exactly 0..{letter}-1: restore the store from a backup"
                )
        versions = {record.version for record in self.sorts()}
        for record in self.estimates().values():
            where = f"registry: estimated row of model {record.model_id}"
            if not 0 <= record.model_id < m:
                problems.append(f"{where} names no registered model (m = {m}): delete that entry")
            if record.sort_version not in versions:
                problems.append(f"{where} refers to sort version {record.sort_version}, which does not exist")
            if not 0 <= record.threshold <= record.n_samples <= n or not 0 <= record.budget <= record.n_samples:
                problems.append(
                    f"{where} has threshold {record.threshold}, budget {record.budget}, n_samples {record.n_samples}; "
                    f"need 0 <= threshold <= n_samples <= n = {n} and 0 <= budget <= n_samples"
                )
        return problems
