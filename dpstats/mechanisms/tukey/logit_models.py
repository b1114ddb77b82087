"""Step 1 of the Tukey mechanism for ``dp_logit`` / ``dp_probit``: a bias-corrected MLE on every batch.

Amin, Joseph, Ribero, Vassilvitskii (2023) fit OLS on each of m disjoint
batches and name logistic regression as the natural extension (section 6);
their privacy argument, and ours for replacement neighbours
(dpstats/mechanisms/tukey/mechanism.py, part (a)), needs only that each model
is a function of its own batch and of data-independent draws. Here each batch
fits the binary-response MLE of its link (:func:`dpstats.glm.mle.fit_mle`, the
whole ``(k, b, d)`` stack at once: every batch runs its own Newton iterations,
stops on its own test and is frozen once done, so its coefficients do not
depend on the other batches' rows; tests/test_tukey_logit.py checks this bit
for bit), then removes the MLE's first-order bias:

    theta_c = theta + 1/2 I^-1 sum_i h_i (f'(eta_i) / f(eta_i)) x_i

with ``I = sum_i w_i x_i x_i'`` the Fisher information (``w`` the link's
information weight), ``h_i = w_i x_i' I^-1 x_i`` the leverages and ``f'/f``
``1 - 2F`` for the logit, ``-eta`` for the probit (Cordeiro & McCullagh 1991,
eq. 4.2; Kosmidis & Firth 2009, section 3: the one-step form of Firth's 1993
adjusted score). On b rows with a rare outcome the MLE is biased away from 0
by O(1/b), and the median of a thousand batches turns that into standard
errors of bias (at a 10% base rate and 150 rows a batch, the intercept's
median lay 0.33 batch MADs from the truth, 3.7 standard errors of the
aggregate at m = 200; corrected, 0.11): the role the jackknife plays for OLS
(dpstats/mechanisms/tukey/jackknife.py).

**The trap: a batch without a finite MLE.** Under (quasi-)complete separation
(a batch with no event, or whose events a hyperplane splits from the rest:
common when a batch holds a few events) the likelihood has no maximiser, and
fit_mle flags the batch as failed; so does a batch whose design is rank
deficient (a dummy whose level is absent: the whole batch, unlike OLS's
coefficient-wise mask) or holds a non-finite or huge value
(``|x| > X_LIMIT``, refused before fitting so that no overflow reaches the
stack's linear algebra). A failed batch's model is the fixed point that
:func:`~.models.partition_models` gives an unknown coefficient:
``+-MODEL_LIMIT`` in every coordinate, with signs drawn before the data are
read. This keeps the proof: replacing one row changes one batch, whose model
may then change arbitrarily (part (a) of the proof allows any change of that
one point), and the failed model is a function of that batch (whether it
failed) and of data-independent draws only. The extremes sit outside every
inner depth region, so they widen the outer depths only (lowering the PTR
statistic a little), and with balanced signs they do not move the median in
expectation; but the batches that fail are the ones with the fewest events, so
a large share of failures biases the median of the others.
dpstats/mechanisms/tukey/default_m.py therefore sizes binary batches so that
failures are rare (:func:`~.default_m.binary_batch_rows`).

With survey weights each batch fits the weighted (pseudo-)MLE, survey::svyglm's point estimate, and the
correction's information and leverages take the factor ``w_i`` (prior weights multiply the working weights).

The intervals are the family's (dpstats/mechanisms/tukey/inference.py: the
released spread of the fits scaling the exact law of the median and the
sampler on an idealised cloud), with the skew allowance
:data:`~.inference.BINARY_SKEW` by default.
"""

from __future__ import annotations

import numpy as np

from ...glm.links import Link, get_link
from ...glm.mle import fit_mle
from .models import MODEL_LIMIT, BatchFit

MEDIAN_SHARE = 0.75
"""The part of the mean-bias correction each batch applies: the Tukey point is a median, so the batch fits should
be median-unbiased, not mean-unbiased (module docstring)."""
X_LIMIT = 1e100
"""A batch holding a design value beyond this (or a non-finite one) fails before it is fitted: its Hessian could
overflow. The front end clips a binary design to its declared bounds, so this is a guard, not a rule."""


def glm_batch_fit(link: str) -> BatchFit:
    """The batch fit of the bias-corrected MLE of ``link`` ("logit" or "probit"), for
    :func:`~.models.partition_models`."""
    model = get_link(link)

    def fit(Xb: np.ndarray, yb: np.ndarray, wb: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return batch_glm(Xb, yb, model, wb)

    return fit


def batch_glm(
    Xb: np.ndarray, yb: np.ndarray, link: Link, wb: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The bias-corrected MLE of each batch, weighted by the survey weights ``wb`` if given (module docstring):
    ``(k, d)`` coefficients (0 where the batch failed) and the ``(k, d)`` mask of the failed batches'
    coefficients (every coordinate of a failed batch)."""
    Xb = np.asarray(Xb, dtype=float)
    yb = np.asarray(yb, dtype=float)
    with np.errstate(all="ignore"):
        usable = (
            np.all(np.isfinite(Xb) & (np.abs(Xb) <= X_LIMIT), axis=(1, 2))
            & np.all(np.isfinite(yb) & (yb >= 0.0) & (yb <= 1.0), axis=1)
            & (Xb.shape[1] > 0)
        )
        Xs = np.where(usable[:, None, None], Xb, 0.0)  # a zero batch has rank 0: fit_mle flags it failed
        ys = np.where(usable[:, None], yb, 0.0)
        mle = fit_mle(link, Xs, ys, wb)
        theta = np.where(mle.failed[:, None], 0.0, mle.params)
        corrected = theta + MEDIAN_SHARE * bias_correction(link, Xs, theta, wb)
    failed = mle.failed | ~usable | ~np.all(np.isfinite(corrected) & (np.abs(corrected) <= MODEL_LIMIT), axis=1)
    coef = np.where(failed[:, None], 0.0, corrected)
    return coef, np.broadcast_to(failed[:, None], coef.shape).copy()


def bias_correction(link: Link, Xb: np.ndarray, theta: np.ndarray, wb: np.ndarray | None = None) -> np.ndarray:
    """``(k, d)``: ``1/2 I^-1 sum_i h_i (f'/f)(eta_i) x_i`` at each batch's ``theta`` (module docstring; the
    information weights times the survey weights ``wb`` if given)."""
    eta = np.einsum("kbd,kd->kb", Xb, theta)
    weight = link.information_weight(eta) * (1.0 if wb is None else wb)
    information = np.einsum("kb,kbi,kbj->kij", weight, Xb, Xb)
    inverse = np.linalg.pinv(information, hermitian=True)
    leverage = weight * np.einsum("kbi,kij,kbj->kb", Xb, inverse, Xb)
    slope_ratio = 1.0 - 2.0 * link.mean(eta) if link.name == "logit" else -eta
    return 0.5 * np.einsum("kij,kbj,kb->ki", inverse, Xb, leverage * slope_ratio)
