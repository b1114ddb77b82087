"""Grouped fits (``by=``, ``groups=``): declared keys, the row-wise map to groups, and the budget per group.

A grouped call fits one model per declared key of the column ``by``. This
module holds what decides the privacy of that: which rows belong to which
group (a row-wise map), how many rows each group's mechanism sees (a public
or released size), and how the call's budget is divided. The fits themselves
are in dpstats/groups/fit.py.

Keys and bad keys
-----------------
The keys are declared (public), never read from the data. A row belongs to
group g when its key equals the g-th declared key *and* is of the declared
kind: declared strings match ``str`` cells only; declared integers match
integer cells and integral floats (a column of integers with one missing key
arrives as floats: another row must not decide whether this one matches),
never ``bool``. Every other row (an undeclared key, NaN or None, a key of
another type) belongs to no group and is dropped. That is a map of one row
to one group or to none, the same for every row: no error, warning or count
depends on it.

The size each group's mechanism sees
------------------------------------
Each group's mechanism is the ungrouped one (proven for replace-one
neighbours with public n, docs/DESIGN.md section 2) run on exactly m_g rows,
where m_g is public: the declared size (``group_sizes=``) or a noisy count
released first. The group's rows are brought to m_g rows by
``fit(g) = first m_g of the group's rows in data order, then m_g - n_g pad
rows if it has fewer``; a pad row is a row of missing cells, which the front
end's row-wise treatment (dpstats/frontend/cells.py) makes the midpoint of every
declared bound and the first declared level. A declared group with no rows is
thus m_g pad rows and gets a release like any other (noise only, or a failed
status).

Lemma (stability of the fit to m rows). For fixed m, removing one row from a
group's rows or adding one changes ``fit`` by at most one row, as multisets.
Proof: if the row is beyond the first m rows nothing changes; if it is among
them, row m + 1 (or a pad) moves in for it; with fewer than m rows a pad
takes its place (or it takes a pad's). Every mechanism's law is invariant
under a permutation of the rows (they are functions of the multiset, or
draw their own random order), so its replace-one guarantee at size m
applies to the pair.

Theorem (the budget of a grouped call). Let the call's budget be
(eps, delta).

1. Sizes public (``group_sizes=`` declared, OpenDP's Margin invariant
   "lengths"). Neighbouring data sets differ in one row and have the same
   size in every group, so the replaced row keeps its group (a row moved to
   another group would change two sizes), and one group's rows change by
   one replacement. Each group's mechanism runs with the whole (eps, delta)
   and the groups' releases use disjoint rows: by parallel composition
   (McSherry 2009, docs/REFERENCES.md) the call is (eps, delta)-DP, the eps reported.
2. Sizes not public. A replaced row can leave group g and join group h: g
   loses a row and h gains one, and no other group changes. Each group
   spends eps_g = eps / 2 and delta / 2 (``CHANGED_GROUPS``): ``count_share * eps_g`` on its
   noisy size (a count: add/remove sensitivity 1, Laplace noise), the rest on
   its mechanism at that size, which by the lemma is
   ((1 - count_share) eps_g, delta / 2)-DP against adding or removing one of
   the group's rows. So each changed group's release is (eps_g, delta / 2)-DP
   and the two changed groups compose to (eps, delta). The eps reported is
   the eps passed.

A grouped ``method="auto"`` may first release the data's spread over all
groups (dpstats/groups/spread.py). Every row is in that release and in its
group's fit, so the two compose sequentially: the groups' budget above is then
built from the call's eps less that release's, and the eps reported is still
the eps passed.

In both modes a row with an undeclared key is in no group: changing it into
a row of group g changes only g, which the theorem covers. With public sizes
the guarantee for neighbours that do move a row between groups is 2 eps
(two groups change): that is what declaring the sizes public means.

A declared size that the data do not meet is not an error (that would depend
on the data): the group is brought to its declared size as above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..mechanisms.base import PrivacyRequest
from ..privacy.accounting import PrivacySpent, check_share
from ..privacy.noise import laplace_mechanism

#: How many groups one replace-one neighbour can change when sizes are not public (leave one, join another).
CHANGED_GROUPS = 2
#: Part of each group's eps spent on its noisy size when sizes are not public.
DEFAULT_COUNT_SHARE = 0.1
PUBLIC_SIZES = (
    "replace-one (bounded DP) with public group sizes: neighbouring datasets differ in one row "
    "and have the same size in every declared group"
)
PRIVATE_SIZES = (
    "replace-one (bounded DP): neighbouring datasets differ in one row; n is public, the group sizes "
    "are not (a replaced row may leave one group and join another)"
)
#: The fewest rows a group's mechanism sees (a noisy size below it is raised to it).
MIN_ROWS = 2


@dataclass(frozen=True)
class GroupDeclaration:
    """The public declaration of a grouped call: the column, its keys and, optionally, their sizes."""

    by: str
    keys: tuple
    sizes: np.ndarray | None
    count_share: float

    @property
    def public_sizes(self) -> bool:
        """Whether the group sizes are declared public (parallel composition, the theorem's case 1)."""
        return self.sizes is not None


def declare_groups(
    by: str,
    groups: Sequence | None,
    group_sizes: Mapping | None = None,
    count_share: float | None = None,
) -> GroupDeclaration:
    """Check the public declaration of a grouped call (raises on bad public inputs only)."""
    if not isinstance(by, str):
        raise ValueError("by must name one column")
    if groups is None:
        raise ValueError("a grouped fit needs its keys declared: groups=[...] (public, never read from the data)")
    keys = tuple(groups.tolist() if hasattr(groups, "tolist") else groups)
    if not keys:
        raise ValueError("groups must declare at least one key")
    if all(isinstance(k, str) for k in keys):
        pass
    elif all(isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_) for k in keys):
        keys = tuple(int(k) for k in keys)
    else:
        raise ValueError("declare group keys as all strings or all integers")
    if len(set(keys)) != len(keys):
        raise ValueError("groups must be distinct")
    sizes = None
    if group_sizes is not None:
        missing = [k for k in keys if k not in group_sizes]
        if missing or len(group_sizes) != len(keys):
            raise ValueError("group_sizes must give a size for every declared key and no other")
        sizes = np.array([group_sizes[k] for k in keys])
        if sizes.dtype.kind not in "iu" or (sizes < MIN_ROWS).any():
            raise ValueError(f"group_sizes must be integers >= {MIN_ROWS}")
        sizes = sizes.astype(np.int64)
    share = DEFAULT_COUNT_SHARE if count_share is None else check_share(count_share)
    if sizes is None and share == 0:
        raise ValueError("count_share must be > 0 when group sizes are not public")
    return GroupDeclaration(by=by, keys=keys, sizes=sizes, count_share=share)


