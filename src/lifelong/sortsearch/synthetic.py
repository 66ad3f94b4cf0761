"""Synthetic correctness matrices with the paper's shape, from a seeded item-response model.

Model i has an ability theta_i and per-domain offsets delta_{i,d} (an equicorrelated normal across domains);
sample j has a difficulty b_j (around its domain's mean difficulty) and a discrimination a_j > 0. Then
P(A[i, j] = 1) = sigmoid(a_j * (theta_i + delta_{i,domain(j)} - b_j)). Samples are grouped in contiguous
domains, as the concatenated datasets of Lifelong-CIFAR10 are.

Cells are drawn on a fixed grid of (chunk_models x chunk_samples) chunks, each from its own random stream
`SeedSequence((seed, CELLS, row_chunk, col_chunk))`, so any block of rows x columns is regenerated exactly
without drawing the rest, and a 31,250 x 1,697,682 matrix can be produced piece by piece in bounded memory.
Per-model and per-sample parameters come from their own streams and are prefix-stable: a larger benchmark
with the same seed, chunk sizes and domain layout holds the smaller one's rows and columns unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

DEFAULT_CHUNK_MODELS = 32
DEFAULT_CHUNK_SAMPLES = 8192  # a multiple of 8, so packed column chunks start on whole bytes
_UNIFORM_BITS = 24  # each cell compares a 24-bit uniform integer with P * 2^24 (float32 precision)
_SCALE = np.float32(2**_UNIFORM_BITS)
_COMPARE = (np.float32, np.float32, np.bool_)
# Stream tags: SeedSequence((seed, tag, ...)); each kind of random draw has its own stream.
_CELLS, _ABILITY, _OFFSETS, _SHIFTS, _DIFFICULTY, _DISCRIMINATION = 1, 2, 3, 4, 5, 6

LIFELONG_CIFAR10_DOMAINS: dict[str, int] = {
    "CIFAR10": 10_000,
    "CIFAR10.1": 2_000,
    "CIFAR10.2": 12_000,
    "CINIC10": 210_000,
    "CIFAR10-W": 513_682,
    "CIFAR10-C": 950_000,
}
LIFELONG_CIFAR10_MODELS = 31_250


class BenchmarkShape(NamedTuple):
    """A benchmark's size: models (rows), samples (columns) and its domains' sizes in column order."""

    n_models: int
    n_samples: int
    domains: dict[str, int]


def lifelong_cifar10_shape() -> BenchmarkShape:
    """Lifelong-CIFAR10: 31,250 models x 1,697,682 samples in 6 domains
    (docs/protocols/sort-and-search.md#benchmark-sizes)."""
    domains = dict(LIFELONG_CIFAR10_DOMAINS)
    return BenchmarkShape(LIFELONG_CIFAR10_MODELS, sum(domains.values()), domains)


class Accuracies(NamedTuple):
    """Per-model accuracies: `expected` = mean P(correct) over samples, `observed` = exact mean of the drawn row."""

    expected: np.ndarray
    observed: np.ndarray


@dataclass(frozen=True)
class ItemResponseParams:
    """Distributions of the item-response parameters (defaults give accuracies spread from ~0.1 to ~0.95).

    theta ~ N(ability_mean, ability_scale); delta_{i,.} ~ N(0, domain_scale^2 * ((1 - rho) I + rho 11^T)) with
    rho = `domain_correlation`; domain mean difficulty ~ N(0, domain_shift_scale); b_j ~ N(domain mean,
    difficulty_scale); log a_j ~ N(log(discrimination_median), discrimination_log_scale).
    """

    ability_mean: float = 1.0
    ability_scale: float = 1.0
    domain_scale: float = 0.5
    domain_correlation: float = 0.5
    domain_shift_scale: float = 0.75
    difficulty_scale: float = 1.5
    discrimination_median: float = 1.5
    discrimination_log_scale: float = 0.35

    def __post_init__(self) -> None:
        scales = {k: getattr(self, k) for k in ("ability_scale", "domain_scale", "domain_shift_scale")}
        scales |= {k: getattr(self, k) for k in ("difficulty_scale", "discrimination_log_scale")}
        bad = {k: v for k, v in scales.items() if not (math.isfinite(v) and v >= 0)}
        if bad:
            raise ValueError(f"scales must be finite and >= 0, got {bad}")
        if not 0.0 <= self.domain_correlation <= 1.0:
            raise ValueError(f"domain_correlation must be in [0, 1], got {self.domain_correlation}")
        if not (math.isfinite(self.discrimination_median) and self.discrimination_median > 0):
            raise ValueError(f"discrimination_median must be a positive number, got {self.discrimination_median}")
        if not math.isfinite(self.ability_mean):
            raise ValueError(f"ability_mean must be finite, got {self.ability_mean}")


def _normal(seed: int, tag: int, size: int | tuple[int, ...]) -> np.ndarray:
    """Standard normals from the stream (seed, tag); row-major, so a prefix of a larger draw is the smaller draw."""
    return np.random.default_rng(np.random.SeedSequence((seed, tag))).standard_normal(size)


def _check_slice(index: slice, size: int, what: str) -> tuple[int, int]:
    if not isinstance(index, slice):
        raise TypeError(f"{what} must be a slice (e.g. slice(0, 100)), got {type(index).__name__}")
    start, stop, step = index.indices(size)
    if step != 1:
        raise ValueError(f"{what} must be a contiguous slice (step 1), got step {step}")
    return start, max(start, stop)


class SyntheticBenchmark:
    """A seeded item-response correctness matrix [n_models, n_samples] of uint8 0/1, generated block by block.

    `domain_sizes`: samples per domain in column order (a sequence, or a mapping name -> size); default:
    `n_domains` near-equal domains. `chunk_models` x `chunk_samples` is the random-stream grid: it is part of
    the benchmark's identity (other chunk sizes draw other cells) and bounds the memory of every operation.
    The drawn parameters are attributes: `abilities` [m], `domain_offsets` [m, D], `domain_difficulty` [D],
    `difficulties` [n] and `discriminations` [n] (float32), with `domain_names` and `domain_bounds` [D + 1].
    """

    def __init__(
        self,
        n_models: int,
        n_samples: int,
        *,
        n_domains: int = 6,
        seed: int = 0,
        domain_sizes: Sequence[int] | Mapping[str, int] | None = None,
        chunk_models: int = DEFAULT_CHUNK_MODELS,
        chunk_samples: int = DEFAULT_CHUNK_SAMPLES,
        params: ItemResponseParams | None = None,
    ) -> None:
        for name, value in (("n_models", n_models), ("n_samples", n_samples), ("chunk_models", chunk_models)):
            if not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(chunk_samples, int | np.integer) or chunk_samples < 8 or chunk_samples % 8:
            raise ValueError(f"chunk_samples must be a positive multiple of 8 (whole bytes), got {chunk_samples!r}")
        if not isinstance(seed, int | np.integer) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.n_models, self.n_samples, self.seed = int(n_models), int(n_samples), int(seed)
        self.chunk_models, self.chunk_samples = int(chunk_models), int(chunk_samples)
        self.params = params or ItemResponseParams()
        self.domain_names, sizes = _domain_layout(self.n_samples, n_domains, domain_sizes)
        self.domain_bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        p, n_dom = self.params, len(sizes)

        # per model: ability and equicorrelated per-domain offsets (a shared factor plus independent parts)
        self.abilities = (p.ability_mean + p.ability_scale * _normal(self.seed, _ABILITY, self.n_models)).astype(
            np.float32
        )
        z = _normal(self.seed, _OFFSETS, (self.n_models, n_dom + 1))
        rho = p.domain_correlation
        self.domain_offsets = (p.domain_scale * (math.sqrt(rho) * z[:, :1] + math.sqrt(1 - rho) * z[:, 1:])).astype(
            np.float32
        )
        self._effective = self.abilities[:, None] + self.domain_offsets  # theta_i + delta_{i,d}: [m, D]

        # per sample: difficulty around its domain's mean, and discrimination
        self.domain_difficulty = (p.domain_shift_scale * _normal(self.seed, _SHIFTS, n_dom)).astype(np.float32)
        shift = np.repeat(self.domain_difficulty, sizes)
        self.difficulties = (shift + p.difficulty_scale * _normal(self.seed, _DIFFICULTY, self.n_samples)).astype(
            np.float32
        )
        log_a = math.log(p.discrimination_median) + p.discrimination_log_scale * _normal(
            self.seed, _DISCRIMINATION, self.n_samples
        )
        self.discriminations = np.exp(log_a).astype(np.float32)
        self._ab = self.discriminations * self.difficulties  # a_j * b_j, so that -z = a_j b_j - a_j t_i

    def __repr__(self) -> str:
        return (
            f"SyntheticBenchmark({self.n_models} models x {self.n_samples} samples, {len(self.domain_names)} domains, "
            f"seed={self.seed}, chunks {self.chunk_models}x{self.chunk_samples})"
        )

    @property
    def shape(self) -> tuple[int, int]:
        """(n_models, n_samples)."""
        return self.n_models, self.n_samples

    def sample_domains(self) -> np.ndarray:
        """Domain index [n_samples] (int16) of every sample; names in `domain_names`."""
        sizes = np.diff(self.domain_bounds)
        return np.repeat(np.arange(len(sizes), dtype=np.int16), sizes)

    # -- probabilities and cells --------------------------------------------------------------------------

    def _minus_logits(self, r0: int, r1: int, c0: int, c1: int, out: np.ndarray) -> np.ndarray:
        """-z = a_j * (b_j - theta_i - delta_{i,d(j)}) for rows r0:r1 x columns c0:c1, written into `out`."""
        bounds = self.domain_bounds
        d0 = int(np.searchsorted(bounds, c0, side="right")) - 1
        d1 = int(np.searchsorted(bounds, c1, side="left"))
        for d in range(d0, d1):  # domains are contiguous: one outer product per domain segment
            s0, s1 = max(c0, int(bounds[d])), min(c1, int(bounds[d + 1]))
            seg = out[:, s0 - c0 : s1 - c0]
            np.multiply.outer(self._effective[r0:r1, d], self.discriminations[s0:s1], out=seg)
            np.subtract(self._ab[s0:s1], seg, out=seg)
        return out

    def _probabilities(self, r0: int, r1: int, c0: int, c1: int, out: np.ndarray) -> np.ndarray:
        """P(correct) = 1 / (1 + exp(-z)) as float32, written into `out`."""
        self._minus_logits(r0, r1, c0, c1, out)
        with np.errstate(over="ignore"):  # exp(-z) = inf gives P = 0, as it should
            np.exp(out, out=out)
        out += 1
        return np.reciprocal(out, out=out)

    def probabilities(self, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """P(correct) float32 [r, c] for a block (no randomness: the model behind the cells)."""
        r0, r1 = _check_slice(rows, self.n_models, "rows")
        c0, c1 = _check_slice(cols, self.n_samples, "cols")
        return self._probabilities(r0, r1, c0, c1, np.empty((r1 - r0, c1 - c0), np.float32))

    def _uniforms(self, row_chunk: int, col_chunk: int) -> np.ndarray:
        """The chunk's 24-bit uniform integers [chunk_models, chunk_samples] (int32), from its own stream."""
        bits = np.random.SFC64(np.random.SeedSequence((self.seed, _CELLS, row_chunk, col_chunk)))  # fastest raw bits
        raw = bits.random_raw(self.chunk_models * self.chunk_samples // 2).view(np.uint32)
        raw >>= 32 - _UNIFORM_BITS
        return raw.view(np.int32).reshape(self.chunk_models, self.chunk_samples)

    def _chunks(self, r0: int, r1: int, c0: int, c1: int):
        """(row chunk, col chunk, rows, cols) of every grid chunk meeting rows r0:r1 x cols c0:c1, row-major."""
        cm, cs = self.chunk_models, self.chunk_samples
        for rc in range(r0 // cm, -(-r1 // cm)):
            ra, rb = max(r0, rc * cm), min(r1, (rc + 1) * cm)
            for cc in range(c0 // cs, -(-c1 // cs)):
                yield rc, cc, (ra, rb), (max(c0, cc * cs), min(c1, (cc + 1) * cs))

    def _fill(
        self,
        rc: int,
        cc: int,
        rows: tuple[int, int],
        cols: tuple[int, int],
        out: np.ndarray,
        work: np.ndarray,
        row_prob_sums: np.ndarray | None = None,
    ) -> None:
        """Draw the cells rows x cols of chunk (rc, cc) into `out` (bool or uint8 view); add P row sums if asked."""
        (ra, rb), (ca, cb) = rows, cols
        w = work[: rb - ra, : cb - ca]
        self._probabilities(ra, rb, ca, cb, w)
        if row_prob_sums is not None:
            row_prob_sums += w.sum(axis=1, dtype=np.float64)
        w *= _SCALE  # P * 2^24 in [0, 2^24]: exact thresholds for 24-bit uniforms
        u = self._uniforms(rc, cc)[ra - rc * self.chunk_models : rb - rc * self.chunk_models]
        u = u[:, ca - cc * self.chunk_samples : cb - cc * self.chunk_samples]
        np.less(u, w, out=out.view(np.bool_), signature=_COMPARE)  # 24-bit integers are exact in float32

    def _work(self, rows: int, cols: int) -> np.ndarray:
        return np.empty((min(rows, self.chunk_models), min(cols, self.chunk_samples)), np.float32)

    def block(self, rows: slice = slice(None), cols: slice = slice(None)) -> np.ndarray:
        """Correctness uint8 0/1 [r, c] of rows x cols (contiguous slices); the same cells whatever block asks."""
        r0, r1 = _check_slice(rows, self.n_models, "rows")
        c0, c1 = _check_slice(cols, self.n_samples, "cols")
        out = np.empty((r1 - r0, c1 - c0), np.uint8)
        work = self._work(r1 - r0, c1 - c0)
        for rc, cc, (ra, rb), (ca, cb) in self._chunks(r0, r1, c0, c1):
            self._fill(rc, cc, (ra, rb), (ca, cb), out[ra - r0 : rb - r0, ca - c0 : cb - c0], work)
        return out

    def packed_rows(self, rows: slice = slice(None), *, out: np.ndarray | None = None) -> np.ndarray:
        """Bit-packed rows uint8 [r, ceil(n_samples / 8)] (= np.packbits(block(rows), axis=1)), chunk by chunk.

        At most one chunk is unpacked at a time; `out` (e.g. a np.memmap) receives the result if given.
        """
        return self._packed(rows, out, None)

    def _packed(self, rows: slice, out: np.ndarray | None, row_prob_sums: np.ndarray | None) -> np.ndarray:
        r0, r1 = _check_slice(rows, self.n_models, "rows")
        width = -(-self.n_samples // 8)
        if out is None:
            out = np.empty((r1 - r0, width), np.uint8)
        elif out.shape != (r1 - r0, width) or out.dtype != np.uint8:
            raise ValueError(f"out must be uint8 {(r1 - r0, width)} for these rows, got {out.dtype} {out.shape}")
        work = self._work(r1 - r0, self.n_samples)
        cells = np.empty(work.shape, np.uint8)
        for rc, cc, (ra, rb), (ca, cb) in self._chunks(r0, r1, 0, self.n_samples):
            chunk = cells[: rb - ra, : cb - ca]
            sums = None if row_prob_sums is None else row_prob_sums[ra - r0 : rb - r0]
            self._fill(rc, cc, (ra, rb), (ca, cb), chunk, work, sums)
            out[ra - r0 : rb - r0, ca // 8 : -(-cb // 8)] = np.packbits(chunk, axis=1)
        return out

    def true_accuracies(self, rows: slice = slice(None)) -> Accuracies:
        """Expected accuracy (mean P over samples) and observed accuracy (popcount of the packed rows) per model."""
        r0, r1 = _check_slice(rows, self.n_models, "rows")
        expected = np.zeros(r1 - r0, np.float64)
        ones = np.zeros(r1 - r0, np.int64)
        step = self.chunk_models
        start = r0
        while start < r1:  # one grid row of chunks at a time: a few MB of packed bits
            stop = min(r1, (start // step + 1) * step)
            packed = self._packed(slice(start, stop), None, expected[start - r0 : stop - r0])
            ones[start - r0 : stop - r0] = np.bitwise_count(packed).sum(axis=1, dtype=np.int64)
            start = stop
        return Accuracies(expected / self.n_samples, ones / self.n_samples)


def _domain_layout(
    n_samples: int, n_domains: int, domain_sizes: Sequence[int] | Mapping[str, int] | None
) -> tuple[tuple[str, ...], np.ndarray]:
    """Domain names and sizes (summing to n_samples), from explicit sizes or `n_domains` near-equal parts."""
    if domain_sizes is None:
        if not isinstance(n_domains, int | np.integer) or not 1 <= n_domains <= n_samples:
            raise ValueError(f"n_domains must be an integer in 1..n_samples ({n_samples}), got {n_domains!r}")
        sizes = np.array([len(part) for part in np.array_split(np.arange(n_samples), n_domains)], np.int64)
        return tuple(f"domain{d}" for d in range(n_domains)), sizes
    if isinstance(domain_sizes, Mapping):
        names, values = tuple(str(k) for k in domain_sizes), list(domain_sizes.values())
    else:
        values = list(domain_sizes)
        names = tuple(f"domain{d}" for d in range(len(values)))
    sizes = np.asarray(values, dtype=np.int64)
    if sizes.ndim != 1 or len(sizes) == 0 or (sizes < 1).any() or int(sizes.sum()) != n_samples:
        raise ValueError(
            f"domain_sizes must be positive integers summing to n_samples={n_samples}, got {values} "
            f"(sum {int(sizes.sum()) if sizes.size else 0})"
        )
    return names, sizes
