"""Step 1 of the Tukey mechanism on rows that stay elsewhere (a Dask DataFrame's partitions): batches dealt row by row.

Amin, Joseph, Ribero, Vassilvitskii (2023), Algorithm 2, lines 1-4, split the
rows into m disjoint batches by a random permutation and fit OLS on each. A
permutation of n rows needs the rows in one place; here each row is dealt to
a batch of its own, ``U{0, ..., m - 1}``, from the stream
``noise.keyed_rng(key, chunk)`` at the row's position in its chunk: ``key``
(256 bits) is drawn from the call's generator on the client, ``chunk`` is the
partition's index among the DataFrame's partitions and the position is the
row's place in it (:class:`DealtEquations`). Each partition sums, batch by
batch, the normal equations of its rows (X'X and X'y, :class:`BatchSums`) on a
worker; the sums are added over the partitions (dpstats/distributed/dask_design.py)
and the client solves each batch's equations by the elimination of the pandas
path (:func:`.models.models_of_equations`: a coefficient that a batch cannot
estimate is at ``+-MODEL_LIMIT`` with a sign drawn before the data are read,
a batch whose equations are not finite gets the zero model), then breaks ties
(:func:`.models.break_ties`). Steps 2-4 (depth, propose-test-release, the
sampler) and the spreads' releases are the pandas path's
(dpstats/mechanisms/tukey/mechanism.py).

Privacy (the proof's part (a), dpstats/mechanisms/tukey/mechanism.py). The
deal reads the key, the partition's index and the row's position, never a
value of the row or of its index (index values are data); fix the key (drawn
independently of the data) and every row's batch is fixed. Replacing the row
at one position then changes the sums of its batch only, and each batch's
model is a function of its own sums: one of the m models is replaced, and
steps 2-4 are (eps, delta)-DP for that. The rows' batches are independent and
uniform (independent ChaCha20 streams for distinct ``(key, chunk)``,
SeedSequence's spawn keys), so the law of the m batches does not depend on
the order of the rows nor on how they are partitioned: a neighbour whose
replaced row sits elsewhere, or whose partitions differ, gets the same law
as the neighbour that replaces the row in place. tests/test_tukey_dask.py
replaces rows by brute force and finds exactly one batch's sums changed.

Whole units (``unit=``, ``max_rows=``: dpstats/distributed/dask_units.py). There every
unit's kept rows share a partition, whose design carries their units, coded
in the order of each unit's first row by priority (drawn, like the key, from
the call's generator, never from a value). The deal is then of units: the
unit of code i in chunk ``chunk`` goes to the batch the stream gives position
i, and all its rows with it. The codes read the priorities and the unit
column (the same on unit-level neighbours: the panel's shape is public),
never a value, so fix the keys and every unit's batch is fixed: replacing
every row of one unit changes the sums of its batch only, one model, and the
proof holds with "row" read as "unit", as for the pandas path's permutation
of units (dpstats/mechanisms/tukey/models.py, ``unit_partition_models``).
Each unit's batch is uniform and independent of the others' (the deal's
stream is independent of the priorities), so the batches hold a multinomial
number of units, ``count/m`` on average.

What differs from the pandas path: the batches' sizes are random (multinomial,
``n/m`` on average) where the permutation gives ``floor(n/m)`` or
``ceil(n/m)``; and the batch fits are not jackknifed
(dpstats/mechanisms/tukey/jackknife.py needs every row's leverage and
residual, not sums), so on a Dask DataFrame ``jackknife`` defaults to False,
a choice made from a public fact (the data are a Dask DataFrame), and
``jackknife=True`` is refused there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...design.matrix import Design
from ...privacy import noise
from .models import finish_models, finite_equations, models_of_equations, unknown_signs


@dataclass(frozen=True)
class BatchSums:
    """Each batch's normal equations over some rows: ``gram`` ``(d, d, m)`` (X'X, batch axis last) and ``rhs``
    ``(d, m)`` (X'y); ``+`` adds the sums of disjoint rows."""

    gram: np.ndarray
    rhs: np.ndarray

    def __add__(self, other: BatchSums) -> BatchSums:
        return BatchSums(self.gram + other.gram, self.rhs + other.rhs)


@dataclass(frozen=True)
class DealtEquations:
    """The statistic of the dealt batches: :meth:`chunk` sums the normal equations of one chunk's rows by batch
    (of its units' rows, unit by unit, where the chunk's design has units: module docstring); called on a design
    of all the rows, the rows are chunk 0."""

    key: int
    m: int

    def __call__(self, design: Design) -> BatchSums:
        return self.chunk(design, 0)

    def chunk(self, design: Design, index: int) -> BatchSums:
        """The sums of the ``index``-th chunk's rows (``design``), each in the batch :func:`deal` gives it, or
        gives its unit."""
        units = design.units
        if units is None:
            batch = deal(self.key, index, design.n, self.m)
        else:
            batch = deal(self.key, index, units.count, self.m)[units.codes]
        return batch_sums(design.X, design.y, batch, self.m)


def deal(key: int, chunk: int, rows: int, m: int) -> np.ndarray:
    """The batch of each of a chunk's ``rows`` rows, by position: uniform on ``0..m-1``, independent."""
    return noise.integers(noise.keyed_rng(key, chunk), m, rows)


def batch_sums(X: np.ndarray, y: np.ndarray, batch: np.ndarray, m: int) -> BatchSums:
    """X'X and X'y of the rows of each of the m batches (``batch[i]``: row i's batch)."""
    d = X.shape[1]
    gram = np.empty((d, d, m))
    with np.errstate(all="ignore"):
        for i in range(d):
            for j in range(i + 1):
                gram[i, j] = gram[j, i] = np.bincount(batch, X[:, i] * X[:, j], minlength=m)
        rhs = np.stack([np.bincount(batch, X[:, j] * y, minlength=m) for j in range(d)])
    return BatchSums(gram, rhs)


def dealt_models(design: Design, m: int, rng: np.random.Generator) -> np.ndarray:
    """``(m, d)``: the OLS models of m batches dealt row by row (module docstring), their ties broken.

    The draws from ``rng``, in order: the deal's key, the signs of the coefficients that a batch cannot estimate,
    the ties' jitter; none depends on the data."""
    key = noise.stream_key(rng)
    signs = unknown_signs(rng, m, design.n_columns)
    sums = design.total(DealtEquations(key, m))
    models, unknown = models_of_equations(*finite_equations(sums.gram.copy(), sums.rhs.copy()))
    return finish_models(models, unknown, signs, rng)
