"""The R bridge, tested from Python.

- The R package's testthat suite runs with Python in tests/test_r_check.py, in the
  tests step of ``R CMD check`` (an ``Rscript`` subprocess: never in this process's
  embedded R, where Python -> rpy2 -> R -> reticulate -> Python crashes).
- The README's R blocks and the R quick start run in one plain ``Rscript`` that has
  no environment set up beyond ``lib.loc``, and the quick start's eps = 1e9 fits are
  compared with R's own ``lm`` obtained through rpy2.
- Bias bounds (issue 45): on a histogram fit and a NoisyStats fit whose repair binds (one ``Rscript``), R's
  ``confint``, summary and tidy p-values, ``tidy``'s bias column, ``glance``'s status, bias and bias.source and
  the summary's status line are the Python fit's, to 1e-8; R's critical values are Python's; and
  ``dpstats_table`` sends the bounds (``Inf`` included) so that its intervals and notes are ``dpstats.table``'s.
- Through rpy2: ``r_to_pandas`` / ``pandas_to_r`` keep NA in every column type,
  results become R lists, and dp_ols on R's mtcars equals R's ``lm``.

R comes from ``bash scripts/setup.sh``. Without R or rpy2 these tests skip,
except under CI (``CI=true``) or ``DPSTATS_REQUIRE_R=1``, where they fail.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpstats
from dpstats import r_interop

ROOT = Path(__file__).resolve().parents[1]
R_BRIDGE = ROOT / "r_bridge"
R_LIB = R_BRIDGE / "lib"
RSCRIPT = shutil.which("Rscript")
REQUIRE_R = os.environ.get("CI", "").lower() == "true" or os.environ.get("DPSTATS_REQUIRE_R") == "1"

# The environment before any embedded R changed it, minus what would steer R or
# reticulate elsewhere; subprocesses get exactly what each test adds.
_R_VARS = (
    "LD_LIBRARY_PATH",
    "R_HOME",
    "R_LIBS",
    "R_LIBS_USER",
    "R_LIBS_SITE",
    "R_SESSION_TMPDIR",
    "R_SHARE_DIR",
    "R_INCLUDE_DIR",
    "R_DOC_DIR",
    "R_PLATFORM",
    "R_LD_LIBRARY_PATH",
    "RETICULATE_PYTHON",
    "RETICULATE_PYTHON_ENV",
    "R_PROFILE_USER",
    "R_ENVIRON_USER",
)
BASE_ENV = {k: v for k, v in os.environ.items() if k not in _R_VARS}

MTCARS_BOUNDS = {"mpg": (10, 35), "wt": (1, 6), "hp": (50, 350)}


def _missing(what: str) -> None:
    message = f"{what} is not available: bash scripts/setup.sh installs it"
    if REQUIRE_R:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def r_package() -> Path:
    """The R package installed (or refreshed) in r_bridge/lib."""
    if RSCRIPT is None:
        _missing("R (Rscript)")
    done = subprocess.run(["bash", str(R_BRIDGE / "install.sh")], capture_output=True, text=True, env=BASE_ENV)
    assert done.returncode == 0, done.stderr
    return R_LIB


@pytest.fixture(scope="module")
def ro():
    """rpy2.robjects with the embedded R started."""
    if RSCRIPT is None:
        _missing("R (Rscript)")
    try:
        return r_interop.start_r()
    except ImportError:
        _missing("rpy2 (pinned in r_bridge/requirements-rpy2.txt)")


def _rscript(code: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([RSCRIPT, "-e", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _is_builtin_tree(obj) -> bool:
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _is_builtin_tree(v) for k, v in obj.items())
    if isinstance(obj, list):
        return all(_is_builtin_tree(v) for v in obj)
    return obj is None or type(obj) in (bool, int, float, str)


QUICK_START = """
library(dpstats, lib.loc = "r_bridge/lib")
fit <- dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 1,
              bounds = list(mpg = c(10, 35), wt = c(1, 6)),
              levels = list(cyl = c(4, 6, 8)))
print(summary(fit))
confint(fit)
broom::tidy(fit)
b <- list(mpg = c(10, 35), wt = c(1, 6), hp = c(50, 350))
l <- list(cyl = c(4, 6, 8), am = c(0, 1))
f1 <- dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 1e9, bounds = b, levels = l, random_state = 2026)
f2 <- dp_ols(mpg ~ factor(am):wt + log(hp), data = mtcars, eps = 1e9, bounds = b, levels = l, random_state = 2026)
data(engel, package = "quantreg")
e <- dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = list(income = c(0, 5000), foodexp = c(0, 2500)),
            random_state = 2026)
