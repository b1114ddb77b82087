"""Perfect matchings of the rows: the pairing step of DP Theil-Sen (Alabi et al. 2022, Alg. 2, Lemma 20).

The complete graph K_V on an even number V of vertices is the union of V - 1
edge-disjoint perfect matchings (a 1-factorisation). The *circle method*
builds them: fix vertex V - 1 and put the other V - 1 vertices on a circle; in
round ``r`` (0 <= r < V - 1) vertex V - 1 is matched with ``r`` and, for
i = 1, ..., V/2 - 1, vertex ``(r + i) mod (V - 1)`` with ``(r - i) mod (V - 1)``.
Each unordered pair {a, b} of circle vertices is matched in exactly one round,
the one with ``2 r = a + b (mod V - 1)`` (V - 1 is odd, so 2 is invertible),
and vertex V - 1 meets every circle vertex once: every edge of K_V appears in
exactly one round.

Rows and vertices. The rows are first shuffled by a uniformly random
permutation (drawn through :mod:`dpstats.privacy.noise`), and vertex ``v < n`` is row
``perm[v]``. For even n, V = n. For odd n a *phantom* vertex is added
(V = n + 1) and it is the fixed vertex V - 1: in round ``r`` row ``perm[r]`` is
paired with the phantom, i.e. it sits idle. Nothing is truncated, so one row
can never displace another (OpenDP's Theil-Sen dropped the last row of an odd
n, which lets one added row move every pair; its real stability was twice the
claim).

Lipschitz constant (Lemma 20, made exact for odd n). ``k`` rounds are sampled
without replacement (``rounds_max(n)`` of them exist: n - 1 for even n, n for
odd n). In every round each row is in at most one real pair, so a row enters
at most k pair estimates; it also enters at most n - 1 (one per other row).
Replacing one row therefore changes at most ``L = min(k, n - 1)`` estimates,
for every permutation and every choice of rounds, and L is attained (a row
that is never idle in the chosen rounds). With all rounds (all pairs) L = n - 1
for both parities. The DP median of Algorithm 2 is run at eps / L.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...privacy.noise import permutation

ALL = "all"


def vertices(n: int) -> int:
    """Number of vertices of the matching graph: n, plus a phantom vertex when n is odd."""
    return n if n % 2 == 0 else n + 1


def rounds_max(n: int) -> int:
    """Number of perfect matchings of the decomposition: n - 1 (even n) or n (odd n)."""
    return vertices(n) - 1


def lipschitz_constant(n: int, k: int) -> int:
    """Most pair estimates one row can enter with k matchings: ``min(k, n - 1)`` (Lemma 20)."""
    return int(min(k, n - 1))


def resolve_k(k: object, n: int, default: int | str) -> int:
    """The number of matchings to use; ``None`` takes ``default`` (an int or ``"all"``).

    ``"all"`` means every pair (all ``rounds_max(n)`` matchings). Raises a
    ValueError naming ``k`` when it is not an integer in 1..rounds_max(n).
    """
    if n < 2:
        raise ValueError("method='theilsen' needs at least 2 rows")
    top = rounds_max(n)
    if k is None:
        k = default
        if isinstance(k, int):
            k = min(k, top)
    if isinstance(k, str):
        if k != ALL:
            raise ValueError(f"k must be an integer between 1 and {top} (n = {n}) or 'all', got {k!r}")
        return top
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        if isinstance(k, numbers.Real) and float(k).is_integer():
            k = int(k)
        else:
            raise ValueError(f"k must be an integer between 1 and {top} (n = {n}) or 'all', got {k!r}")
    k = int(k)
    if not 1 <= k <= top:
        raise ValueError(f"k must be between 1 and {top} for n = {n} (the number of perfect matchings), got {k}")
    return k


def circle_rounds(n_vertices: int, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertex pairs of the given rounds of the circle method, shape ``(len(rounds), n_vertices // 2)`` each.

    Column 0 is the pair (n_vertices - 1, r); the others are
    ((r + i) mod (n_vertices - 1), (r - i) mod (n_vertices - 1)).
    """
    if n_vertices % 2:
        raise ValueError("the circle method needs an even number of vertices")
    rounds = np.asarray(rounds, dtype=np.int64).reshape(-1, 1)
    m = n_vertices - 1
    offsets = np.arange(1, n_vertices // 2, dtype=np.int64)
    first = np.concatenate([np.full_like(rounds, m), (rounds + offsets) % m], axis=1)
    second = np.concatenate([rounds, (rounds - offsets) % m], axis=1)
    return first, second


def matching_pairs(perm: np.ndarray, rounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row index pairs (i, j) of the chosen rounds, phantom pairs removed (odd n).

    ``perm`` maps vertex v < n to row ``perm[v]``; the result lists every real
    pair of every chosen round once (k * floor(n / 2) pairs).
    """
    n = perm.size
    first, second = circle_rounds(vertices(n), rounds)
    first, second = first.ravel(), second.ravel()
    real = (first < n) & (second < n)
    return perm[first[real]], perm[second[real]]


def sample_matchings(rng: np.random.Generator, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2's pairing: a uniform permutation of the rows and k of the rounds without replacement.

    Returns the row pairs ``(i, j)``. Both random draws go through
    :func:`dpstats.privacy.noise.permutation`.
    """
    perm = permutation(rng, n)
    rounds = np.sort(permutation(rng, rounds_max(n))[:k])
    return matching_pairs(perm, rounds)
