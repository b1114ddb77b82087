"""The composition rules of dpstats.PrivacyBudget (dpstats/privacy/budget.py), on spends alone and
against exact profiles.

Deterministic (no random draws): no false failures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from statsmodels.datasets import engel

import dpstats
from dpstats.privacy.accounting import PrivacySpent, gaussian_delta, zcdp_to_approx_eps
from dpstats.privacy.budget import BudgetExceeded, PrivacyBudget, implied_eps

FORMULA = "foodexp ~ income"
BOUNDS = {"income": (0, 5000), "foodexp": (0, 2500)}


def pure(eps: float) -> PrivacySpent:
    return PrivacySpent("pure", eps)


def approx(eps: float, delta: float) -> PrivacySpent:
    return PrivacySpent("approx", eps, delta)


def zcdp(rho: float, delta: float = 1e-6) -> PrivacySpent:
    return PrivacySpent("zcdp", zcdp_to_approx_eps(rho, delta), delta, rho)


def spend(budget: PrivacyBudget, *spends: PrivacySpent) -> None:
    for s in spends:
        budget.check(s)
        budget.record(s, formula="y ~ x", estimator="ols", method="test")


# --------------------------------------------------------------------------
# Basic composition
# --------------------------------------------------------------------------


def test_pure_budget_adds_eps_and_takes_no_delta() -> None:
    budget = PrivacyBudget(eps=1)
    spend(budget, pure(0.25), pure(0.5))
    assert budget.spent == {"eps": 0.75, "delta": 0.0}
    assert budget.can_afford(pure(0.25)) and not budget.can_afford(pure(0.2500001))
    with pytest.raises(BudgetExceeded, match="a pure budget takes pure eps-DP fits only"):
        budget.check(approx(0.1, 1e-9))
    with pytest.raises(BudgetExceeded, match="delta would reach"):
        budget.check(zcdp(0.001))  # a zCDP fit counts as the (eps, delta) it reports
    assert len(budget.entries) == 2


def test_approximate_budget_adds_eps_and_delta() -> None:
    budget = PrivacyBudget(eps=2, delta=1e-5)
    spend(budget, approx(0.5, 4e-6), pure(0.5), approx(0.5, 4e-6))
    assert budget.spent["eps"] == 1.5 and budget.spent["delta"] == pytest.approx(8e-6, rel=1e-15)
    with pytest.raises(BudgetExceeded, match="deltas add up"):
        budget.check(approx(0.1, 3e-6))  # eps fits, delta does not
    with pytest.raises(BudgetExceeded, match="eps add up"):
        budget.check(pure(0.6))
    spend(budget, approx(0.5, 2e-6))
    assert budget.remaining["eps"] == 0.0 and budget.remaining["delta"] == pytest.approx(0.0, abs=1e-20)


def test_a_zcdp_fit_in_a_basic_budget_counts_its_reported_eps_and_delta() -> None:
    budget = PrivacyBudget(eps=5, delta=1e-5)
    spent = zcdp(0.1, 1e-6)
    spend(budget, spent)
    assert budget.spent == {"eps": spent.eps, "delta": 1e-6}


# --------------------------------------------------------------------------
# zCDP accounting
# --------------------------------------------------------------------------


def test_rhos_add_up_and_a_pure_fit_counts_half_its_eps_squared() -> None:
    """Bun & Steinke (2016): rho-zCDP fits compose by adding rho (Lemma 2.3); eps-DP is (eps^2/2)-zCDP (Prop. 1.4)."""
    budget = PrivacyBudget(rho=0.5)
    spend(budget, zcdp(0.1), pure(0.6), zcdp(0.2))
    assert budget.spent == {"rho": pytest.approx(0.1 + 0.18 + 0.2, rel=1e-15)}
    assert budget.remaining["rho"] == pytest.approx(0.02, rel=1e-9)
    assert budget.remaining["eps"] == pytest.approx(math.sqrt(2 * 0.02), rel=1e-9)
    with pytest.raises(BudgetExceeded, match="rho would reach"):
        budget.check(pure(0.21))  # 0.21^2 / 2 = 0.02205 > 0.02
    budget.check(pure(0.19))


def test_a_zcdp_account_refuses_a_fit_without_a_zcdp_guarantee() -> None:
    budget = PrivacyBudget(eps=5, delta=1e-6, accounting="zcdp")
    with pytest.raises(BudgetExceeded, match="has no zCDP guarantee"):
        budget.check(approx(0.1, 1e-9))


def test_the_eps_delta_target_is_checked_through_the_conversion() -> None:
    delta = 1e-6
    budget = PrivacyBudget(eps=1.0, delta=delta, accounting="zcdp")
    # the largest rho whose conversion is eps = 1: no more
    rho_max = dpstats.privacy.accounting.approx_to_zcdp_rho(1.0, delta)
    assert budget.remaining["rho"] == pytest.approx(rho_max, rel=1e-9)
    spend(budget, zcdp(rho_max / 2), zcdp(rho_max / 2))
    assert budget.spent["eps"] == pytest.approx(zcdp_to_approx_eps(rho_max, delta), rel=1e-12)
    assert budget.spent["eps"] <= 1.0
    with pytest.raises(BudgetExceeded, match=r"the total would be \("):
        budget.check(zcdp(rho_max * 1e-3))


def test_zcdp_accounting_beats_basic_for_many_zcdp_fits() -> None:
    """Ten rho = 0.005 fits: basic composition of their (eps, 1e-7) reports exceeds eps = 2, delta = 1e-6;
    the zCDP account converts rho = 0.05 once and takes them."""
    fits = [zcdp(0.005, 1e-7) for _ in range(10)]
    basic = PrivacyBudget(eps=2, delta=1e-6)
    with pytest.raises(BudgetExceeded):
        spend(basic, *fits)
    account = PrivacyBudget(eps=2, delta=1e-6, accounting="zcdp")
    spend(account, *fits)
    assert account.spent["eps"] == pytest.approx(zcdp_to_approx_eps(0.05, 1e-6), rel=1e-12)


def test_pure_fits_alone_are_never_worse_in_a_zcdp_account() -> None:
    """With the split that leaves every pure fit outside the zCDP part, the total is basic composition."""
    for eps in ([1.0], [0.5, 0.5, 0.5], [0.01] * 50, [2.0, 0.05]):
        assert implied_eps(0.0, eps, 1e-6) <= math.fsum(eps)


def test_implied_eps_takes_the_best_split() -> None:
    delta = 1e-6
    small, large, rho = 0.05, 1.0, 0.01
    inside_small = zcdp_to_approx_eps(rho + small**2 / 2, delta) + large
    all_outside = zcdp_to_approx_eps(rho, delta) + small + large
    all_inside = zcdp_to_approx_eps(rho + small**2 / 2 + large**2 / 2, delta)
    assert implied_eps(rho, [large, small], delta) == min(inside_small, all_outside, all_inside)


def _laplace_gaussian_delta(eps_pure: float, rho: float, eps: float) -> float:
    """Exact delta(eps) of a Laplace mechanism (eps_pure-DP, sensitivity 1) composed with a Gaussian (rho-zCDP).

    The privacy loss is Z = L + G with L the Laplace loss (eps_pure at y <= 0, -eps_pure at y >= 1,
    eps_pure (1 - 2y) between, y ~ Laplace(0, 1/eps_pure)) and G ~ N(rho, 2 rho) independent;
    delta(eps) = E[(1 - exp(eps - Z))_+] = E_L[gaussian_delta(sqrt(2 rho), eps - L)].
    """
    mu = math.sqrt(2 * rho)
    b = 1 / eps_pure
    atoms = 0.5 * gaussian_delta(mu, eps - eps_pure) + 0.5 * math.exp(-1 / b) * gaussian_delta(mu, eps + eps_pure)
    middle, _ = integrate.quad(
        lambda y: math.exp(-y / b) / (2 * b) * gaussian_delta(mu, eps - eps_pure * (1 - 2 * y)), 0, 1
    )
    return atoms + middle


def test_gaussian_delta_holds_below_zero_too() -> None:
    """The helper above evaluates Balle & Wang's curve at eps - L < 0; check it there by quadrature."""
    mu, t = 0.8, -0.3
    direct, _ = integrate.quad(
        lambda z: (
            max(0.0, 1 - math.exp(t - z))
            * math.exp(-((z - mu**2 / 2) ** 2) / (2 * mu**2))
            / (mu * math.sqrt(2 * math.pi))
        ),
        -20,
        20,
        points=[t],
    )
    assert gaussian_delta(mu, t) == pytest.approx(direct, rel=1e-7)