parity <- list(f1 = as.list(coef(f1)), f2 = as.list(coef(f2)), engel = as.list(coef(e)))
sys <- reticulate::import("sys")
child <- reticulate::import("subprocess")$run(c(sys$executable, "-c", "import sys; print(sys.version)"),
                                              capture_output = TRUE, text = TRUE)$stdout
cat("CHILD_PYTHON", identical(trimws(child), sys$version), "\\n")
cat("PARITY", jsonlite::toJSON(parity, digits = NA, auto_unbox = TRUE), "\\n")
"""


README_R_BLOCKS = re.findall(r"```r\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL)
README_DONE = "README R BLOCKS DONE"


@pytest.fixture(scope="module")
def readme_and_quick_start(r_package: Path) -> subprocess.CompletedProcess:
    """The README's R blocks, then the quick start, in one plain Rscript: no RETICULATE_PYTHON, no R_LIBS.

    One R process (and one Python behind it) for both; a marker line separates their outputs.
    """
    code = "\n".join([*README_R_BLOCKS, f'cat("\\n{README_DONE}\\n")', QUICK_START])
    return _rscript(code, BASE_ENV, timeout=600)


@pytest.fixture(scope="module")
def quick_start(readme_and_quick_start: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """The quick start's run: its stdout is what follows the README's marker line."""
    done = readme_and_quick_start
    _, marker, after = done.stdout.partition(README_DONE)
    assert marker, done.stdout[-3000:] + done.stderr[-3000:]
    return subprocess.CompletedProcess(done.args, done.returncode, after, done.stderr)


def test_quick_start_runs_in_a_plain_rscript(quick_start: subprocess.CompletedProcess) -> None:
    out = quick_start.stdout
    assert quick_start.returncode == 0, quick_start.stdout[-3000:] + quick_start.stderr[-3000:]
    assert "DP OLS Regression Results" in out
    assert "eps = 1 (pure DP)" in out
    assert "2.5 %" in out and "97.5 %" in out  # confint
    assert re.search(r"term\s+estimate\s+std.error\s+statistic\s+p.value", out)  # broom::tidy
    assert "factor(cyl)8" in out
    # a python started from R's embedded Python loads its own libpython, not the system's
    assert "CHILD_PYTHON TRUE" in out


def _r_coef(ro, formula: str) -> dict[str, float]:
    coef = ro.r(f"coef(lm({formula}, data = mtcars))")
    return dict(zip([str(n) for n in coef.names], [float(v) for v in coef], strict=True))


def _max_rel(got: dict[str, float], ref: dict[str, float]) -> float:
    assert list(got) == list(ref)
    return max(abs(got[k] - ref[k]) / abs(ref[k]) for k in ref)


def _mean_rel(got: dict[str, float], ref: dict[str, float]) -> float:
    """all.equal's (and testthat's) relative difference: sum |diff| / sum |ref|."""
    assert sorted(got) == sorted(ref)
    return sum(abs(got[k] - ref[k]) for k in ref) / sum(abs(v) for v in ref.values())


def test_dp_ols_from_r_equals_lm_through_rpy2(quick_start: subprocess.CompletedProcess, ro) -> None:
    """R's dp_ols (in the Rscript) against R's lm (through rpy2), eps = 1e9, 1e-6 relative."""
    line = next((ln for ln in quick_start.stdout.splitlines() if ln.startswith("PARITY ")), None)
    assert line, quick_start.stdout[-3000:] + quick_start.stderr[-3000:]
    fits = json.loads(line[len("PARITY ") :])
    assert _max_rel(fits["f1"], _r_coef(ro, "mpg ~ wt + factor(cyl)")) < 1e-6
    ref2 = _r_coef(ro, "mpg ~ factor(am):wt + log(hp)")
    assert list(fits["f2"]) == list(ref2)  # lm's names, in lm's order
    assert _mean_rel(fits["f2"], ref2) < 1e-6


def test_same_seed_same_release_from_r_and_python(quick_start: subprocess.CompletedProcess) -> None:
    """The README's Python quick start and the same call from R release the same numbers."""
    from statsmodels.datasets import engel

    line = next((ln for ln in quick_start.stdout.splitlines() if ln.startswith("PARITY ")), None)
    assert line, quick_start.stdout[-3000:] + quick_start.stderr[-3000:]
    from_r = json.loads(line[len("PARITY ") :])["engel"]
    res = dpstats.dp_ols(
        "foodexp ~ income",
        engel.load_pandas().data,
        eps=1.0,
        bounds={"income": (0, 5000), "foodexp": (0, 2500)},
        random_state=2026,
    )
    assert list(from_r) == ["(Intercept)", "income"]
    assert np.allclose(list(from_r.values()), res.params.to_numpy(), rtol=1e-12, atol=0)


