"""The modules of dpstats 0.1's flat layout, answered from their new homes.

A result pickled by dpstats 0.1 names the modules its classes were defined in
(``dpstats.quantile_fits.DPQuantileFits``, ``dpstats.formula.FormulaSpec``); those modules
now live in the subpackages of docs/ARCHITECTURE.md. :class:`FormerModules`, on
``sys.meta_path`` from ``import dpstats`` on, answers the import of a former name with a
module that forwards every attribute to the new home, so such a pickle loads with the very
classes of today (and code that imported a former module still runs). Six former modules
are packages now: ``dpstats.privacy`` and ``dpstats.results`` name a pickle's classes in
their ``__init__``; ``dpstats.api``, ``dpstats.design``, ``dpstats.distributed`` and
``dpstats.uncertainty`` held nothing a result pickles.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

NEW_HOMES: dict[str, str] = {
    "dpstats.histogram": "dpstats.api.histogram_release",
    "dpstats.budget": "dpstats.privacy.budget",
    "dpstats.noise": "dpstats.privacy.noise",
    "dpstats.intervals": "dpstats.design.bounds",
    "dpstats.moments": "dpstats.design.moments",
    "dpstats.quantiles": "dpstats.mechanisms.quantiles",
    "dpstats.sandwich": "dpstats.uncertainty.sandwich",
    "dpstats.coverage": "dpstats.uncertainty.coverage",
    "dpstats.formula": "dpstats.frontend.formula",
    "dpstats.formula_grammar": "dpstats.frontend.grammar",
    "dpstats.metadata": "dpstats.frontend.metadata",
    "dpstats.cells": "dpstats.frontend.cells",
    "dpstats.curator": "dpstats.frontend.curator",
    "dpstats.render": "dpstats.output.render",
    "dpstats.maketables_plugin": "dpstats.output.maketables",
    "dpstats.quantile_fits": "dpstats.results.quantile_fits",
    "dpstats.tables": "dpstats.report.tables",
    "dpstats.plots": "dpstats.report.plots",
    "dpstats.grouping": "dpstats.groups.partition",
    "dpstats.grouped_fit": "dpstats.groups.fit",
    "dpstats.grouped_results": "dpstats.groups.grouped_results",
    "dpstats.grouped_distributed": "dpstats.distributed.by_group",
}
"""Each former module of the flat layout that is no package now, and the module that replaced it."""


class FormerModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a former module's name and loads it as a module that forwards to its new home."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in NEW_HOMES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def exec_module(self, module: types.ModuleType) -> None:
        home = importlib.import_module(NEW_HOMES[module.__name__])
        module.__doc__ = f"Moved to {home.__name__}; every attribute is read from there."
        module.__getattr__ = lambda name: getattr(home, name)  # type: ignore[method-assign]


def install() -> None:
    """Put :class:`FormerModules` on ``sys.meta_path`` (once per interpreter)."""
    if not any(isinstance(finder, FormerModules) for finder in sys.meta_path):
        sys.meta_path.append(FormerModules())
