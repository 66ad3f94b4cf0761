"""Wildcard-aware top-K correctness of fact predictions (docs/protocols/facts.md#top-k-correctness).

A truth matches a candidate when every part defined in the truth equals the candidate's part; the truth's undefined
parts are wildcards (<lion> matches <lion, eating, meat>; <lion, eating> matches <lion, eating, *> and
<lion, eating, meat> but not <lion>). An image is correct when a match is among its K best-ranked candidates.

Ranking (the tie rule): candidate a ranks above b when its similarity is larger, or equal and its index is smaller;
the top K are the first K of that order, so ties are deterministic.

Two rules (`rule=`): "strict" is the above. "authors" is the fact-learning authors' evaluation: a wildcard truth
<S> or <S,P> is a hit when its best-ranked compatible candidate (same S; same S and P) ranks at most K + |G| - 1,
G being all its compatible candidates, so each compatible candidate beyond the first widens the window by one; a
full <S,P,O> truth, <S,*,O> and any other pattern count only the identical candidate within the top K.

Cost: parts become integer ids; per block of images one partition finds each row's K-th value and exactly K
(row, candidate) pairs are compared with the truth; no images x candidates match matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNDEFINED = "*"
RULES = ("strict", "authors")
BLOCK_ELEMENTS = 1 << 22  # similarity entries per block of images (~32 MB of float64)


def _parts(fact: Sequence[str | None], what: str, i: int) -> tuple[str | None, str | None, str | None]:
    if isinstance(fact, str) or not 1 <= len(fact) <= 3:
        raise ValueError(f"{what} {i} must be an (S, P, O) tuple (None or '*' for undefined), got {fact!r}")
    parts = tuple(None if p is None or p == UNDEFINED else p for p in fact) + (None,) * (3 - len(fact))
    return parts  # type: ignore[return-value]


def encode_parts(
    candidates: Sequence[Sequence[str | None]], truths: Sequence[Sequence[str | None]]
) -> tuple[np.ndarray, np.ndarray]:
    """(candidate ids [C, 3], truth ids [N, 3]): one integer per distinct part value, shared, -1 for undefined."""
    lookup: list[dict[str, int]] = [{}, {}, {}]
    out = []
    for what, facts in (("candidate", candidates), ("truth", truths)):
        ids = np.full((len(facts), 3), -1, dtype=np.int64)
        for i, fact in enumerate(facts):
            for c, part in enumerate(_parts(fact, what, i)):
                if part is not None:
                    ids[i, c] = lookup[c].setdefault(part, len(lookup[c]))
        out.append(ids)
    if len(out[1]) and np.any((out[1] < 0).all(axis=1)):
        row = int(np.flatnonzero((out[1] < 0).all(axis=1))[0])
        raise ValueError(f"truth {row} {tuple(truths[row])!r} has no defined part; it would match every candidate")
    return out[0], out[1]


def topk_indices(block: np.ndarray, k: int) -> np.ndarray:
    """[rows, k] candidate indices of each row's top k under the tie rule (unordered within a row)."""
    neg = -np.asarray(block)
    kth = np.partition(neg, k - 1, axis=1)[:, k - 1 : k]
    better = neg < kth
    tied = neg == kth
    room = k - better.sum(axis=1, keepdims=True)  # tied slots left; the smallest tied indices fill them
    chosen = better | (tied & (np.cumsum(tied, axis=1, dtype=np.int64) <= room))
    return np.nonzero(chosen)[1].reshape(len(neg), k)


