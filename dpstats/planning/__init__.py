"""Choosing a mechanism from public facts: the error model behind ``method="auto"`` and ``compare_methods``.

* :mod:`.facts` -- the public facts of a call (n, eps, delta, the design's shape
  from the formula and the declarations), from a design or before any data;
* :mod:`.candidates` -- the mechanisms auto may choose, when each applies, and
  the dimension its error grows with;
* :mod:`.error_model` -- predicted error and failure rate, interpolated in a
  table calibrated by simulation (benchmarks/calibrate_error_model.py);
* :mod:`.selection` -- the rule of ``method="auto"``;
* :mod:`.comparison` -- :func:`compare_methods`, the plan before spending.
"""

from __future__ import annotations