@pytest.mark.parametrize(
    ("eps_pure", "rho", "split"),
    [(0.05, 0.5, "inside"), (1.0, 0.01, "outside"), (0.3, 0.05, None), (2.0, 0.2, None)],
)
def test_the_mixed_bound_holds_for_laplace_and_gaussian(eps_pure: float, rho: float, split: str | None) -> None:
    """The eps a zCDP account proves for one pure and one zCDP fit is valid for a real pair: the exact delta of
    a Laplace and a Gaussian mechanism composed, at that eps, is at most the budget's delta."""
    delta = 1e-6
    bound = implied_eps(rho, [eps_pure], delta)
    if split == "inside":
        assert bound == zcdp_to_approx_eps(rho + eps_pure**2 / 2, delta)
    if split == "outside":
        assert bound == zcdp_to_approx_eps(rho, delta) + eps_pure
    assert _laplace_gaussian_delta(eps_pure, rho, bound) <= delta


# --------------------------------------------------------------------------
# Through the fits
# --------------------------------------------------------------------------


def test_a_zcdp_account_through_the_fits() -> None:
    data = engel.load_pandas().data
    budget = PrivacyBudget(eps=2, delta=1e-6, accounting="zcdp")
    a = dpstats.dp_ols(FORMULA, data, eps=0.3, bounds=BOUNDS, method="noisystats", budget=budget, random_state=1)
    b = dpstats.dp_ols(
        FORMULA, data, rho=0.05, method="gradient", variant="zcdp", bounds=BOUNDS, budget=budget, random_state=2
    )
    assert (a.privacy.notion, b.privacy.notion, b.privacy.rho) == ("pure", "zcdp", 0.05)
    assert budget.spent["rho"] == pytest.approx(0.05 + 0.3**2 / 2, rel=1e-15)
    assert budget.spent["eps"] == implied_eps(0.05, [0.3], 1e-6) <= 2
    with pytest.raises(BudgetExceeded, match="no zCDP guarantee"):
        dpstats.dp_ols(
            FORMULA, data, eps=0.1, delta=1e-7, method="gradient", variant="approx", bounds=BOUNDS, budget=budget
        )
    ledger = budget.ledger
    assert isinstance(ledger, pd.DataFrame) and ledger["rho"].tolist()[1] == 0.05 and np.isnan(ledger["rho"][0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "a budget needs eps"),
        ({"eps": 1, "rho": 0.1, "accounting": "basic"}, "rho is the cap of a zCDP account"),
        ({"eps": 1, "accounting": "zcdp"}, "needs delta > 0"),
        ({"rho": 0.1, "delta": 1e-6}, "pass eps= too"),
        ({"eps": 1, "accounting": "renyi"}, "accounting must be one of"),
        ({"eps": -1}, "eps must be a positive"),
        ({"eps": 1, "delta": 1.0}, "delta must be a number in"),
    ],
)
def test_a_budget_is_validated(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PrivacyBudget(**kwargs)
