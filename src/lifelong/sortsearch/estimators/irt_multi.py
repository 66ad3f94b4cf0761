"""Multidimensional 2-parameter item response theory, as tinyBenchmarks (Polo et al., ICML 2024, eq. 3.1) uses it:
P(model l solves item i) = sigmoid(alpha_i . theta_l - beta_i), theta_l and alpha_i in R^D, beta_i a scalar.

The paper fits it by variational inference with hierarchical priors (py-irt); here `fit_mirt` is the joint MAP
with fixed normal priors theta ~ N(0, I), alpha ~ N(0, prior_a^2 I), beta ~ N(0, prior_b^2), by alternating
damped Newton steps (each block, items given abilities and abilities given items, is an L2 logistic regression).
`mirt_abilities` is a new model's ability from its outcomes on a few items: the maximum likelihood, as the
paper's code (BFGS from 0), here Newton steps from 0 with a vanishing ridge so that D > n' stays finite.
`choose_dimension` picks D on held-out source models as the paper's code does (every 5th source model held out,
abilities from the even items, error on the odd ones; the smallest D within 0.0025 of the best error).

Cost of one sweep: O(m n D^2) time on m models x n items, O(m * chunk) memory (items are processed in chunks).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import expit

_CHUNK = 1 << 22  # entries of a [models, items] block processed at once
MIN_DIMENSION_MODELS = 3  # choose_dimension holds out every 5th model and fits on the other (at least 2)


class MIRTFit(NamedTuple):
    """Item parameters alpha [n, D] and beta [n]; abilities theta [fitted models, D]."""

    discrimination: np.ndarray
    difficulty: np.ndarray
    ability: np.ndarray


def _item_step(Y: np.ndarray, theta: np.ndarray, W: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """One damped Newton step of every item's (alpha_i, beta_i) = W[i] given abilities, in place; mean change."""
    m, k = theta.shape[0], W.shape[1]
    F = np.hstack([theta, -np.ones((m, 1))])
    FF = (F[:, :, None] * F[:, None, :]).reshape(m, k * k)
    moved = 0.0
    step_items = max(1, _CHUNK // max(1, m))
    for s in range(0, W.shape[0], step_items):
        w = W[s : s + step_items]
        p = expit(F @ w.T)  # [m, chunk]
        grad = (Y[:, s : s + step_items] - p).T @ F - w * precision
        hess = ((p * (1 - p)).T @ FF).reshape(-1, k, k) + np.diag(precision)
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        scale = np.maximum(1.0, np.abs(step).max(axis=1, keepdims=True))
        w += step / scale
        moved += float(np.abs(step / scale).sum())
    return moved / W.size


def _ability_step(Y: np.ndarray, A: np.ndarray, b: np.ndarray, theta: np.ndarray, precision: float) -> float:
    """One damped Newton step of every row's ability given items (alpha A [n', D], beta b), in place; mean change."""
    n, d = A.shape
    AA = (A[:, :, None] * A[:, None, :]).reshape(n, d * d)
    moved = 0.0
    step_rows = max(1, _CHUNK // max(1, n))
    for s in range(0, theta.shape[0], step_rows):
        t = theta[s : s + step_rows]
        p = expit(t @ A.T - b)
        grad = (Y[s : s + step_rows] - p) @ A - precision * t
        hess = ((p * (1 - p)) @ AA).reshape(-1, d, d) + precision * np.eye(d)
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        step /= np.maximum(1.0, np.linalg.norm(step, axis=1, keepdims=True))
        y = Y[s : s + step_rows]
        before = _log_posterior(y, t, A, b, precision)
        for _ in range(8):  # halve the step of rows whose log posterior it would lower (flat likelihoods)
            worse = _log_posterior(y, t + step, A, b, precision) < before
            if not worse.any():
                break
            step[worse] *= 0.5
        step[worse] = 0.0
        t += step
        moved += float(np.abs(step).sum())
    return moved / max(1, theta.size)


def _log_posterior(Y: np.ndarray, theta: np.ndarray, A: np.ndarray, b: np.ndarray, precision: float) -> np.ndarray:
    """Per row: sum of Bernoulli log-likelihoods under logit theta . alpha - beta, minus the ridge."""
    z = theta @ A.T - b
    return (Y * z - np.logaddexp(0, z)).sum(axis=1) - 0.5 * precision * (theta * theta).sum(axis=1)


def fit_items(R: np.ndarray, ability: np.ndarray, *, prior_a: float = 1.0, prior_b: float = 3.0, iters: int = 20):
    """Every item's (alpha, beta) given the models' abilities [m, D]: an L2 logistic regression per item."""
    Y = np.asarray(R, np.float64)
    d = ability.shape[1]
    col = np.clip(Y.mean(axis=0), 0.5 / Y.shape[0], 1 - 0.5 / Y.shape[0])
    W = np.hstack([np.zeros((Y.shape[1], d)), -np.log(col / (1 - col))[:, None]])
    precision = np.r_[np.full(d, prior_a**-2), prior_b**-2]
    for _ in range(int(iters)):
        if _item_step(Y, ability, W, precision) < 1e-4:
            break
    return W[:, :d], W[:, d]


def fit_mirt(
    R: np.ndarray,
    dim: int,
    *,
    prior_a: float = 1.0,
    prior_b: float = 3.0,
    iters: int = 15,
    tol: float = 2e-3,
) -> MIRTFit:
    """Joint MAP of the D-dimensional 2PL on a [models, items] 0/1 matrix (see the module docstring); stops after
    `iters` sweeps or when a sweep moves the parameters by less than `tol` on average (predictions settle long
    before the extra dimensions stop drifting)."""
    Y = np.asarray(R, np.float64)
    m, n = Y.shape
    if m < 2:
        raise ValueError("an item-response fit needs at least 2 source models")
    d = int(dim)
    col = np.clip(Y.mean(axis=0), 0.5 / m, 1 - 0.5 / m)
    u, s, _ = np.linalg.svd(Y - Y.mean(axis=0), full_matrices=False)
    theta = np.zeros((m, d))
    r = min(d, u.shape[1])
    theta[:, :r] = u[:, :r] * np.sqrt(m) * (s[:r] > 1e-9)
    W = np.hstack([np.zeros((n, d)), -np.log(col / (1 - col))[:, None]])
    item_precision = np.r_[np.full(d, prior_a**-2), prior_b**-2]
    for _ in range(int(iters)):
        moved = _item_step(Y, theta, W, item_precision)
        moved = max(moved, _ability_step(Y, W[:, :d], W[:, d], theta, 1.0))
        if moved < tol:
            break
    return MIRTFit(W[:, :d].copy(), W[:, d].copy(), theta)


def mirt_abilities(
    observed: np.ndarray, A: np.ndarray, b: np.ndarray, *, prior_sd: float | None = None, iters: int = 50
) -> np.ndarray:
    """Abilities [rows, D] from 0/1 outcomes [rows, n'] on items (A [n', D], b [n']): the maximum likelihood
    (`prior_sd=None`; a 1e-6 ridge keeps it finite) or the MAP under theta ~ N(0, prior_sd^2 I)."""
    Y = np.asarray(observed, np.float64)
    theta = np.zeros((Y.shape[0], A.shape[1]))
    precision = 1e-6 if prior_sd is None else float(prior_sd) ** -2
    for _ in range(int(iters)):
        if _ability_step(Y, A, b, theta, precision) < 1e-6:
            break
    return theta


def mirt_probabilities(theta: np.ndarray, A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """P(correct) [rows, n] float32 of abilities theta [rows, D] on items (A [n, D], b [n])."""
    out = np.empty((theta.shape[0], A.shape[0]), np.float32)
    step = max(1, _CHUNK // max(1, theta.shape[0]))
    for s in range(0, A.shape[0], step):
        out[:, s : s + step] = expit(theta @ A[s : s + step].T - b[s : s + step])
    return out


def choose_dimension(R: np.ndarray, dims: tuple[int, ...], *, tolerance: float = 0.0025, **fit_options):
    """(D, validation error) as the paper's code: fit on all but every 5th model, abilities of those from the even
    items, mean |mean P - mean outcome| over the odd items; the smallest D within `tolerance` of the best."""
    Y = np.asarray(R)
    m, n = Y.shape
    held = np.arange(0, m, 5)
    train = np.setdiff1d(np.arange(m), held)
    if train.size < 2 or n < 2:
        raise ValueError(f"choosing the IRT dimension needs {MIN_DIMENSION_MODELS} or more source models and 2 samples")
    seen, unseen = np.arange(0, n, 2), np.arange(1, n, 2)
    truth = Y[np.ix_(held, unseen)].mean(axis=1)
    errors = []
    for d in sorted(dims):
        fit = fit_mirt(Y[train], d, **fit_options)
        theta = mirt_abilities(Y[np.ix_(held, seen)], fit.discrimination[seen], fit.difficulty[seen])
        P = mirt_probabilities(theta, fit.discrimination[unseen], fit.difficulty[unseen])
        errors.append(float(np.abs(P.mean(axis=1, dtype=np.float64) - truth).mean()))
    errors_arr = np.array(errors)
    best = int(np.argmax(errors_arr - errors_arr.min() < tolerance))
    return sorted(dims)[best], errors[best]
