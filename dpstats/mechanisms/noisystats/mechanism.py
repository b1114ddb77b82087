"""NoisyStats: noisy OLS sufficient statistics (Alabi et al. 2022, Algorithm 1).

One regressor with an intercept is Algorithm 1 exactly, on the data rescaled
to [0, 1]^2 by the declared bounds: eps/3 to each of ncov(x, y), nvar(x) and
the intercept, Laplace noise with sensitivity Delta = 1 - 1/n (Lemma 19), and
failure (the paper's ⊥) when the noisy nvar(x) <= 0.

Several regressors (the multivariate generalisation). With slope columns
u_1..u_p and response v rescaled to [0, 1] (an exact affine map because the
model has an intercept), release

* S_xy = (ncov(u_j, v))_j                      with eps/3,
* S_xx = (ncov(u_j, u_k))_{j <= k}             with eps/3,
* the intercept  v_bar - b~ . u_bar            with eps/3,

where b~ = S~_xx^{-1} S~_xy. Lemma 19's proof holds for ncov of any two
vectors in [0, 1]^n, so each entry has replace-one sensitivity 1 - 1/n and the
L1 sensitivities are p(1 - 1/n) for S_xy and p(p+1)/2 (1 - 1/n) for S_xx. Both
are attained together by n - 1 rows at the origin and one row moved from the
origin to the all-ones corner (every centred product moves by 1 - 1/n). The
intercept has sensitivity (1 + sum_j |b~_j|)/n given the released b~, since
each mean moves by at most 1/n. At p = 1 this is Algorithm 1 draw for draw.
Failure generalises nvar <= 0: the noisy S_xx is not positive definite.

Without an intercept the affine rescaling would change the model, so each
column is divided by c_j = max(|lo_j|, |hi_j|) (into [-1, 1]) and the
uncentred X'X (upper triangle) and X'y are released with eps/2 each; the
sensitivity of each entry is the width of its interval (x_j x_k by interval
multiplication, x_j^2 as an exact square), i.e. the most one row's
contribution can move, summed for the L1 sensitivity.

NoisyStats releases no valid standard error: one that covers both the
sampling error and the privacy noise needs a separately budgeted residual
variance (left for the DP inference issue), so the SEs are NaN.
"""

from __future__ import annotations

import numpy as np

from ...design import CenteredUnitScale, Design, place_coefficients
from ...intervals import power, product
from ...noise import laplace_mechanism
from ...privacy import PrivacySpent
from ..base import PrivacyRequest, Release, failed_release

SE_NOTE = (
    "NoisyStats releases no private standard errors: a valid one must cover the sampling error "
    "and the privacy noise, which needs a separately budgeted residual variance. SEs, tests and "
    "intervals are NaN."
)
FAIL_REASON = "the noisy n*var(x) matrix was not positive definite (the paper's failure output)"


def centered_sensitivity(n: int) -> float:
    """Replace-one sensitivity of ncov(u, v) for u, v in [0, 1]^n (Lemma 19)."""
    return 1.0 - 1.0 / n


def _upper(matrix: np.ndarray) -> np.ndarray:
    return matrix[np.triu_indices(matrix.shape[0])]


def _symmetric(upper: np.ndarray, p: int) -> np.ndarray:
    out = np.zeros((p, p))
    out[np.triu_indices(p)] = upper
    return out + np.triu(out, 1).T


