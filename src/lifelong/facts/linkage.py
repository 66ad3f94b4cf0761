"""Hierarchical clustering of facts under the part-wise cosine distance, without an n x n matrix for single linkage.

d(fi, fj) = sum over parts (S, P, O) defined in BOTH facts of 1 - cos(w_i, w_j). A part's distance depends only on
its two word ids, so each part gets a word x word table (float64, words actually used, plus a zero UNKNOWN slot) and
a fact-to-all-facts distance row is three gathers.

Single linkage is exact: (1) facts dominated at distance 0 are attached to a dominator first; fact r dominates u when
r's defined parts are a proper subset of u's with the same words (<s> dominates every fact with S=s, <s,p> every
<s,p,o>): then d(r,u)=0 and d(r,v) <= d(u,v) for all v, so minimax (subdominant ultrametric) distances, hence the
dendrogram, are unchanged by removing u; (2) a dense Prim's algorithm on the remaining facts, O(m) memory, O(m^2)
vectorised gathers. Average, complete and ward linkage use scipy on a condensed matrix, up to MAX_DENSE_FACTS facts.

Two distances (DISTANCES): `eq2`, the paper's part-wise distance above (a part counts only where both facts define
it), and `padded`, the Euclidean distance of centred, zero-padded, unit-length fact vectors
(`lifelong.facts.centring.padded_vectors`: undefined parts count). Ward's criterion assumes Euclidean distances: it
is exact under `padded` and the Lance-Williams update of scipy on a non-Euclidean matrix under `eq2`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import scipy.cluster.hierarchy as sch
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import pdist

from lifelong.facts.centring import padded_vectors

PARTS = ("S", "P", "O")
LINKAGES = ("single", "average", "complete", "ward")
DISTANCES = ("eq2", "padded")
MAX_DENSE_FACTS = 12_000  # average/complete: condensed float64 matrix ~0.58 GB (scipy copies it once more)
TABLE_LIMIT_BYTES = 2 * 2**30  # above this the word x word tables are not stored: rows are computed per step


class PartDistances:
    """Per-part cosine distances by word id: `row(c, w)` is 1 - cos(word w, every used word of part c), UNKNOWN -> 0."""

    def __init__(self, part_ids: np.ndarray, part_vectors: Sequence[np.ndarray]) -> None:
        ids = _check_ids(part_ids, part_vectors)
        self.ids = np.empty_like(ids)  # compact ids: used words 0..u_c-1, UNKNOWN = u_c
        self.units: list[np.ndarray] = []
        self.tables: list[np.ndarray | None] = []
        for c in range(3):
            defined = ids[:, c] >= 0
            used, inverse = np.unique(ids[defined, c], return_inverse=True)
            self.ids[:, c] = len(used)
            self.ids[defined, c] = inverse
            vectors = np.asarray(part_vectors[c], dtype=np.float64)[used]
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            if len(used) and not np.all(norms > 0):
                bad = int(used[np.flatnonzero(norms[:, 0] <= 0)[0]])
                raise ValueError(f"part {PARTS[c]}: word id {bad} has a zero vector; cosine is undefined, drop it")
            self.units.append(np.vstack([vectors / np.maximum(norms, 1e-300), np.zeros((1, vectors.shape[1]))]))
        sizes = [len(u) for u in self.units]
        store = sum(s * s for s in sizes) * 8 <= TABLE_LIMIT_BYTES
        self.tables = [self._table(c) if store else None for c in range(3)]

    def _table(self, c: int) -> np.ndarray:
        units = self.units[c]
        table = 1.0 - units @ units.T
        np.clip(table, 0.0, 2.0, out=table)
        np.fill_diagonal(table, 0.0)
        table[-1, :] = 0.0
        table[:, -1] = 0.0
        return table

    def row(self, c: int, word: int) -> np.ndarray:
        table = self.tables[c]
        if table is not None:
            return table[word]
        units = self.units[c]
        out = 1.0 - units @ units[word]
        np.clip(out, 0.0, 2.0, out=out)
        out[word] = 0.0
        out[-1] = 0.0
        return out if word < len(units) - 1 else np.zeros(len(units))

    def unknown(self, c: int) -> int:
        return len(self.units[c]) - 1

    def distances_to(self, i: int, others: np.ndarray) -> np.ndarray:
        """d(fact i, each fact in `others`), float64."""
        out = np.zeros(len(others))
        for c in range(3):
            if self.ids[i, c] != self.unknown(c):
                out += self.row(c, int(self.ids[i, c]))[self.ids[others, c]]
        return out


def _check_ids(part_ids: np.ndarray, part_vectors: Sequence[np.ndarray]) -> np.ndarray:
    ids = np.asarray(part_ids)
    if ids.ndim != 2 or ids.shape[1] != 3 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"part_ids must be an int array [n, 3] (S, P, O; -1 = undefined), got {ids.dtype} {ids.shape}")
    if len(part_vectors) != 3:
        raise ValueError(f"part_vectors must be 3 arrays [vocab_c, d] (S, P, O), got {len(part_vectors)}")
    if len(ids) and np.any((ids >= 0).sum(axis=1) == 0):
        row = int(np.flatnonzero((ids >= 0).sum(axis=1) == 0)[0])
        raise ValueError(f"fact {row} has no defined part; every fact needs at least one of S, P, O")
    for c in range(3):
        vocab = len(part_vectors[c])
        if len(ids) and (ids[:, c].max() >= vocab or ids[:, c].min() < -1):
            raise ValueError(f"part {PARTS[c]}: word ids must lie in -1..{vocab - 1} (vocabulary size {vocab})")
    return ids.astype(np.int64)


def dominators(part_ids: np.ndarray) -> np.ndarray:
    """root[i]: a minimal fact dominating fact i at distance 0 (i itself if none); see the module docstring."""
    ids = np.asarray(part_ids, dtype=np.int64)
    keys = [tuple(int(x) for x in row) for row in ids]
    index: dict[tuple[int, ...], int] = {}
    for i, key in enumerate(keys):
        index.setdefault(key, i)  # duplicate facts: the first one dominates the rest
    root = np.arange(len(ids))
    order = np.argsort((ids >= 0).sum(axis=1), kind="stable")  # fewer defined parts first: roots resolve in order
    for i in order:
        key = keys[i]
        if index[key] != i:
            root[i] = root[index[key]]
            continue
        defined = [c for c in range(3) if key[c] >= 0]
        for size in range(1, len(defined)):
            found = next((index[s] for s in _subkeys(key, defined, size) if s in index), None)
            if found is not None:
                root[i] = root[found]
                break
    return root


def _subkeys(key: tuple[int, ...], defined: list[int], size: int):
    for keep in itertools.combinations(defined, size):
        yield tuple(key[c] if c in keep else -1 for c in range(3))


def single_linkage_mst(
    part_ids: np.ndarray, part_vectors: Sequence[np.ndarray], reduce: bool = True, progress: Callable | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum spanning tree edges (u, v, w) of the complete fact graph, n - 1 of them; exact single linkage.

    `reduce=False` skips the distance-0 dominance step (same tree weights; for benchmarking the dense Prim alone).
    """
    dist = PartDistances(part_ids, part_vectors)
    n = len(dist.ids)
    root = dominators(part_ids) if reduce else np.arange(n)
    attached = np.flatnonzero(root != np.arange(n))
    nodes = np.flatnonzero(root == np.arange(n))
    pu, pv, pw = _prim(dist, nodes, progress)
    u = np.concatenate([pu, root[attached]])
    v = np.concatenate([pv, attached])
    w = np.concatenate([pw, np.zeros(len(attached))])
    return u, v, w