def test_readme_r_blocks_run(readme_and_quick_start: subprocess.CompletedProcess) -> None:
    """Every ```r block of README.md runs in a plain Rscript from the checkout."""
    if not README_R_BLOCKS:
        pytest.skip("README.md has no R block yet")
    done = readme_and_quick_start
    # Rscript stops at the first error, so the marker printed after the blocks shows they all ran.
    assert README_DONE in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    readme_out = done.stdout.partition(README_DONE)[0]
    assert "DP OLS Regression Results" in readme_out, readme_out[-3000:]


# --------------------------------------------------------------------------
# Bias bounds (issue 45): R's intervals, p-values, frames and statuses are Python's
# --------------------------------------------------------------------------

R_BIAS = """
library(dpstats, lib.loc = "r_bridge/lib")
data(engel, package = "quantreg")
squares <- read.csv(Sys.getenv("SQUARES_CSV"))
fits <- list(
  histogram = dp_ols(foodexp ~ income, data = engel, eps = 1, bounds = list(income = c(0, 5000), foodexp = c(0, 2500)),
                     method = "histogram", random_state = 1),
  repair = dp_ols(y ~ x + I(x^2), data = squares, eps = 1, bounds = list(x = c(0, 1), y = c(-1, 3)),
                  method = "noisystats", singular = "repair", random_state = 1)
)
for (name in names(fits)) {  # the same releases with finite bounds (0.5, 3 and 0 standard errors)
  f <- fits[[name]]
  f$bias[] <- c(0.5, 3, 0)[seq_along(f$bias)] * sqrt(diag(vcov(f)))
  fits[[paste0(name, "_finite")]] <- f
}
enc <- function(x) lapply(unname(as.vector(x)), function(v) if (is.finite(v)) v else as.character(v))
one <- function(f) {
  s <- summary(f)
  td <- broom::tidy(f, conf.int = TRUE, conf.level = 0.9)
  gl <- broom::glance(f)
  list(terms = names(coef(f)), bias = enc(f$bias), source = f$bias_source, status = f$status,
       ci95 = enc(confint(f)), ci90 = enc(confint(f, level = 0.9)), p = enc(s$coefficients[, 4L]),
       tidy_ci90 = enc(c(td$conf.low, td$conf.high)), tidy_p = enc(td$p.value), tidy_bias = enc(td$bias),
       tidy_status = unique(td$status), glance_status = gl$status, glance_bias = enc(gl$bias),
       glance_source = gl$bias.source,
       status_line = sub("^Status: *", "", grep("^Status:", capture.output(print(s)), value = TRUE)))
}
t <- c(0, 1e-6, 0.1, 0.5, 1, 2, 3, 10, 37.5, 1000)
out <- list(fits = lapply(fits, one), t = t,
            cv = lapply(c(a05 = 0.05, a10 = 0.1, a01 = 0.01), function(a) dpstats:::.bias_cv(t, a)),
            table = unclass(dpstats_table(unname(fits), format = "text", below = "ci")))
cat("RESULT", jsonlite::toJSON(out, digits = NA, auto_unbox = TRUE), "\\n")
"""


def _squares() -> pd.DataFrame:
    """x and x**2 at n = 300 (tests/test_noisystats_repair.py), where NoisyStats' repair binds at eps = 1; four
    decimals, which R and Python read into the same doubles."""
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(0, 1, 300), 4)
    return pd.DataFrame({"x": x, "y": np.round(np.clip(x + x**2 + rng.normal(0, 0.2, x.size), -1, 3), 4)})


