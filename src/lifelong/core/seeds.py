"""Seed derivation: every random choice draws from its own stream, derived from the run's seed (no torch)."""

from __future__ import annotations

import numpy as np


def derive_seed(seed: int, *keys: int) -> int:
    """A 63-bit seed derived from `seed` and integer `keys`; different keys give independent streams."""
    values = [int(seed), *(int(k) for k in keys)]
    if min(values) < 0:
        raise ValueError(f"seeds and keys must be non-negative integers, got seed={seed}, keys={keys}")
    return int(np.random.SeedSequence(values).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
