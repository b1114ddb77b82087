"""What a mechanism sees of the data: the :class:`~dpstats.design.matrix.Design` of one call
(matrix.py), the public bounds of its columns by interval arithmetic (bounds.py) and the
statistics of rows that add over chunks of rows (moments.py). Imports nothing else of dpstats.
"""
