"""Several fits for a paper: a regression table of fits side by side (tables.py, ``dpstats.table``)
and figures (plots.py: ``coefplot`` and the privacy-utility ``tradeoff_plot``; matplotlib is
imported when a figure is drawn).
"""