def group_codes(column: pd.Series, keys: tuple) -> np.ndarray:
    """Each row's group (its key's position in ``keys``), -1 for a row of no group (module docstring).

    A map of one cell to one code, whatever the column's dtype.
    """
    values = column.to_numpy()
    if isinstance(keys[0], int) and values.dtype.kind in "iuf":
        return _integer_codes(values, keys)
    index = {k: i for i, k in enumerate(keys)}
    code = _string_code if isinstance(keys[0], str) else _integer_code
    return np.fromiter((code(v, index) for v in values), dtype=np.int64, count=values.size)


def _integer_codes(values: np.ndarray, keys: tuple) -> np.ndarray:
    """Vectorised :func:`_integer_code` for a numeric column."""
    key_array = np.asarray(keys, dtype=np.int64)
    if values.dtype.kind == "f":
        ok = np.isfinite(values) & (values == np.round(values)) & (np.abs(values) < 2.0**62)
        ints = np.where(ok, values, 0).astype(np.int64)
    elif values.dtype.kind == "u":
        ok = values <= np.iinfo(np.int64).max
        ints = np.where(ok, values, 0).astype(np.int64)
    else:  # signed integers: every value is a whole number
        ok, ints = None, values.astype(np.int64, copy=False)
    low, span = min(keys), max(keys) - min(keys) + 1  # Python integers: no overflow
    if span <= 4 * key_array.size:  # dense keys: a lookup table, its last entry (-1) for the values outside
        table = np.full(span + 1, -1, dtype=np.int64)
        table[key_array - low] = np.arange(key_array.size)
        inside = (ints >= low) & (ints < low + span)
        if ok is not None:
            inside &= ok
        return table[np.where(inside, ints - low, span)]
    order = np.argsort(key_array)
    sorted_keys = key_array[order]
    at = np.clip(np.searchsorted(sorted_keys, ints), 0, sorted_keys.size - 1)
    found = sorted_keys[at] == ints
    if ok is not None:
        found &= ok
    return np.where(found, order[at], -1).astype(np.int64)


def _integer_code(value: object, index: Mapping) -> int:
    if isinstance(value, bool | np.bool_):
        return -1
    if isinstance(value, int | np.integer):
        return index.get(int(value), -1)
    if isinstance(value, float | np.floating) and np.isfinite(value) and float(value).is_integer():
        return index.get(int(value), -1)
    return -1


def _string_code(value: object, index: Mapping) -> int:
    return index.get(value, -1) if isinstance(value, str) else -1


