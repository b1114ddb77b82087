"""A project's privacy budget across calls: :class:`PrivacyBudget`, its ledger and its file.

``budget = dpstats.PrivacyBudget(eps=2)`` and then ``dp_ols(..., eps=0.5, budget=budget)``:
a fit given a budget is checked against it from its public inputs alone, before
any data are read, and refused (:class:`BudgetExceeded`, the budget unchanged)
if it could overspend; once it has released, what its result reports
(``res.privacy``: eps, delta, rho) is recorded in ``budget.ledger``. A fit that
raises spends nothing (it released nothing); a mechanism that fails returns a
failed release, and that release has spent its budget (docs/DESIGN.md section 2).

How fits add up (the account is chosen when the budget is made)
---------------------------------------------------------------

``accounting="basic"`` (the default; ``PrivacyBudget(eps=..., delta=...)``)
    Basic composition (Dwork & Roth 2014, Theorem 3.16): the fits' eps add up and
    their deltas add up; the whole is (sum eps, sum delta)-DP, and each sum must
    stay within the budget's. A pure budget (delta = 0) takes pure eps-DP fits
    only. A zCDP fit counts as the (eps, delta) it reports (implied at the delta
    it was given, or at 1e-6, :data:`~dpstats.privacy.accounting.DEFAULT_REPORT_DELTA`).

``accounting="zcdp"`` (the default when ``rho=`` is given)
    Every fit needs a zCDP guarantee. A zCDP fit counts its rho; a pure eps-DP
    fit is (eps^2 / 2)-zCDP (Bun & Steinke 2016, Proposition 1.4); an (eps,
    delta)-DP fit without a zCDP guarantee is refused. Rhos add up (Bun &
    Steinke 2016, Lemma 2.3), so the whole is rho-zCDP with rho the sum, which
    must stay within ``rho=`` when given. With ``eps=`` and ``delta=`` (delta > 0)
    the whole must also be (eps, delta)-DP: the zCDP fits' rho is converted at
    the budget's delta by :func:`~dpstats.privacy.accounting.zcdp_to_approx_eps`, and each
    pure fit is counted either inside that rho (as eps^2 / 2) or outside it, its
    eps added to the converted eps, whichever proves the smaller total
    (:func:`implied_eps`). Why adding pure fits outside is valid: the privacy
    loss of the whole sequence is the sum of the fits' losses (chain rule, with
    fits chosen after seeing earlier results); a pure fit's loss is at most its
    eps, always, so the loss exceeds ``c + t`` (c the sum of the outside pure
    eps) only where the inside fits' loss exceeds t, whose moment bound (the
    zCDP composition) is all the conversion's proof uses
    (dpstats/privacy/accounting.py). A small pure fit is cheaper inside (eps^2 / 2 is small),
    a large one outside; a budget of pure fits alone is never worse than basic.

Totals are compensated sums (``math.fsum``); a fit is refused when a total
would exceed its cap by more than one part in 10^12, a slack for float
rounding only (0.1 + 0.2 > 0.3 in binary).

The eps of a fit never defaults to what is left: spending the whole remainder
by omission cannot be undone. ``budget.remaining`` says what is left; pass it
explicitly if that is what you mean.

The budget is not thread-safe, and its file is not locked: fits that share one
budget must run one after the other (two threads, or two processes saving the
same file, could each pass the check). The file is a record, not a safeguard:
anyone who can write it can change it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .accounting import (
    PrivacySpent,
    approx_to_zcdp_rho,
    check_delta,
    check_eps,
    zcdp_reported,
    zcdp_to_approx_eps,
)

if TYPE_CHECKING:
    import pandas as pd

ACCOUNTINGS = ("basic", "zcdp")
NOTIONS = ("pure", "approx", "zcdp")
SLACK = 1e-12
"""Relative slack of every cap, for float rounding of the totals."""
FILE_FORMAT = "dpstats.PrivacyBudget"
FILE_VERSION = 1
LEDGER_COLUMNS = (
    "time",
    "formula",
    "estimator",
    "q",
    "method",
    "notion",
    "eps",
    "delta",
    "rho",
    "unit",
    "weights",
    "failed",
)


class BudgetExceeded(ValueError):
    """A fit would spend more than the budget has left: refused before any data were read, nothing spent."""


@runtime_checkable
class Accountant(Protocol):
    """What a fit needs of a budget: a check before the data are read, a record after the release."""

    def check(self, planned: PrivacySpent) -> None: ...

    def record(
        self,
        spent: PrivacySpent,
        *,
        formula: str,
        estimator: str,
        method: str,
        q: Sequence[float] | None = None,
        failed: bool = False,
        weights: str | None = None,
    ) -> None: ...


def check_accountant(budget: object) -> Accountant | None:
    """``budget=`` of a fit: None or a :class:`PrivacyBudget` (anything with its ``check`` and ``record``)."""
    if budget is not None and not isinstance(budget, Accountant):
        raise TypeError("budget must be None or a dpstats.PrivacyBudget")
    return budget


def requested_spend(notion: str, eps: float | None, delta: float, rho: float | None) -> PrivacySpent:
    """The most a call of ``notion`` with this validated request can report (known before the data are read).

    Pure: eps. Approx: eps and delta. zCDP given rho: that rho, with the eps
    implied at the delta passed (or the default delta); zCDP given eps and
    delta: the largest rho that meets them (dpstats/privacy/accounting.py), as the
    mechanism computes it.
    """
    if notion == "pure":
        return PrivacySpent("pure", float(eps))  # type: ignore[arg-type]
    if notion == "approx":
        return PrivacySpent("approx", float(eps), delta)  # type: ignore[arg-type]
    if notion != "zcdp":
        raise ValueError(f"unknown notion {notion!r}")
    if rho is None:
        return PrivacySpent("zcdp", float(eps), delta, approx_to_zcdp_rho(eps, delta))  # type: ignore[arg-type]
    implied, report_delta = zcdp_reported(rho, delta)
    return PrivacySpent("zcdp", implied, report_delta, rho)


def implied_eps(zcdp_rho: float, pure_eps: Sequence[float], delta: float) -> float:
    """The smallest eps this module proves at ``delta`` for zCDP fits of total ``zcdp_rho`` and pure fits.

    The pure fits, smallest first, go one by one inside the zCDP part (as
    eps^2 / 2, Bun & Steinke 2016, Proposition 1.4); those left outside add their
    eps (module docstring). Every split is a valid bound; the smallest of the
    ``len(pure_eps) + 1`` splits is returned.
    """
    ordered = sorted(pure_eps)
    best = math.inf
    for k in range(len(ordered) + 1):
        rho = math.fsum([zcdp_rho, *(e * e / 2.0 for e in ordered[:k])])
        inside = zcdp_to_approx_eps(rho, delta) if rho > 0 else 0.0
        best = min(best, inside + math.fsum(ordered[k:]))
    return best


@dataclass(frozen=True)
class Entry:
    """One release in the ledger: what it fitted and what it reported (``res.privacy``)."""

    time: str
    formula: str
    estimator: str
    method: str
    notion: str
    eps: float
    delta: float
    rho: float | None
    q: tuple[float, ...] | None = None
    failed: bool = False
    unit: str = "row"
    weights: str | None = None
    """A weighted fit's survey design in words (``res.survey``: ``"wt; PSUs: psu within strata st"``)."""

    def as_dict(self) -> dict[str, Any]:
        """Plain-Python view (a row of the file)."""
        return {
            "time": self.time,
            "formula": self.formula,
            "estimator": self.estimator,
            "q": None if self.q is None else list(self.q),
            "method": self.method,
            "notion": self.notion,
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho,
            "unit": self.unit,
            "weights": self.weights,
            "failed": self.failed,
        }

    @classmethod
    def from_dict(cls, row: Any) -> Entry:
        """A row of a budget file, validated."""
        if not isinstance(row, dict):
            raise ValueError("a ledger row must be a JSON object")
        try:
            notion = row["notion"]
            if notion not in NOTIONS:
                raise ValueError(f"unknown notion {notion!r}")
            rho = None if row.get("rho") is None else check_eps(row["rho"], "rho")
            if notion == "zcdp" and rho is None:
                raise ValueError("a zCDP row needs its rho")
            q = row.get("q")
            return cls(
                time=str(row["time"]),
                formula=str(row["formula"]),
                estimator=str(row["estimator"]),
                method=str(row["method"]),
                notion=notion,
                eps=check_eps(row["eps"]),
                delta=check_delta(row["delta"]),
                rho=rho,
                q=None if q is None else tuple(float(v) for v in q),
                failed=bool(row.get("failed", False)),
                unit=str(row.get("unit", "row")),
                weights=None if row.get("weights") is None else str(row["weights"]),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed ledger row: {exc!r}") from None


def _over(total: float, cap: float) -> bool:
    return total > cap * (1.0 + SLACK)


class PrivacyBudget:
    """A project's total privacy budget, spent by the fits given it (module docstring: the rules).

    Parameters
    ----------
    eps, delta : the total (eps, delta)-DP guarantee of every fit charged to
        the budget. delta = 0 (the default) is a pure budget.
    rho : a zCDP account with this total rho (with or without eps and delta).
    accounting : ``"basic"`` (default without rho) or ``"zcdp"`` (default with
        rho; with eps and delta > 0 and no rho, the (eps, delta) target is
        checked through the zCDP conversion).

    Attributes: ``ledger`` (a DataFrame, one row per release), ``spent`` and
    ``remaining`` (dicts), ``entries``. Save with :meth:`save`, reload with
    :meth:`load`; a reloaded budget refuses exactly what the original would.
    Not thread-safe (module docstring).
    """

    def __init__(
        self,
        eps: float | None = None,
        delta: float = 0.0,
        rho: float | None = None,
        *,
        accounting: str | None = None,
    ) -> None:
        if accounting is None:
            accounting = "basic" if rho is None else "zcdp"
        if accounting not in ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {ACCOUNTINGS} (got {accounting!r})")
        self.accounting = accounting
        self.eps = None if eps is None else check_eps(eps)
        self.delta = check_delta(delta)
        self.rho = None if rho is None else check_eps(rho, "rho")
        if accounting == "basic":
            if self.rho is not None:
                raise ValueError("rho is the cap of a zCDP account: pass accounting='zcdp' (or leave it out)")
            if self.eps is None:
                raise ValueError("a budget needs eps (and delta for approximate DP), or rho for a zCDP account")
        else:
            if self.eps is None and self.rho is None:
                raise ValueError("a zCDP account needs rho=, or eps= and delta= (checked through the conversion)")
            if self.eps is not None and self.delta == 0:
                raise ValueError(
                    "a zCDP account checks eps through the conversion rho-zCDP -> (eps, delta)-DP, "
                    "which needs delta > 0 (zCDP implies no pure eps-DP guarantee)"
                )
            if self.eps is None and self.delta > 0:
                raise ValueError("delta is the delta of the (eps, delta) target: pass eps= too")
        self._entries: list[Entry] = []

    # -- the account -------------------------------------------------------

    @property
    def entries(self) -> tuple[Entry, ...]:
        """The releases charged so far, oldest first."""
        return tuple(self._entries)

    def _zcdp_parts(self, entries: Sequence[Entry]) -> tuple[float, list[float], int]:
        """The zCDP fits' total rho, the pure fits' eps, and how many fits have no zCDP guarantee."""
        rho = math.fsum(e.rho for e in entries if e.notion == "zcdp")  # type: ignore[misc]
        pure = [e.eps for e in entries if e.notion == "pure"]
        return rho, pure, sum(e.notion == "approx" for e in entries)

    def _excess(self, entries: Sequence[Entry]) -> str | None:
        """Why ``entries`` would break the budget, or None when they fit."""
        if self.accounting == "basic":
            eps = math.fsum(e.eps for e in entries)
            delta = math.fsum(e.delta for e in entries)
            if _over(eps, self.eps):  # type: ignore[arg-type]
                return f"eps would reach {eps:.6g} > {self.eps:g} (basic composition: eps add up)"
            if _over(delta, self.delta):
                why = "a pure budget takes pure eps-DP fits only" if self.delta == 0 else "deltas add up"
                return f"delta would reach {delta:.6g} > {self.delta:g} ({why})"
            return None
        rho, pure, approx = self._zcdp_parts(entries)
        if approx:
            return (
                "an (eps, delta)-DP fit has no zCDP guarantee, so a zCDP account cannot take it "
                "(pass delta=0 for a pure fit, or a zCDP fit: method='gradient', variant='zcdp')"
            )
        total = math.fsum([rho, *(e * e / 2.0 for e in pure)])
        if self.rho is not None and _over(total, self.rho):
            return f"rho would reach {total:.6g} > {self.rho:g} (zCDP: rhos add up, a pure fit counts eps^2/2)"
        if self.eps is not None:
            eps = implied_eps(rho, pure, self.delta)
            if _over(eps, self.eps):
                return f"the total would be ({eps:.6g}, {self.delta:g})-DP, and eps exceeds {self.eps:g}"
        return None

    @staticmethod
    def _entry(spent: PrivacySpent, **labels: Any) -> Entry:
        if spent.notion not in NOTIONS:
            raise ValueError(f"unknown notion {spent.notion!r}")
        if spent.notion == "zcdp" and spent.rho is None:
            raise ValueError("a zCDP spend needs its rho")
        q = labels.pop("q", None)
        return Entry(
            time=datetime.now(UTC).isoformat(timespec="seconds"),
            notion=spent.notion,
            eps=float(spent.eps),
            delta=float(spent.delta),
            rho=None if spent.rho is None else float(spent.rho),
            q=None if q is None else tuple(float(v) for v in q),
            unit=spent.unit,
            **labels,
        )

    def check(self, planned: PrivacySpent) -> None:
        """Raise :class:`BudgetExceeded` if a release that reports at most ``planned`` would break the budget.

        Changes nothing. A fit calls it before reading any data.
        """
        planned_entry = self._entry(planned, formula="", estimator="", method="")
        reason = self._excess([*self._entries, planned_entry])
        if reason is not None:
            raise BudgetExceeded(
                f"refused before any data were read, the budget unchanged: {reason}. {self.describe_spending()}"
            )

    def record(
        self,
        spent: PrivacySpent,
        *,
        formula: str,
        estimator: str,
        method: str,
        q: Sequence[float] | None = None,
        failed: bool = False,
        weights: str | None = None,
    ) -> None:
        """Add a release that has happened to the ledger (it has spent what it reports, failed or not); a
        weighted fit names its survey design (``weights``, ``res.survey``)."""
        self._entries.append(
            self._entry(
                spent,
                formula=str(formula),
                estimator=str(estimator),
                method=str(method),
                q=q,
                failed=failed,
                weights=weights,
            )
        )

    def can_afford(self, planned: PrivacySpent) -> bool:
        """Whether :meth:`check` would let ``planned`` through."""
        return self._excess([*self._entries, self._entry(planned, formula="", estimator="", method="")]) is None

    @property
    def spent(self) -> dict[str, float | None]:
        """What the ledger adds up to under the budget's rule.

        Basic: ``{"eps", "delta"}`` summed. zCDP: ``{"rho"}`` (pure fits at
        eps^2 / 2), and with an (eps, delta) target the ``eps`` proven at the
        budget's ``delta`` (:func:`implied_eps`).
        """
        if self.accounting == "basic":
            return {"eps": math.fsum(e.eps for e in self._entries), "delta": math.fsum(e.delta for e in self._entries)}
        rho, pure, _ = self._zcdp_parts(self._entries)
        out: dict[str, float | None] = {"rho": math.fsum([rho, *(e * e / 2.0 for e in pure)])}
        if self.eps is not None:
            out.update(eps=implied_eps(rho, pure, self.delta), delta=self.delta)
        return out

    @property
    def remaining(self) -> dict[str, float]:
        """What a further fit may still spend.

        Basic: ``{"eps", "delta"}`` left. zCDP: ``{"rho"}``, the largest rho of
        one more zCDP fit, and ``{"eps"}``, the largest eps of one more pure fit
        (found by bisection on :meth:`can_afford`; 0 when nothing fits).
        """
        if self.accounting == "basic":
            spent = self.spent
            return {
                "eps": max(0.0, self.eps - spent["eps"]),  # type: ignore[operator]
                "delta": max(0.0, self.delta - spent["delta"]),  # type: ignore[operator]
            }
        rho_cap = self.rho if self.rho is not None else self.eps
        eps_cap = self.eps if self.eps is not None else math.sqrt(2.0 * self.rho)  # type: ignore[operator]
        return {
            "rho": _largest(lambda r: self.can_afford(PrivacySpent("zcdp", 1.0, self.delta, r)), rho_cap),  # type: ignore[arg-type]
            "eps": _largest(lambda e: self.can_afford(PrivacySpent("pure", e)), eps_cap),
        }

    # -- the record --------------------------------------------------------

    @property
    def ledger(self) -> pd.DataFrame:
        """One row per release: time (UTC), formula, estimator, q, method, notion, eps, delta, rho, unit, weights
        (a weighted fit's survey design, None otherwise), failed.

        eps, delta and rho are what each result reported (``res.privacy``); a
        failed release is listed, as it spent its budget.
        """
        import pandas as pd

        rows = [e.as_dict() for e in self._entries]
        frame = pd.DataFrame(rows, columns=list(LEDGER_COLUMNS))
        frame["time"] = pd.to_datetime(frame["time"], utc=True)
        quantiles = [None if e.q is None else ", ".join(f"{v:g}" for v in e.q) for e in self._entries]
        frame["q"] = pd.Series(quantiles, index=frame.index, dtype=object)
        frame["weights"] = pd.Series([e.weights for e in self._entries], index=frame.index, dtype=object)
        frame[["eps", "delta", "rho"]] = frame[["eps", "delta", "rho"]].astype(float)
        frame["failed"] = frame["failed"].astype(bool)
        return frame

    def describe_spending(self) -> str:
        """One sentence: what was spent and what is left, under the budget's rule."""
        n = len(self._entries)
        spent = ", ".join(f"{k} = {v:.6g}" for k, v in self.spent.items() if v is not None)
        left = ", ".join(f"{k} = {v:.6g}" for k, v in self.remaining.items())
        return f"Spent in {n} release{'s' if n != 1 else ''}{self._unit_clause()}: {spent}; left: {left}."

    @property
    def unit(self) -> str:
        """Whom the totals protect: the one privacy unit of every release, else ``"row"``.

        A guarantee for every row of one unit is also one for each of its rows,
        so releases with different units add up at the row level; their totals
        protect a unit only when every release protected that unit.
        """
        units = {e.unit for e in self._entries}
        return units.pop() if len(units) == 1 else "row"

    def _unit_clause(self) -> str:
        if self.unit == "row":
            mixed = len({e.unit for e in self._entries}) > 1
            return " (the totals protect one row: its releases protect different units)" if mixed else ""
        return f" (the totals protect every row of one {self.unit})"

    def describe(self) -> str:
        """The budget, its rule, what was spent and what is left (for a paper's appendix)."""
        if self.accounting == "basic":
            head = f"eps = {self.eps:g}, delta = {self.delta:g}; basic composition: eps and delta add up"
        else:
            caps = [f"rho = {self.rho:g}"] if self.rho is not None else []
            if self.eps is not None:
                caps.append(f"(eps, delta) = ({self.eps:g}, {self.delta:g}) through the zCDP conversion")
            head = " and ".join(caps) + "; zCDP: rhos add up, a pure eps-DP fit is (eps^2/2)-zCDP"
        return f"Privacy budget: {head}. {self.describe_spending()}"

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        caps = ", ".join(
            f"{k}={v!r}" for k, v in (("eps", self.eps), ("delta", self.delta), ("rho", self.rho)) if v is not None
        )
        return f"PrivacyBudget({caps}, accounting={self.accounting!r}; {len(self._entries)} releases)"

    # -- the file ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The budget as plain Python: its caps, rule and ledger (what :meth:`save` writes)."""
        return {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "accounting": self.accounting,
            "eps": self.eps,
            "delta": self.delta,
            "rho": self.rho,
            "ledger": [e.as_dict() for e in self._entries],
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text (floats written exactly)."""
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, state: Any) -> PrivacyBudget:
        """A budget from :meth:`to_dict`'s output, validated; its ledger may exceed it only if the file says so."""
        if not isinstance(state, dict) or state.get("format") != FILE_FORMAT:
            raise ValueError(f"not a dpstats budget (expected format {FILE_FORMAT!r})")
        if state.get("version") != FILE_VERSION:
            raise ValueError(f"unsupported budget file version {state.get('version')!r} (this dpstats reads 1)")
        budget = cls(state.get("eps"), state.get("delta", 0.0), state.get("rho"), accounting=state.get("accounting"))
        ledger = state.get("ledger", [])
        if not isinstance(ledger, list):
            raise ValueError("the ledger must be a list of rows")
        budget._entries = [Entry.from_dict(row) for row in ledger]
        return budget

    @classmethod
    def from_json(cls, text: str) -> PrivacyBudget:
        """A budget from :meth:`to_json`'s text."""
        try:
            state = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a dpstats budget: invalid JSON ({exc.msg})") from None
        return cls.from_dict(state)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the budget to ``path`` as JSON, atomically (a crash leaves the old file or the new one)."""
        target = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(self.to_json() + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> PrivacyBudget:
        """The budget saved at ``path``; it goes on refusing what would overspend it."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PrivacyBudget) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable


def _largest(affordable: Any, cap: float, steps: int = 80) -> float:
    """The largest x in [0, cap] with ``affordable(x)`` (monotone), by bisection; 0 when none above 0 is."""
    if affordable(cap):
        return cap
    lo, hi = 0.0, cap
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if mid > 0 and affordable(mid):
            lo = mid
        else:
            hi = mid
    return lo
