"""Privacy accounting: validated budgets, conversions between notions and the record of what a call
spent (accounting.py), a project's :class:`~dpstats.privacy.budget.PrivacyBudget` across calls
(budget.py), and every random draw (noise.py).

The record's classes are named here too, where dpstats 0.1 defined them (``dpstats.privacy``),
so that results pickled by it still load.
"""

from .accounting import PrivacySpent

__all__ = ["PrivacySpent"]
