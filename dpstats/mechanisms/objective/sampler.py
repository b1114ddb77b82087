"""The draw of objective perturbation's noise vector b (Chaudhuri, Monteleoni & Sarwate 2011, section 3.3).

``b`` has density ``nu(b) ~ exp(-beta ||b||)`` on R^p: its norm is Gamma(p, 1/beta)
and its direction uniform on the sphere (a normalised standard normal vector),
independent of each other. A continuous sampler in floating point: the release
carries dpstats/privacy/noise.py's ``FLOAT_CAVEAT`` and is not ``proven``. Every
draw goes through dpstats/privacy/noise.py.
"""

from __future__ import annotations

import numpy as np

from ...privacy import noise


def perturbation(rng: np.random.Generator, p: int, beta: float, size: int | None = None) -> np.ndarray:
    """One draw of b (``(p,)``), or ``size`` independent draws (``(size, p)``), with density ``~ exp(-beta ||b||)``."""
    count = 1 if size is None else int(size)
    direction = noise.gaussian(rng, 1.0, (count, p))
    norms = np.linalg.norm(direction, axis=1, keepdims=True)
    direction = direction / np.where(norms > 0, norms, 1.0)
    b = direction * noise.gamma(rng, float(p), 1.0 / beta, (count, 1))
    return b[0] if size is None else b


def second_moment(p: int, beta: float) -> float:
    """``E[b b'] = E||b||^2 / p I = (p + 1) / beta^2 I`` (Gamma(p, 1/beta): ``E r^2 = p (p + 1) / beta^2``)."""
    return (p + 1.0) / beta**2