def _numbers(values: list) -> np.ndarray:
    """R's numbers as the R script encodes them (non-finite ones as text)."""
    text = {"Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan, "NA": math.nan}
    return np.array([text[v] if isinstance(v, str) else float(v) for v in values], dtype=float)


@pytest.fixture(scope="module")
def bias_fits(r_package: Path, engel: pd.DataFrame, tmp_path_factory) -> tuple[dict, dict]:
    """The R script's answers and the same fits from Python: a histogram fit (binning bias) and a NoisyStats fit
    whose repair binds, seeded, each also with finite bounds of 0.5, 3 and 0 standard errors put in by hand."""
    import dataclasses

    csv = tmp_path_factory.mktemp("bias") / "squares.csv"
    _squares().to_csv(csv, index=False)
    done = _rscript(R_BIAS, {**BASE_ENV, "SQUARES_CSV": str(csv)})
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert done.returncode == 0 and line, done.stdout[-3000:] + done.stderr[-3000:]
    fits = {
        "histogram": dpstats.dp_ols(
            "foodexp ~ income",
            engel,
            eps=1,
            bounds={"income": (0, 5000), "foodexp": (0, 2500)},
            method="histogram",
            random_state=1,
        ),
        "repair": dpstats.dp_ols(
            "y ~ x + I(x**2)",
            pd.read_csv(csv),
            eps=1,
            bounds={"x": (0, 1), "y": (-1, 3)},
            method="noisystats",
            singular="repair",
            random_state=1,
        ),
    }
    for name in list(fits):
        res = fits[name]
        assert res.bias_source is not None  # both keep a bias
        finite = np.array([0.5, 3, 0])[: len(res.term_names)] * res.bse.to_numpy()
        fits[f"{name}_finite"] = dataclasses.replace(res, _bias_bound=finite)
    return json.loads(line[len("RESULT ") :]), fits


def test_bias_bounds_intervals_and_status_from_r_are_pythons(bias_fits: tuple[dict, dict]) -> None:
    """confint (two levels), the summary's and tidy's p-values, tidy's bias and interval columns, glance's status,
    bias and bias.source, and the summary's status line: Python's, to 1e-8."""
    from dpstats.results.regression import _status_text

    from_r, fits = bias_fits
    assert set(from_r["fits"]) == set(fits)
    for name, res in fits.items():
        r = from_r["fits"][name]
        assert len(r["terms"]) == len(res.term_names), name
        for key in ("bias", "tidy_bias"):  # inf where unbounded; the bounds put in by hand are R's and numpy's
            np.testing.assert_allclose(_numbers(r[key]), res.bias.to_numpy(), rtol=1e-12, atol=0, err_msg=name)
        assert r["source"] == res.bias_source, name
        for level, key in ((0.95, "ci95"), (0.9, "ci90"), (0.9, "tidy_ci90")):
            ci = res.conf_int(1 - level)
            expected = np.concatenate([ci["lower"].to_numpy(), ci["upper"].to_numpy()])
            np.testing.assert_allclose(_numbers(r[key]), expected, rtol=1e-8, atol=0, err_msg=f"{name} {key}")
        for key in ("p", "tidy_p"):
            np.testing.assert_allclose(_numbers(r[key]), res.pvalues.to_numpy(), rtol=0, atol=1e-8, err_msg=name)
        (ratio,) = _numbers(r["glance_bias"])
        assert ratio == res.bias_ratio or abs(ratio - res.bias_ratio) <= 1e-8 * res.bias_ratio, name
        assert r["glance_source"] == res.bias_source, name
        # the summary's status line, which points at R's block of bounds where Python's points at its column
        assert r["status_line"] == _status_text(res).replace("column bias <=", "bias bounds below"), name
        if name.endswith("_finite"):  # bounds put in by hand: the status stays the release's, as Python's would
            assert ratio == pytest.approx(3.0) and res.status == "biased", name
        else:
            assert r["status"] == r["glance_status"] == r["tidy_status"] == res.status, name


def test_bias_critical_value_in_r_is_pythons(bias_fits: tuple[dict, dict]) -> None:
    """R's .bias_cv (uniroot) against dpstats.uncertainty.bias.critical_value (brentq), to 1e-8."""
    from dpstats.uncertainty.bias import critical_value

    from_r, _ = bias_fits
    t = np.asarray(from_r["t"], dtype=float)
    for key, alpha in (("a05", 0.05), ("a10", 0.1), ("a01", 0.01)):
        np.testing.assert_allclose(_numbers(from_r["cv"][key]), critical_value(t, alpha), rtol=0, atol=1e-8)


def test_bias_bounds_reach_the_python_table_from_r(bias_fits: tuple[dict, dict]) -> None:
    """dpstats_table sends the bounds (Inf as inf) and the source: its intervals and notes are dpstats.table's."""
    from_r, fits = bias_fits
    text = dpstats.table(list(fits.values()), below="ci").as_text()
    brackets = re.compile(r"\[[^\]]*\]")
    assert brackets.findall(from_r["table"]) == brackets.findall(text)
    # the notes, after the table's last rule, up to their wrapping (the table's width follows the term names)
    notes = " ".join(text[text.rindex("=\n") :].split())
    assert notes == " ".join(from_r["table"][from_r["table"].rindex("=\n") :].split())
    assert all(f"({i}): " in notes for i in range(1, len(fits) + 1))
    assert "carry a bias bound up to 3" in notes


# --------------------------------------------------------------------------
# rpy2: R data.frame <-> pandas, results -> R, parity
# --------------------------------------------------------------------------

R_FRAME_WITH_NA = """
data.frame(
  d = c(1.5, NA, NaN, -Inf),
  i = c(1L, NA, 2147483647L, -2147483647L),
  l = c(TRUE, NA, FALSE, TRUE),
  s = c("a", NA, "", "NA"),
  f = factor(c("lo", NA, "hi", "lo"), levels = c("lo", "mid", "hi")),
  o = factor(c("b", "a", NA, "b"), levels = c("b", "a"), ordered = TRUE),
  day = as.Date(c("2020-01-01", NA, "1969-12-31", "2000-02-29")),
  stringsAsFactors = FALSE
)
"""


def test_r_to_pandas_keeps_missing_values(ro) -> None:
    frame = r_interop.r_to_pandas(ro.r(R_FRAME_WITH_NA))
    expected_na = {
        "d": [False, True, True, False],
        "i": [False, True, False, False],
        "l": [False, True, False, False],
        "s": [False, True, False, False],
        "f": [False, True, False, False],
        "o": [False, False, True, False],
        "day": [False, True, False, False],
    }
    for name, mask in expected_na.items():
        assert frame[name].isna().tolist() == mask, name
    assert str(frame["i"].dtype) == "Int64" and frame["i"].dropna().tolist() == [1, 2**31 - 1, -(2**31 - 1)]
    assert str(frame["l"].dtype) == "boolean" and frame["l"].dropna().tolist() == [True, False, True]
    assert str(frame["s"].dtype) == "string" and frame["s"].dropna().tolist() == ["a", "", "NA"]
    assert frame["d"].iloc[3] == -math.inf
    assert isinstance(frame["f"].dtype, pd.CategoricalDtype)
    assert list(frame["f"].cat.categories) == ["lo", "mid", "hi"] and not frame["f"].cat.ordered
    assert frame["o"].cat.ordered and list(frame["o"].cat.categories) == ["b", "a"]
    assert [str(v.date()) for v in frame["day"].dropna()] == ["2020-01-01", "1969-12-31", "2000-02-29"]
    assert isinstance(frame.index, pd.RangeIndex)
    mtcars = r_interop.r_to_pandas(ro.r["mtcars"])
    assert mtcars.index[0] == "Mazda RX4" and mtcars.shape == (32, 11)


def test_pandas_to_r_keeps_missing_values(ro) -> None:
    frame = pd.DataFrame(
        {
            "d": [1.5, np.nan, -2.0],
            "i": pd.array([1, None, 3], dtype="Int64"),
            "l": pd.array([True, None, False], dtype="boolean"),
            "s": pd.array(["x", None, ""], dtype="string"),
            "obj": ["u", None, "w"],
            "f": pd.Categorical(["b", None, "a"], categories=["b", "a", "z"]),
            "big": pd.array([1, None, 2**40], dtype="Int64"),
        }
    )
    r_frame = r_interop.pandas_to_r(frame)
    ro.globalenv["crossed"] = r_frame
    checks = {
        "class(crossed)": ["data.frame"],
        "sapply(crossed, function(x) class(x)[1])": [
            "numeric",
            "integer",
            "logical",
            "character",
            "character",
            "factor",
            "numeric",
        ],
        "sapply(crossed, function(x) sum(is.na(x)))": [1, 1, 1, 1, 1, 1, 1],
        "which(is.na(crossed$d))": [2],
        "crossed$s[c(1, 3)]": ["x", ""],
        "levels(crossed$f)": ["b", "a", "z"],
        "as.character(crossed$f)[c(1, 3)]": ["b", "a"],
        "crossed$big[3] == 2^40": [True],
        "nrow(crossed)": [3],
    }
    for expr, expected in checks.items():
        assert list(ro.r(expr)) == expected, expr
    back = r_interop.r_to_pandas(r_frame)
    pd.testing.assert_frame_equal(back[["d", "i", "l", "s", "f"]], frame[["d", "i", "l", "s", "f"]])


def test_result_to_r_is_a_plain_r_list(ro) -> None:
    data = r_interop.r_to_pandas(ro.r["mtcars"])
    res = dpstats.dp_ols(
        "mpg ~ wt + C(cyl)", data, eps=1e9, bounds=MTCARS_BOUNDS, levels={"cyl": [4.0, 6.0, 8.0]}, random_state=1
    )
    ro.globalenv["res"] = r_interop.result_to_r(res)
    assert list(ro.r("names(res$coefficients)")) == res.term_names
    assert list(ro.r("dim(res$vcov)")) == [4, 4]
    assert list(ro.r("res$privacy$eps")) == [1e9]
    assert list(ro.r("res$nobs")) == [32.0]
    assert list(ro.r("res$method")) == ["noisystats"]
    assert list(ro.r("is.list(res) && !is.null(names(res))")) == [True]


def test_dp_ols_in_python_on_r_data_equals_lm(ro) -> None:
    """mtcars crosses through rpy2; Python's dp_ols at eps = 1e9 equals R's lm to 1e-6 relative."""
    data = r_interop.r_to_pandas(ro.r["mtcars"])
    levels = {"cyl": [4.0, 6.0, 8.0], "am": [0.0, 1.0]}
    res = dpstats.dp_ols("mpg ~ wt + C(cyl)", data, eps=1e9, bounds=MTCARS_BOUNDS, levels=levels, random_state=7)
    names = {"Intercept": "(Intercept)", "wt": "wt", "C(cyl)[T.6.0]": "factor(cyl)6", "C(cyl)[T.8.0]": "factor(cyl)8"}
    got = {names[k]: float(v) for k, v in res.params.items()}
    ref = _r_coef(ro, "mpg ~ wt + factor(cyl)")
    assert _max_rel({k: got[k] for k in ref}, ref) < 1e-6

    res = dpstats.dp_ols(
        "mpg ~ C(am):wt + np.log(hp)", data, eps=1e9, bounds=MTCARS_BOUNDS, levels=levels, random_state=7
    )
    names = {
        "Intercept": "(Intercept)",
        "np.log(hp)": "log(hp)",
        "C(am)[0.0]:wt": "factor(am)0:wt",
        "C(am)[1.0]:wt": "factor(am)1:wt",
    }
    got = {names[k]: float(v) for k, v in res.params.items()}
    assert _mean_rel(got, _r_coef(ro, "mpg ~ factor(am):wt + log(hp)")) < 1e-6


def test_dp_quantreg_on_r_data_equals_rq(ro) -> None:
    """Python's dp_quantreg on R's engel against quantreg::rq, through rpy2, at eps = 1e9."""
    data = r_interop.r_to_pandas(ro.r('local({data(engel, package = "quantreg"); engel})'))
    res = dpstats.dp_quantreg(
        "foodexp ~ income",
        data,
        q=0.5,
        eps=1e9,
        bounds={"income": (0, 5000), "foodexp": (0, 2500)},
        method="kng",
        random_state=3,
    )
    ref = ro.r(
        'coef(quantreg::rq(foodexp ~ income, tau = 0.5, data = local({data(engel, package = "quantreg"); engel})))'
    )
    # KNG's eps -> infinity limit is a set around rq's fit (tests/test_kng_limits.py brute-forces it:
    # intercepts 72.3..92.1, slopes 0.548..0.570 around (81.5, 0.560)); the tolerance is its reach.
    assert np.all(np.abs(res.params.to_numpy() - np.array(list(ref))) <= [11.0, 0.013])


def test_start_r_keeps_child_pythons_on_this_libpython(ro) -> None:
    done = subprocess.run([sys.executable, "-c", "import sys; print(sys.version)"], capture_output=True, text=True)
    assert done.stdout.strip() == sys.version


# --------------------------------------------------------------------------
# The Python side of the reticulate path (no R needed)
# --------------------------------------------------------------------------


def _columns(**cols):
    return {name: {"type": kind, "values": values, "na": na} for name, (kind, values, na) in cols.items()}


def test_fit_from_r_returns_builtins_only() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 40)
    columns = _columns(
        y=("double", (2 * x + rng.normal(0, 0.1, 40)).clip(-1, 3).tolist(), [False] * 40),
        x=("double", x.tolist(), [False] * 40),
        g=("character", rng.choice(["a", "b"], 40).tolist(), [False] * 40),
    )
    out = r_interop.fit_from_r(
        "ols",
        "y ~ x + C(g)",
        columns,
        1e9,
        bounds={"y": [-1, 3], "x": [0, 1]},
        levels={"g": ["a", "b"]},
        random_state=4.0,
    )
    assert out["ok"], out
    assert _is_builtin_tree(out)
    assert out["result"]["terms"] == ["Intercept", "C(g)[T.b]", "x"]
    assert "DP OLS Regression Results" in out["result"]["summary_text"]


