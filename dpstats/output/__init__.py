"""How released values are written: the content of one fit's summary and of a table of several fits,
and their formats (render.py: text, LaTeX, Markdown, HTML, JSON), and the attributes maketables reads
(maketables.py). Imports nothing else of dpstats: every output of every program goes through here.
"""
