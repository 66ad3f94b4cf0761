"""The linear algebra the regression estimators share: ridge regression with a leave-one-out choice of penalty,
principal components of 0/1 rows (column chunks, so a uint8 matrix is never copied whole as floats), and the
least-squares fit of a partly observed row on those components.

- `fit_ridge`: min ||Y - X W - 1 c||^2 + alpha ||W||^2 with an unpenalised intercept c, closed form through the
  SVD of the centred X; with several penalties, the one of least mean squared leave-one-out error over all rows
  and targets, e_i / (1 - h_ii) (Golub, Heath & Wahba 1979; what scikit-learn's `RidgeCV()` does by default).
- `principal_components`: the top-k right singular vectors of the column-centred rows, from the eigenvectors of
  the [rows, rows] Gram matrix (accumulated over column chunks).
- `fit_on_components`: the coefficients z of a row observed on some columns, least squares
  min ||x_obs - mean_obs - z V_obs||^2; the fixed point of iterative PCA imputation with the components held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CHUNK = 8192  # columns per block when a [rows, n] 0/1 matrix is turned into floats
ZOO_ALPHAS = (0.1, 1.0, 10.0)  # scikit-learn RidgeCV's default penalties, which Zhang et al. (2025) use
MIN_SOURCES = 2  # source models a regression (or any estimator that calls check_source) needs at least


def check_source(source: np.ndarray) -> np.ndarray:
    """The source models' rows, or an error in plain words when they hold values other than 0/1."""
    if source.shape[0] < MIN_SOURCES:
        raise ValueError(f"a regression estimator needs at least {MIN_SOURCES} source models; got {source.shape[0]}")
    if source.dtype == np.bool_ or not source.size:
        return source
    if np.issubdtype(source.dtype, np.unsignedinteger):  # a max of 1 says it all, without a [m, n] temporary
        wrong = source.max() > 1
    else:
        wrong = source.min() < 0 or source.max() > 1 or not np.array_equal(source, source.astype(bool))
    if wrong:
        raise ValueError("the source models' rows must hold 0 (wrong) or 1 (correct) only")
    return source


def subsample_indices(size: int, limit: int | None, rng: np.random.Generator) -> np.ndarray:
    """All of range(size), or a sorted random `limit` of them (drawn without replacement)."""
    if limit is None or size <= limit:
        return np.arange(size)
    return np.sort(rng.choice(size, size=int(limit), replace=False))


def subsample_rows(source: np.ndarray, max_models: int | None, rng: np.random.Generator) -> np.ndarray:
    """All source rows, or `max_models` of them drawn uniformly without replacement (in their order)."""
    if max_models is None or max_models >= source.shape[0]:
        return source
    if max_models < 2:
        raise ValueError(f"max_models must be at least 2; got {max_models}")
    return source[subsample_indices(source.shape[0], max_models, rng)]


@dataclass(frozen=True)
class RidgeFit:
    coef: np.ndarray  # [features, targets]
    intercept: np.ndarray  # [targets]
    alpha: float
    loo_residuals: np.ndarray | None = None  # [rows, targets] leave-one-out residuals at `alpha`

    def predict(self, X: np.ndarray) -> np.ndarray:
        """[rows, targets] predictions ([rows] when fitted on one target)."""
        out = np.asarray(X, np.float64) @ self.coef + self.intercept
        return out[:, 0] if self.coef.shape[1] == 1 else out


def fit_ridge(X: np.ndarray, Y: np.ndarray, alphas: Sequence[float] = ZOO_ALPHAS) -> RidgeFit:
    """Ridge regression of Y [rows] or [rows, targets] on X [rows, features] with an unpenalised intercept; the
    penalty among `alphas` of least mean squared leave-one-out error (the first of equals), or the one given."""
    X = np.asarray(X, np.float64)
    Y = np.asarray(Y, np.float64)
    Y2 = Y[:, None] if Y.ndim == 1 else Y
    alphas = [float(a) for a in alphas]
    if not alphas or min(alphas) <= 0:
        raise ValueError(f"ridge penalties must be positive; got {alphas}")
    rows = X.shape[0]
    x_mean, y_mean = X.mean(axis=0), Y2.mean(axis=0)
    U, s, Vt = np.linalg.svd(X - x_mean, full_matrices=False)
    UtY = U.T @ (Y2 - y_mean)
    errors, residuals = [], []
    for a in alphas:
        shrink = s * s / (s * s + a)
        fitted = U @ (shrink[:, None] * UtY)
        leverage = (U * U) @ shrink + 1.0 / rows  # the intercept's column of ones adds 1/rows
        loo = (Y2 - y_mean - fitted) / np.maximum(1.0 - leverage, 1e-12)[:, None]
        errors.append(float(np.mean(loo * loo)))
        residuals.append(loo)
    best = int(np.argmin(errors))
    alpha = alphas[best]
    coef = Vt.T @ ((s / (s * s + alpha))[:, None] * UtY)
    return RidgeFit(coef, y_mean - x_mean @ coef, alpha, residuals[best])


def _float_block(rows: np.ndarray, start: int, mean: np.ndarray) -> np.ndarray:
    return rows[:, start : start + CHUNK].astype(np.float64) - mean[start : start + CHUNK]


def principal_components(rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean [n], components [k', n] orthonormal, singular values [k']) of the column-centred rows, k' <= k the
    components with a singular value above 1e-6 of the largest. O(m^2 n) time, O(m^2 + k n) memory."""
    m, n = rows.shape
    mean = rows.mean(axis=0, dtype=np.float64)
    gram = np.zeros((m, m))
    for start in range(0, n, CHUNK):
        block = _float_block(rows, start, mean)
        gram += block @ block.T
    values, vectors = np.linalg.eigh(gram)
    order = np.argsort(values)[::-1][: max(1, int(k))]
    sing = np.sqrt(np.clip(values[order], 0.0, None))
    keep = sing > 1e-6 * max(float(sing[0]), 1e-300)
    sing, left = sing[keep], vectors[:, order[keep]]
    components = np.empty((sing.size, n))
    for start in range(0, n, CHUNK):
        components[:, start : start + CHUNK] = (left.T @ _float_block(rows, start, mean)) / sing[:, None]
    return mean, components, sing


def fit_on_components(observed: np.ndarray, items: np.ndarray, mean: np.ndarray, components: np.ndarray) -> np.ndarray:
    """[rows, k] least-squares coefficients of rows observed on `items` on the components (minimum norm when
    the k components restricted to the items are not independent)."""
    A = components[:, items].T
    Z, *_ = np.linalg.lstsq(A, (np.asarray(observed, np.float64) - mean[items]).T, rcond=None)
    return Z.T