def test_fit_from_r_reports_errors_as_values() -> None:
    columns = _columns(y=("double", [1.0, 2.0, 3.0], [False, True, False]), x=("integer", [1, 2, 3], [False] * 3))
    out = r_interop.fit_from_r("ols", "y ~ x", columns, 1.0, bounds={"y": [0, 5], "x": [0, 5]}, missing="raise")
    assert out == {"ok": False, "error": "ValueError", "message": out["message"], "refused": False}
    assert "'y' has a missing" in out["message"] and "curator" in out["message"]
    assert r_interop.fit_from_r("ols", "y ~ x", columns, 1.0, bounds={"y": [0, 5], "x": [0, 5]})["ok"]
    out = r_interop.fit_from_r("quantreg", "y ~ x", columns, 1.0, tau=0.5)  # no bounds: a schema error
    assert not out["ok"] and "cannot derive bounds" in out["message"]


def test_frame_from_columns_scalars_and_types() -> None:
    frame = r_interop.frame_from_columns(
        {
            "a": {"type": "double", "values": 2.5, "na": False},
            "b": {"type": "factor", "values": 2, "na": False, "levels": ["x", "y"], "ordered": False},
            "c": {"type": "logical", "values": True, "na": True},
        }
    )
    assert frame.shape == (1, 3)
    assert frame["a"].tolist() == [2.5] and frame["b"].tolist() == ["y"] and frame["c"].isna().all()
    with pytest.raises(TypeError, match="unknown column type"):
        r_interop.frame_from_columns({"z": {"type": "complex", "values": [1], "na": [False]}})
    with pytest.raises(ValueError, match="differ in length"):
        r_interop.frame_from_columns({"z": {"type": "double", "values": [1.0, 2.0], "na": [False]}})