def topk_correct(
    similarity: np.ndarray | Sequence[Sequence[float]],
    candidates: Sequence[Sequence[str | None]],
    truths: Sequence[Sequence[str | None]],
    k: int = 5,
    rule: str = "strict",
) -> np.ndarray:
    """Bool per image (row of `similarity`, images x candidates): a match of its truth is among its k best candidates
    (`rule="strict"`), or the authors' window for wildcard truths (`rule="authors"`, see the module docstring).

    Candidates and truths are (S, P, O) tuples (e.g. `Fact`s), None or "*" for an undefined part.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    sim = similarity if isinstance(similarity, np.ndarray) else np.asarray(similarity, dtype=np.float64)
    n, c = len(truths), len(candidates)
    if n == 0 and sim.size == 0:
        sim = sim.reshape(0, c)
    if sim.ndim != 2 or sim.shape != (n, c):
        raise ValueError(
            f"similarity has shape {sim.shape}; expected ({n} images, {c} candidates) = (len(truths), len(candidates))"
        )
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if k > c:
        raise ValueError(f"k = {k} is larger than the number of candidates ({c}); use k <= {c}")
    if sim.dtype.kind not in "fiub":
        raise ValueError(f"similarity must hold numbers, got dtype {sim.dtype}")
    cand_ids, truth_ids = encode_parts(candidates, truths)
    out = np.empty(n, dtype=bool)
    rows = max(1, BLOCK_ELEMENTS // max(c, 1))
    for start in range(0, n, rows):
        block = sim[start : start + rows]
        if block.dtype.kind != "f":
            block = block.astype(np.float64)
        nan = np.isnan(block).any(axis=1)
        if nan.any():
            raise ValueError(f"similarity row {start + int(np.flatnonzero(nan)[0])} (an image) holds NaN")
        truth = truth_ids[start : start + len(block), None, :]  # [b, 1, 3]
        if rule == "authors":
            out[start : start + len(block)] = _authors_hits(block, cand_ids, truth[:, 0, :], k)
            continue
        top = topk_indices(block, k)  # [b, k]
        match = ((truth < 0) | (cand_ids[top] == truth)).all(axis=2)  # [b, k]
        out[start : start + len(block)] = match.any(axis=1)
    return out


def _matching(truth: np.ndarray, cand_ids: np.ndarray) -> np.ndarray:
    """[n, C] bool: candidate c has every part that truth i defines (our wildcard match)."""
    return ((truth[:, None, :] < 0) | (cand_ids[None, :, :] == truth[:, None, :])).all(axis=2)


def _authors_group(truth: np.ndarray, cand_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(wildcard [n], group [n, C]) of the authors' rule: <S> and <S,P> truths are wildcards whose group G is every
    matching candidate; any other truth's group is its identical candidates."""
    wildcard = (truth[:, 0] >= 0) & (truth[:, 2] < 0)
    identical = (cand_ids[None, :, :] == truth[:, None, :]).all(axis=2)
    return wildcard, np.where(wildcard[:, None], _matching(truth, cand_ids), identical)


def _authors_hits(block: np.ndarray, cand_ids: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    """The authors' rule for a block of images: [b] bool, the best-ranked member of each truth's group within
    K + |G| - 1 (wildcards) or K (the rest)."""
    wildcard, compatible = _authors_group(truth, cand_ids)
    group = compatible.sum(axis=1)
    masked = np.where(compatible, block, -np.inf)
    best = masked.argmax(axis=1)  # first index among the highest-scoring compatible candidates: the tie rule
    best_score = block[np.arange(len(block)), best][:, None]
    columns = np.arange(block.shape[1])[None, :]
    rank = 1 + (block > best_score).sum(axis=1) + ((block == best_score) & (columns < best[:, None])).sum(axis=1)
    window = np.where(wildcard, k + group - 1, k)
    return (group > 0) & (rank <= window)


def topk_chance(
    candidates: Sequence[Sequence[str | None]],
    truths: Sequence[Sequence[str | None]],
    k: int = 5,
    rule: str = "strict",
) -> np.ndarray:
    """Per truth, the probability that `topk_correct` counts it a hit when the candidates are ranked at random: with
    m counted candidates (strict: those matching the truth's defined parts; authors: its group G) and a window of w
    ranks (strict: K; authors: K + |G| - 1 for <S> and <S,P>, else K with the identical candidates), 1 - the chance
    that none of the m falls in the first w of C: 1 - prod_{i<m} (C - w - i) / (C - i)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    c = len(candidates)
    if not 1 <= k <= c:
        raise ValueError(f"k must be between 1 and the number of candidates ({c}), got {k}")
    cand_ids, truth_ids = encode_parts(candidates, truths)
    unique, inverse = np.unique(truth_ids, axis=0, return_inverse=True)  # the chance depends on the truth alone
    if rule == "authors":
        wildcard, group = _authors_group(unique, cand_ids)
        counted = group.sum(axis=1)
        windows = np.where(wildcard, np.minimum(c, k + counted - 1), k)
    else:
        counted, windows = _matching(unique, cand_ids).sum(axis=1), np.full(len(unique), k)
    chance = np.empty(len(unique))
    for row, (m, w) in enumerate(zip(counted, windows, strict=True)):
        none_in = 1.0
        for i in range(int(m)):
            none_in *= max(0, c - int(w) - i) / (c - i)
        chance[row] = 1.0 - none_in
    return chance[np.asarray(inverse).reshape(-1)]


def topk_accuracy(
    similarity: np.ndarray | Sequence[Sequence[float]],
    candidates: Sequence[Sequence[str | None]],
    truths: Sequence[Sequence[str | None]],
    k: int = 5,
    rule: str = "strict",
) -> float:
    """The share of images that are `topk_correct` under `rule`."""
    if len(truths) == 0:
        raise ValueError("no images (truths) to score; top-k accuracy needs at least one")
    return float(topk_correct(similarity, candidates, truths, k, rule=rule).mean())


__all__ = ["RULES", "encode_parts", "topk_accuracy", "topk_chance", "topk_correct", "topk_indices"]