def _prim(dist: PartDistances, nodes: np.ndarray, progress: Callable | None) -> tuple[np.ndarray, ...]:
    """Dense Prim's algorithm over `nodes`; remaining vertices kept compacted (swap-remove) so each step is k-long."""
    m = len(nodes)
    if m <= 1:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    rest = nodes[1:].copy()
    cols = [np.ascontiguousarray(dist.ids[rest, c]).astype(np.intp) for c in range(3)]
    key = np.full(m - 1, np.inf)
    parent = np.full(m - 1, nodes[0], dtype=np.int64)
    d, tmp, better = np.empty(m - 1), np.empty(m - 1), np.empty(m - 1, dtype=bool)
    eu, ev, ew = np.empty(m - 1, np.int64), np.empty(m - 1, np.int64), np.empty(m - 1)
    cur = int(nodes[0])
    for step in range(m - 1):
        k = m - 1 - step
        dk, tk = d[:k], tmp[:k]
        dk.fill(0.0)
        for c in range(3):
            word = int(dist.ids[cur, c])
            if word != dist.unknown(c):
                np.take(dist.row(c, word), cols[c][:k], out=tk, mode="clip")
                dk += tk
        np.less(dk, key[:k], out=better[:k])
        np.putmask(key[:k], better[:k], dk)
        np.putmask(parent[:k], better[:k], cur)
        j = int(np.argmin(key[:k]))
        eu[step], ev[step], ew[step] = parent[j], rest[j], key[j]
        cur = int(rest[j])
        last = k - 1
        for arr in (rest, key, parent, *cols):
            arr[j] = arr[last]
        if progress is not None and step % 10_000 == 0:
            progress(step, m)
    return eu, ev, ew


