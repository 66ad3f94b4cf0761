"""Item-response models of a 0/1 matrix: P(model i solves sample j) = sigmoid(a_j (theta_i - b_j)).

`fit_irt` fits difficulties b, discriminations a (the 2PL model; a = 1 is the Rasch model) and abilities theta by
alternating damped Newton steps (joint MAP, weak normal priors) on the ranking rows; `irt_abilities` is the MAP
ability of a new row from its outcomes on a few items. Rasch difficulties are a monotone function of column sums.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from lifelong.sortsearch.search import as_sampled


class IRTFit(NamedTuple):
    """Item-response parameters: per sample difficulty b and discrimination a, per ranking model ability theta."""

    difficulty: np.ndarray
    discrimination: np.ndarray
    ability: np.ndarray


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit_irt(
    R: Any, *, discrimination: bool = True, iters: int = 30, prior_b: float = 3.0, prior_log_a: float = 0.5
) -> IRTFit:
    """Fit P(R[i, j] = 1) = sigmoid(a_j (theta_i - b_j)) by alternating damped Newton steps (joint MAP).

    Priors: theta ~ N(0, 1) (abilities are re-standardised after each sweep, a and b rescaled to match),
    b ~ N(0, prior_b^2), log a ~ N(0, prior_log_a^2); they keep all-correct / all-wrong samples finite.
    `discrimination=False` is the Rasch model (a = 1, abilities only centred).
    """
    Y = np.asarray(R, np.float64)
    m, n = Y.shape
    if m < 2:
        raise ValueError("an item-response fit needs at least 2 ranking models")
    col = Y.mean(axis=0)
    b = -np.log(np.clip(col, 0.5 / m, 1 - 0.5 / m) / np.clip(1 - col, 0.5 / m, 1 - 0.5 / m))
    row = Y.mean(axis=1)
    theta = np.log(np.clip(row, 0.01, 0.99) / np.clip(1 - row, 0.01, 0.99))
    log_a = np.zeros(n)
    for _ in range(int(iters)):
        a = np.exp(log_a)
        for _ in range(2):  # abilities given items
            z = a[None, :] * (theta[:, None] - b[None, :])
            p = _sigmoid(z)
            w = p * (1 - p)
            grad = (Y - p) @ a - theta
            hess = w @ (a * a) + 1.0
            theta += np.clip(grad / hess, -1, 1)
        z = a[None, :] * (theta[:, None] - b[None, :])
        p = _sigmoid(z)
        w = p * (1 - p)
        resid = Y - p
        grad_b = -a * resid.sum(axis=0) - b / prior_b**2
        hess_b = a * a * w.sum(axis=0) + 1 / prior_b**2
        b += np.clip(grad_b / hess_b, -1, 1)
        if discrimination:
            z = a[None, :] * (theta[:, None] - b[None, :])
            p = _sigmoid(z)
            grad_a = ((Y - p) * z).sum(axis=0) - log_a / prior_log_a**2
            hess_a = (p * (1 - p) * z * z).sum(axis=0) + 1 / prior_log_a**2
            log_a += np.clip(grad_a / hess_a, -0.5, 0.5)
            mu, sd = theta.mean(), max(theta.std(), 1e-6)
            theta, b, log_a = (theta - mu) / sd, (b - mu) / sd, log_a + math.log(sd)
        else:
            mu = theta.mean()
            theta, b = theta - mu, b - mu
    return IRTFit(b, np.exp(log_a), theta)


def irt_abilities(sampled: Any, a: Any, b: Any, *, prior_sd: float = 1.0, iters: int = 25) -> np.ndarray:
    """MAP ability per row from 0/1 outcomes [rows, n'] on items with discriminations a and difficulties b [n']."""
    B = as_sampled(sampled).astype(np.float64)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    theta = np.zeros(B.shape[0])
    for _ in range(int(iters)):
        p = _sigmoid(a[None, :] * (theta[:, None] - b[None, :]))
        grad = (B - p) @ a - theta / prior_sd**2
        hess = (p * (1 - p)) @ (a * a) + 1 / prior_sd**2
        theta += np.clip(grad / hess, -1, 1)
    return theta