@pytest.mark.parametrize(
    ("kind", "values"),
    [
        ("date", [-2.0e9, 1.0]),  # far outside pandas' range: an error would show the date
        ("datetime", [9.87654321e17, 1.0]),
        ("double", ["SENTINEL_xyz", 1.0]),
        ("integer", ["SENTINEL_xyz", 1]),
        ("date", ["SENTINEL_xyz", 1.0]),
    ],
)
def test_a_bad_cell_from_r_converts_row_wise_and_no_message_shows_it(kind: str, values: list) -> None:
    """No conversion error, no warning: the bad cell becomes missing, and a fit on it shows no sentinel."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        column = r_interop.column_from_r("c", {"type": kind, "values": values, "na": [False, False]})
    assert pd.isna(pd.Series(column).iloc[0]) and not pd.isna(pd.Series(column).iloc[1])
    columns = _columns(
        y=("double", [1.0, 2.0, 3.0, 4.0], [False] * 4),
        x=("double", ["SENTINEL_xyz", 987654321.0, 2.0, 3.0], [False] * 4),
    )
    out = r_interop.fit_from_r("ols", "y ~ x", columns, 1.0, bounds={"y": [0, 5], "x": [0, 5]}, missing="raise")
    assert not out["ok"] and "SENTINEL" not in out["message"] and "987654" not in out["message"]
    out = r_interop.fit_from_r("ols", "y ~ x", columns, 1.0, bounds={"y": [0, 5], "x": [0, 5]}, random_state=7)
    # The whole value, not a prefix: the result's many released floats hold any 6 digits by chance.
    assert out["ok"] and "987654321" not in str(out["result"]) and "SENTINEL" not in str(out["result"])