def sorted_edges(u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Edge order for merging: weight ascending, ties by (min index, max index) ascending (the tie rule)."""
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return np.lexsort((hi, lo, w))


def cut_mst(u: np.ndarray, v: np.ndarray, w: np.ndarray, n: int, clusters: int) -> tuple[np.ndarray, dict]:
    """Labels after the first n - clusters merges (= removing the clusters - 1 heaviest edges, by `sorted_edges`)."""
    order = sorted_edges(u, v, w)
    keep = order[: n - clusters]
    graph = coo_matrix((np.ones(len(keep)), (u[keep], v[keep])), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    info = {"merge_height": float(w[keep[-1]]) if len(keep) else 0.0}
    if clusters > 1 and len(order) >= n - clusters + 1:
        cut = float(w[order[n - clusters]])
        info["cut_height"] = cut
        info["tie_at_cut"] = bool(len(keep) and cut == info["merge_height"])
    return _first_seen(labels), info


def _first_seen(labels: np.ndarray) -> np.ndarray:
    """Renumber clusters so cluster 0 holds fact 0, cluster 1 the first fact outside it, and so on."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _check_dense(n: int, what: str) -> None:
    if n > MAX_DENSE_FACTS:
        raise ValueError(
            f"{n} facts need a dense {n * (n - 1) // 2:,}-entry distance matrix; {what} is limited to "
            f"{MAX_DENSE_FACTS:,} facts: use the eq2 distance with single linkage (MST, no matrix) or fewer facts"
        )


def condensed_distances(part_ids: np.ndarray, part_vectors: Sequence[np.ndarray], distance: str = "eq2") -> np.ndarray:
    """The scipy condensed distance vector (pairs i < j, row-major); refuses above MAX_DENSE_FACTS facts."""
    _check_distance(distance)
    if distance == "padded":
        _check_dense(len(part_ids), "the padded distance")
        return pdist(padded_vectors(_check_ids(part_ids, part_vectors), part_vectors))
    dist = PartDistances(part_ids, part_vectors)
    n = len(dist.ids)
    _check_dense(n, "average/complete/ward linkage")
    out = np.empty(n * (n - 1) // 2)
    start = 0
    for i in range(n - 1):
        stop = start + n - 1 - i
        out[start:stop] = dist.distances_to(i, np.arange(i + 1, n))
        start = stop
    return out


def _check_distance(distance: str) -> None:
    if distance not in DISTANCES:
        raise ValueError(f"unknown fact distance {distance!r}; choose one of {', '.join(DISTANCES)}")


def dense_linkage_labels(
    part_ids: np.ndarray, part_vectors: Sequence[np.ndarray], clusters: int, method: str, distance: str = "eq2"
) -> tuple[np.ndarray, dict]:
    """Any linkage with scipy on the condensed matrix of `distance`; labels after its first n - clusters merges."""
    n = len(part_ids)
    z = sch.linkage(condensed_distances(part_ids, part_vectors, distance), method=method)
    rep = np.arange(2 * n - 1)
    parent = np.arange(n)

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i in range(n - clusters):
        a, b = find(rep[int(z[i, 0])]), find(rep[int(z[i, 1])])
        parent[b] = a
        rep[n + i] = a
    labels = np.array([find(i) for i in range(n)])
    info = {"merge_height": float(z[n - clusters - 1, 2]) if n > clusters else 0.0}
    if clusters > 1:
        info["cut_height"] = float(z[n - clusters, 2])
        info["tie_at_cut"] = bool(n > clusters and info["cut_height"] == info["merge_height"])
    return _first_seen(labels), info