def _is_positive_definite(matrix: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def fit(design: Design, privacy: PrivacyRequest, rng: np.random.Generator) -> Release:
    """Run NoisyStats on ``design`` (see the module docstring)."""
    if design.intercept_index is None:
        return _fit_through_origin(design, privacy, rng)
    return _fit_centered(design, privacy, rng)


def _fit_centered(design: Design, privacy: PrivacyRequest, rng: np.random.Generator) -> Release:
    eps, n = privacy.eps, design.n
    spent = PrivacySpent(
        notion="pure",
        eps=eps,
        split=(("ncov(x, y)", eps / 3), ("nvar(x)", eps / 3), ("intercept", eps / 3)),
    )
    scale = CenteredUnitScale.from_design(design)
    U, v = scale.transform(design)
    p = U.shape[1]
    u_bar, v_bar = U.mean(axis=0), v.mean()
    Uc = U - u_bar
    delta = centered_sensitivity(n)

    s_xy = laplace_mechanism(rng, Uc.T @ (v - v_bar), p * delta, eps / 3, "ncov(x, y)")
    s_xx_upper = laplace_mechanism(rng, _upper(Uc.T @ Uc), p * (p + 1) / 2 * delta, eps / 3, "nvar(x)")
    s_xx = _symmetric(np.atleast_1d(s_xx_upper), p)
    s_xy = np.atleast_1d(s_xy)
    noisy_stats = _user_unit_stats(scale, s_xx, s_xy)
    if not _is_positive_definite(s_xx):
        return failed_release(design.n_columns, spent, FAIL_REASON, SE_NOTE, noisy_stats=noisy_stats)

    slopes = np.linalg.solve(s_xx, s_xy)
    intercept_sensitivity = (1.0 + np.abs(slopes).sum()) / n
    intercept = laplace_mechanism(rng, v_bar - slopes @ u_bar, intercept_sensitivity, eps / 3, "intercept")
    theta = scale.jacobian() @ np.concatenate([[intercept], slopes]) + scale.offset()
    return _release(design, theta[0], theta[1:], spent, noisy_stats)


def _fit_through_origin(design: Design, privacy: PrivacyRequest, rng: np.random.Generator) -> Release:
    eps = privacy.eps
    spent = PrivacySpent(notion="pure", eps=eps, split=(("X'y", eps / 2), ("X'X", eps / 2)))
    x_scale = np.abs(design.x_bounds).max(axis=1)
    y_scale = float(np.abs(design.y_bounds).max())
    Xs, ys = design.X / x_scale, design.y / y_scale
    xb = design.x_bounds / x_scale[:, None]
    yb = (design.y_bounds[0] / y_scale, design.y_bounds[1] / y_scale)
    p = Xs.shape[1]

    def width(interval: tuple[float, float]) -> float:
        return interval[1] - interval[0]

    xy_sensitivity = sum(width(product(tuple(xb[j]), yb)) for j in range(p))
    xx_sensitivity = sum(
        width(power(tuple(xb[j]), 2) if j == k else product(tuple(xb[j]), tuple(xb[k])))
        for j in range(p)
        for k in range(j, p)
    )
    xty = np.atleast_1d(laplace_mechanism(rng, Xs.T @ ys, xy_sensitivity, eps / 2, "X'y"))
    xtx = _symmetric(np.atleast_1d(laplace_mechanism(rng, _upper(Xs.T @ Xs), xx_sensitivity, eps / 2, "X'X")), p)
    noisy_stats = {
        "X'X": xtx * np.outer(x_scale, x_scale),
        "X'y": xty * x_scale * y_scale,
    }
    if not _is_positive_definite(xtx):
        return failed_release(p, spent, FAIL_REASON, SE_NOTE, noisy_stats=noisy_stats)
    coef = np.linalg.solve(xtx, xty) * y_scale / x_scale
    return Release(params=coef, cov=np.full((p, p), np.nan), privacy=spent, se_note=SE_NOTE, noisy_stats=noisy_stats)


def _user_unit_stats(scale: CenteredUnitScale, s_xx: np.ndarray, s_xy: np.ndarray) -> dict:
    """The released statistics mapped to the user's units (post-processing)."""
    return {
        "nvar(x)": s_xx * np.outer(scale.x_width, scale.x_width),
        "ncov(x, y)": s_xy * scale.x_width * scale.y_width,
    }


def _release(design: Design, intercept: float, slopes: np.ndarray, spent: PrivacySpent, stats: dict) -> Release:
    p = design.n_columns
    return Release(
        params=place_coefficients(design, intercept, slopes),
        cov=np.full((p, p), np.nan),
        privacy=spent,
        se_note=SE_NOTE,
        noisy_stats=stats,
    )