@dataclass(frozen=True)
class GroupBudget:
    """How a grouped call's budget is divided (the theorem of the module docstring).

    ``request`` is what each group's mechanism gets, ``count_eps`` what each
    group's noisy size spends (None when sizes are public), ``spent`` the whole
    call as ``res.privacy`` reports it, ``changed_groups`` how many groups one
    neighbour can change (what a release over all groups records as its claim).
    """

    request: PrivacyRequest
    count_eps: float | None
    spent: PrivacySpent
    changed_groups: int


def group_budget(privacy: PrivacyRequest, declaration: GroupDeclaration, notion: str) -> GroupBudget:
    """Divide the call's (eps, delta): whole per group with public sizes, half per group otherwise."""
    if privacy.rho is not None:
        raise ValueError("a grouped fit takes eps (and delta), not rho")
    eps, delta = float(privacy.eps), privacy.delta
    if declaration.public_sizes:
        split = (("each group's fit (parallel composition: sizes public)", eps),)
        caveat = (
            "group sizes declared public: the guarantee is for neighbours with the same group sizes; "
            "a row moved between groups changes two groups, so 2 eps"
        )
        spent = PrivacySpent(
            notion=notion, eps=eps, delta=delta, split=split, neighbours=PUBLIC_SIZES, caveats=(caveat,)
        )
        return GroupBudget(privacy, None, spent, 1)
    per_group = eps / CHANGED_GROUPS
    count_eps = declaration.count_share * per_group
    request = PrivacyRequest(eps=per_group - count_eps, delta=delta / CHANGED_GROUPS, se_share=privacy.se_share)
    split = (
        ("each group's noisy size (x2: a moved row changes two groups)", CHANGED_GROUPS * count_eps),
        ("each group's fit (x2: a moved row changes two groups)", CHANGED_GROUPS * (per_group - count_eps)),
    )
    spent = PrivacySpent(notion=notion, eps=eps, delta=delta, split=split, neighbours=PRIVATE_SIZES)
    return GroupBudget(request, count_eps, spent, CHANGED_GROUPS)


def target_sizes(
    declaration: GroupDeclaration, codes: np.ndarray, count_eps: float | None, rng: np.random.Generator
) -> np.ndarray:
    """m_g for every group: the declared size, or max(MIN_ROWS, round(n_g + Lap(1 / count_eps)))."""
    counts = np.bincount(codes[codes >= 0], minlength=len(declaration.keys))
    return sizes_of_counts(declaration, counts, count_eps, rng)


def sizes_of_counts(
    declaration: GroupDeclaration, counts: np.ndarray, count_eps: float | None, rng: np.random.Generator
) -> np.ndarray:
    """:func:`target_sizes` from the groups' row counts n_g (summed over chunks of the rows, say)."""
    if declaration.sizes is not None:
        return declaration.sizes.copy()
    counts = counts.astype(float)
    # a moved row changes two counts by one: L1 sensitivity CHANGED_GROUPS, noise Lap(1 / count_eps)
    changed = CHANGED_GROUPS
    noisy = np.atleast_1d(laplace_mechanism(rng, counts, changed, changed * count_eps, "group sizes"))
    return np.maximum(MIN_ROWS, np.round(noisy)).astype(np.int64)


def layout(codes: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows each group keeps (the first m_g in data order; group by group) and its number of pad rows."""
    in_order = codes.size < 2 or bool(np.all(codes[1:] >= codes[:-1]))
    order = np.arange(codes.size) if in_order else np.argsort(codes, kind="stable")
    sorted_codes = codes if in_order else codes[order]
    first = int(np.searchsorted(sorted_codes, 0))  # rows of no group (-1) sort first
    order, sorted_codes = order[first:], sorted_codes[first:]
    counts = np.bincount(sorted_codes, minlength=sizes.size)
    if np.all(counts <= sizes):  # no group has rows beyond its size: every row is kept
        return order, sizes - counts
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(order.size) - starts[sorted_codes]
    kept = order[rank < sizes[sorted_codes]]
    return kept, np.maximum(sizes - counts, 0)


def chunk_codes(codes: np.ndarray, earlier: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The codes of one chunk of consecutive rows with -1 for the rows beyond their group's first m_g.

    ``earlier[g]`` is how many rows of group g come before the chunk in data
    order; a row is kept when its rank among its group's rows of the chunk
    plus ``earlier`` is below ``sizes``: over all chunks, the rows :func:`layout` keeps.
    """
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    inside = sorted_codes >= 0
    counts = np.bincount(sorted_codes[inside], minlength=sizes.size)
    first = np.searchsorted(sorted_codes, 0)  # rows of no group sort first
    starts = first + np.cumsum(counts) - counts
    rank = np.zeros(codes.size, dtype=np.int64)
    rank[order[inside]] = np.arange(first, codes.size) - starts[sorted_codes[inside]]
    safe = np.maximum(codes, 0)
    keep = (codes >= 0) & (earlier[safe] + rank < sizes[safe])
    return np.where(keep, codes, -1)
