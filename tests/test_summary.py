"""Summaries: text / LaTeX / Markdown / HTML carry the terms, eps and budget split,
say what the standard errors cover, escape what they must, and report failure."""

import html
import re
from functools import partial

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import Summary
from dpstats.output.render import latex_escape

# The mechanism under test, whatever method="auto" picks in later versions.
dp_ols = partial(dpstats.dp_ols, method="noisystats")

N = 90
SPECIAL = ["base", "R&D", "100%", "$top", "a_b#1", "{brace}", "x~y^z", "back\\slash"]
BOUNDS = {"x_1": (0.0, 1.0), "y": (-3.0, 6.0)}
EPS = 300.0  # large enough for 8 coefficients not to fail


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"x_1": rng.uniform(0, 1, N), "g": np.resize(SPECIAL, N)})
    frame["y"] = 1 + 2 * frame.x_1 + rng.normal(0, 0.3, N)
    return frame


@pytest.fixture(scope="module")
def res(data):
    out = dp_ols("y ~ x_1 + g", data, eps=EPS, bounds=BOUNDS, levels={"g": SPECIAL}, random_state=0)
    assert not out.failed
    return out


@pytest.fixture(scope="module")
def normal_law(data):
    """No replicates (se_share=0): the normal law, its p-value column headed P>|z| (LaTeX and Markdown escape it)."""
    out = dp_ols("y ~ x_1 + g", data, eps=EPS, bounds=BOUNDS, levels={"g": SPECIAL}, se_share=0, random_state=0)
    assert out.inference == "normal"
    return out


@pytest.fixture(scope="module")
def failed():
    frame = pd.DataFrame({"x": [0.1, 0.2, 0.15, 0.3, 0.25], "y": [1.0, 1.4, 1.1, 2.0, 1.8]})
    for seed in range(200):
        out = dp_ols("y ~ x", frame, eps=0.05, bounds={"x": (0, 1), "y": (0, 3)}, random_state=seed)
        if out.failed:
            return out
    raise AssertionError("no failing seed in 0..199")


def _split_strings():
    # g is categorical: NoisyStats' structured release, then the meat's share split 0.45 / 0.55
    meat = EPS * 0.2
    return [f"W'W, W'y: {EPS * 0.8:.4g}", f"SE: RSS: {meat * 0.45:.4g}", f"SE: HC meat: {meat * 0.55:.4g}"]


def test_summary_is_a_value_and_print_shows_it(res, capsys):
    summary = res.summary()
    assert isinstance(summary, Summary)
    assert capsys.readouterr().out == ""  # summary() never prints
    print(res)
    assert capsys.readouterr().out.strip() == summary.as_text().strip()
    assert str(summary) == summary.as_text()
    assert res._repr_html_() == summary.as_html() == summary._repr_html_()
    assert res.to_latex() == summary.as_latex() and res.to_markdown() == summary.as_markdown()
    assert res.to_html() == summary.as_html()


def test_text_summary_contents(res):
    text = res.summary().as_text()
    for term in res.term_names:
        assert term in text
    assert f"eps = {EPS:g} (pure DP)" in text
    for part in _split_strings():
        assert part in text
    assert "replace-one" in text
    assert "x_1 in [0, 1]" in text and "y in [-3, 6]" in text  # declared bounds
    assert "NoisyStats" in text and "Alabi" in text
    assert f"{N} (public)" in text
    assert "Status            ok" in text or re.search(r"Status\s+ok", text)
    assert "nvar(x)" in text and "ncov(x, y)" in text  # the released statistics


def test_notes_say_what_standard_errors_cover(res, data):
    notes = res.summary().notes
    assert np.all(np.isfinite(res.bse))
    assert res.se_note in notes
    for render in ("as_text", "as_markdown", "as_html"):
        out = getattr(res.summary(), render)()
        assert "sampling error" in out and "privacy noise" in out and "bootstrap" in out
    nan = dp_ols("y ~ x_1 + g", data, eps=EPS, bounds=BOUNDS, levels={"g": SPECIAL}, random_state=0, se_share=0)
    assert nan.bse.isna().all() and any("se_share=0" in note and "NaN" in note for note in nan.summary().notes)


@pytest.mark.parametrize("render", ["as_text", "as_latex", "as_markdown", "as_html"])
def test_every_format_has_terms_eps_and_split(res, render):
    out = getattr(res.summary(), render)()
    escape = {"as_latex": latex_escape, "as_html": html.escape, "as_markdown": lambda s: s.replace("|", r"\|")}
    esc = escape.get(render, lambda s: s)
    for term in res.term_names:
        assert esc(term) in out, term
    assert esc(f"eps = {EPS:g}") in out
    for part in _split_strings():
        assert esc(part) in out


def test_alpha_labels_the_interval_columns(res):
    coefficients = res.summary(alpha=0.1).coefficients
    assert list(coefficients.columns) == ["coef", "std err", "z", "P boot", "[0.05", "0.95]"]  # the bootstrap's law
    assert list(coefficients.index) == res.term_names


def test_latex_escape_of_every_special_character():
    assert latex_escape("a&b%c$d#e_f{g}h~i^j\\k") == (
        r"a\&b\%c\$d\#e\_f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    )
    # not special, but misprinted by LaTeX's default OT1 encoding
    assert latex_escape("P>|z| <") == r"P\textgreater{}\textbar{}z\textbar{} \textless{}"


def test_latex_escapes_term_names(res, normal_law):
    latex = res.to_latex()
    for level in SPECIAL[1:]:  # the first level is the reference
        assert latex_escape(f"g[T.{level}]") in latex
    assert r"x\_1" in latex
    for raw in ("T.R&D]", "T.100%]", "T.$top]", "a_b#1", "{brace}", "x~y^z", "back\\slash"):
        assert raw not in latex, raw
    # every coefficient row has exactly one unescaped '&' per column separator
    rows = [line for line in latex.splitlines() if line.startswith(("Intercept", "g[", r"x\_1"))]
    assert len(rows) == len(res.term_names)
    header_cells = 1 + len(res.summary().coefficients.columns)
    for row in rows:
        assert len(re.findall(r"(?<!\\)&", row)) == header_cells - 1
    assert r"y \textasciitilde{} x\_1 + g" in latex  # the formula is escaped too
    assert r"P\textgreater{}\textbar{}z\textbar{}" in normal_law.to_latex() and "P>|z|" not in normal_law.to_latex()


def test_markdown_and_html_escape(res, normal_law):
    markdown, page = res.to_markdown(), res.to_html()
    assert r"P>\|z\|" in normal_law.to_markdown()
    assert "g[T.R&amp;D]" in page and "g[T.R&D]" not in page
    assert "&lt;" not in markdown  # Markdown is not HTML-escaped


@pytest.mark.parametrize("render", ["as_text", "as_latex", "as_markdown", "as_html"])
def test_failed_fit_summary_says_failed(failed, render):
    out = getattr(failed.summary(), render)()
    assert "FAILED" in out
    assert "budget was still spent" in out
    assert "eps = 0.05" in out
