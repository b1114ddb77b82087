"""From a formula and a DataFrame to a :class:`~dpstats.design.matrix.Design`: the formula language
(grammar.py: row-wise maps only, decided on the syntax tree), the declared metadata (metadata.py),
the row-wise treatment of bad cells (cells.py), the patsy adapter (formula.py, the only module that
imports patsy) and the curator's non-private report (curator.py, ``dpstats.inspect``).
"""
