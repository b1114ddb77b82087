"""One fit per declared group (``by=``, ``groups=``): the declared keys, the row-wise map of rows to
groups and each group's public size and budget (partition.py, with the proof), the call's designs
and fits (fit.py) and their results (grouped_results.py, ``DPGroupedResults``).
"""
