"""Fits on a Dask DataFrame: the rows stay on the workers, sums over partitions reach the client,
and the mechanism's one code path adds the noise there (dask_design.py for one fit, dask_units.py for
its privacy unit of several rows, by_group.py for one fit per declared group). Dask is imported only when
a fit is given a Dask DataFrame.
"""
