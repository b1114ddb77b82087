"""Command line: ``dpstats ols ...``, ``dpstats quantreg ...``, ``dpstats logit ...``, ``dpstats probit ...`` and
``dpstats demo``.

Usage::

    dpstats ols "FORMULA" --data CSV (--eps 1 | --rho R) --bounds var=lo:hi [--bounds ...]
                [--levels var=a,b,c ...] [--method auto|noisystats] [--delta D]
                [--seed N] [--option name=value ...] [--missing impute|raise]
                [--budget FILE] [--format text|latex|markdown|json]
                [--weights COLUMN [--cluster COLUMN] [--strata COLUMN]]
    dpstats quantreg "FORMULA" ... [--q 0.5]                # the options of ols, without --rho
    dpstats logit "FORMULA" ... [--margins-share S]         # the options of ols; probit alike
    dpstats budget FILE (--eps E [--delta D] | --rho R) [--accounting basic|zcdp]   # create
    dpstats budget FILE [--format text|json]                                         # show
    dpstats demo [--eps 1] [--seed N] [--format text|latex|markdown|json]

``--weights COLUMN`` fits with the survey weights of COLUMN, whose range is declared
with ``--bounds COLUMN=0:MAX``; ``--cluster`` and ``--strata`` name the design's PSU and
stratum columns, whose levels are declared with ``--levels`` (dpstats/frontend/survey.py).
The summary's "Weights" line names the design; a method that cannot take weights is
refused before the CSV is read.

``--budget FILE`` charges the fit to the privacy budget saved in FILE
(dpstats/privacy/budget.py): the fit is refused before the CSV is read if it could
overspend it, and FILE is saved with the fit in its ledger before the summary
is printed. ``dpstats budget`` creates such a file or shows its account and ledger.

``logit`` and ``probit`` fit ``dpstats.dp_logit`` / ``dp_probit`` (dpstats/api/binary.py):
the response is 0/1, a fraction in [0, 1] or a comparison such as ``'I(hours > 0)'``.
Their output is the summary followed by the average marginal effects
(statsmodels' ``get_margeff()``), released with ``--margins-share`` of eps
(0: none); the JSON output carries them under ``"margins"``.

The summary goes to stdout (exit code 0). A bad argument, or a ValueError or
TypeError raised by dpstats, prints ``dpstats: error: <message>`` to stderr and
exits with code 2, without a traceback.

This module imports only the standard library at import time, so that
``dpstats --help`` is fast; pandas and the fitting code load inside functions.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .output.render import FORMATS

if TYPE_CHECKING:
    import pandas as pd

    from .privacy.budget import PrivacyBudget
    from .results.regression import DPRegressionResults

EXIT_USAGE = 2


class CLIError(Exception):
    """A bad command-line argument; the message names the argument."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`CLIError` instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise CLIError(message)


# --------------------------------------------------------------------------
# Parsing of the metadata arguments
# --------------------------------------------------------------------------


def _split_assignment(spec: str, flag: str, form: str) -> tuple[str, str]:
    """Split ``name=value`` at the last ``=`` (names may be expressions)."""
    name, sep, value = spec.rpartition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise CLIError(f"{flag} {spec!r}: expected {form}")
    return name, value


def parse_bounds(specs: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Parse ``--bounds var=lo:hi`` specifications into ``{var: (lo, hi)}``.

    ``var`` may be a column or a formula expression such as ``np.log(x)``.
    Only the syntax is checked here; finiteness and ``lo < hi`` are checked by
    dpstats, whose messages name the variable.
    """
    bounds: dict[str, tuple[float, float]] = {}
    for spec in specs:
        name, value = _split_assignment(spec, "--bounds", "var=lo:hi, e.g. income=0:5000")
        parts = value.split(":")
        if len(parts) != 2:
            raise CLIError(f"--bounds {spec!r}: expected var=lo:hi, e.g. income=0:5000")
        try:
            lo, hi = float(parts[0]), float(parts[1])
        except ValueError:
            raise CLIError(f"--bounds {spec!r}: lo and hi must be numbers") from None
        if name in bounds:
            raise CLIError(f"--bounds: {name!r} is declared twice")
        bounds[name] = (lo, hi)
    return bounds


def parse_levels(specs: Sequence[str]) -> dict[str, list[str]]:
    """Parse ``--levels var=a,b,c`` specifications into ``{var: ["a", "b", "c"]}``."""
    levels: dict[str, list[str]] = {}
    for spec in specs:
        name, value = _split_assignment(spec, "--levels", "var=a,b,c")
        values = [v.strip() for v in value.split(",")]
        if any(v == "" for v in values):
            raise CLIError(f"--levels {spec!r}: empty level name")
        if name in levels:
            raise CLIError(f"--levels: {name!r} is declared twice")
        levels[name] = values
    return levels


_RESERVED = frozenset(
    {
        "formula",
        "data",
        "eps",
        "rho",
        "bounds",
        "levels",
        "method",
        "delta",
        "random_state",
        "missing",
        "se_share",
        "margins_share",
        "weights",
        "cluster",
        "strata",
        "q",
        "budget",
    }
)
_LITERALS: dict[str, object] = {"true": True, "false": False, "none": None, "null": None}


def _option_value(text: str) -> object:
    """An option value: a JSON literal (number, list, true/false/null), True/False/None, or a string."""
    if text.lower() in _LITERALS:
        return _LITERALS[text.lower()]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_options(specs: Sequence[str]) -> dict[str, object]:
    """Parse ``--option name=value`` into mechanism hyperparameters."""
    options: dict[str, object] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier():
            raise CLIError(f"--option {spec!r}: expected name=value")
        if name in _RESERVED:
            flag = "seed" if name == "random_state" else name.replace("_", "-")
            raise CLIError(f"--option {name}: use --{flag} instead")
        options[name] = _option_value(value)
    return options


def _check_bound_names(bounds: Mapping[str, object], data: pd.DataFrame) -> None:
    """A bound on a plain name must be a column (a typo would otherwise be ignored)."""
    for name in bounds:
        if name.isidentifier() and name not in data.columns:
            raise CLIError(f"--bounds: {name!r} is not a column of --data")


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _read_csv(path: str, categorical: Sequence[str]) -> pd.DataFrame:
    """The CSV as a frame whose shape and cells do not depend on any other row.

    Columns with declared levels are read as text, so that a cell matches a
    level when it is written as the level is, whatever the other cells hold
    (a numeric dtype would depend on every row). A row with too many fields
    keeps its first ones, a row with too few gets missing cells, undecodable
    bytes are replaced: a malformed row is treated row-wise like any bad cell,
    and cannot make the command fail.
    """
    import pandas as pd

    source = io.StringIO(sys.stdin.read()) if path == "-" else path
    try:
        header = pd.read_csv(source, nrows=0, encoding_errors="replace")
        if path == "-":
            source.seek(0)
        return pd.read_csv(
            source,
            dtype={name: str for name in categorical if name in header.columns},
            engine="python",
            on_bad_lines=lambda fields: fields[: len(header.columns)],
            encoding_errors="replace",
        )
    except FileNotFoundError:
        raise CLIError(f"--data: no such file {path!r}") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise CLIError(f"--data: could not read {path!r} as CSV ({type(exc).__name__})") from None


def _fit(estimator: str, formula: str, data: pd.DataFrame, kwargs: Mapping[str, Any]) -> DPRegressionResults:
    """Call dp_ols, dp_quantreg, dp_logit or dp_probit; their ValueError/TypeError (bad metadata, eps,
    formula...) become :class:`CLIError`.

    The call sits in its own small frame because patsy looks up names that are
    not columns in the caller's namespace.
    """
    from .api.binary import dp_logit, dp_probit
    from .api.estimators import dp_ols, dp_quantreg

    fit = {"ols": dp_ols, "quantreg": dp_quantreg, "logit": dp_logit, "probit": dp_probit}[estimator]
    try:
        return fit(formula, data, **kwargs)
    except (ValueError, TypeError) as exc:
        raise CLIError(str(exc)) from None


def _load_budget(path: str) -> PrivacyBudget:
    """The budget saved at ``path`` (``dpstats budget FILE --eps ...`` creates one)."""
    from .privacy.budget import PrivacyBudget

    try:
        return PrivacyBudget.load(path)
    except FileNotFoundError:
        raise CLIError(f"--budget: no such file {path!r} (create it with: dpstats budget {path} --eps E)") from None
    except (OSError, ValueError) as exc:
        raise CLIError(f"--budget: {exc}") from None


def _check_budget_first(budget: PrivacyBudget, args: argparse.Namespace, options: Mapping[str, object]) -> None:
    """Refuse a fit that could overspend the budget before the CSV is read."""
    from .api.estimators import planned_spend

    try:
        budget.check(
            planned_spend(args.estimator, eps=args.eps, delta=args.delta, rho=args.rho, method=args.method, **options)
        )
    except (ValueError, TypeError) as exc:
        raise CLIError(str(exc)) from None


def run_fit(args: argparse.Namespace) -> str:
    """The ``ols``, ``quantreg``, ``logit`` and ``probit`` commands: read the CSV, fit, save the budget if one was
    given, and render the summary (with a binary fit's average marginal effects)."""
    bounds = parse_bounds(args.bounds)
    levels = parse_levels(args.levels)
    options = parse_options(args.option)
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")
    budget = None if args.budget is None else _load_budget(args.budget)
    if budget is not None:
        _check_budget_first(budget, args, options)
    text_columns = [*levels, *([] if args.unit is None else [args.unit])]  # a unit's key as written, like a level
    data = _read_csv(args.data, text_columns)
    _check_bound_names(bounds, data)
    kwargs: dict[str, Any] = {
        "eps": args.eps,
        "bounds": bounds,
        "levels": levels,
        "method": args.method,
        "delta": args.delta,
        "random_state": args.seed,
        "missing": args.missing,
        "se_share": args.se_share,
        "budget": budget,
        "force": args.force,
        "target": args.target,
        "unit": args.unit,
        "max_rows": args.max_rows,
        "weights": args.weights,
        "cluster": args.cluster,
        "strata": args.strata,
        **options,
    }
    if args.estimator == "ols":
        kwargs["rho"] = args.rho
    elif args.estimator == "quantreg":  # dp_quantreg takes no rho=: its message names it
        kwargs["q"] = args.q
        if args.rho is not None:
            kwargs["rho"] = args.rho
    else:  # dp_logit takes no rho= (its refusal names it) and a share of eps for the marginal effects
        kwargs["margins_share"] = args.margins_share
        if args.rho is not None:
            kwargs["rho"] = args.rho
    res = _fit(args.estimator, args.formula, data, kwargs)
    if budget is not None:
        try:
            budget.save(args.budget)
        except OSError as exc:
            raise CLIError(f"--budget: could not save {args.budget!r} ({exc.strerror}); the fit is not shown") from None
    from .output.render import render

    if args.estimator in ("ols", "quantreg") or args.format == "json":  # a binary fit's JSON holds its "margins"
        return render(res, args.format)
    return render(res, args.format) + "\n\n" + render_margins(res, args.format)


MARGINS_NONE = "Average marginal effects: none (--margins-share 0 spent nothing on them)."


def render_margins(res: DPRegressionResults, fmt: str) -> str:
    """A binary fit's average marginal effects (``res.get_margeff()``) as a table in ``fmt`` (text, latex or
    markdown), or a line saying the fit spent nothing on them."""
    if res.at_fit is None:
        return MARGINS_NONE
    margins = res.get_margeff()
    if fmt == "text":
        return margins.summary()
    from .output.render import latex_escape, markdown_table

    frame = margins.summary_frame()
    title = f"DP {margins.link.capitalize()} Average Marginal Effects (dy/dx, overall)"
    header = ["", *frame.columns]
    rows = [[str(term), *(_margin_cell(v) for v in row)] for term, row in frame.iterrows()]
    if fmt == "markdown":
        return "\n".join([f"**{title}**", "", *markdown_table(header, rows)])
    out = [
        r"\begin{table}[htbp]",
        r"\centering",
        f"\\caption{{{latex_escape(title)}}}",
        f"\\begin{{tabular}}{{l{'r' * len(frame.columns)}}}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
        r"\midrule",
        *(" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows),
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(out)


def _margin_cell(value: float) -> str:
    """A number of the marginal effects' table, as the summary prints its coefficients."""
    import math

    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return f"{value:.4f}" if abs(value) >= 1e-4 or value == 0 else f"{value:.3e}"


def run_budget(args: argparse.Namespace) -> str:
    """The ``budget`` command: create FILE (with --eps or --rho), or show its account and ledger."""
    from pathlib import Path

    from .privacy.budget import PrivacyBudget

    if args.eps is None and args.rho is None:
        if args.delta is not None or args.accounting is not None:
            raise CLIError("--delta and --accounting create a budget: give --eps or --rho too")
        budget = _load_budget(args.file)
        if args.format == "json":
            return budget.to_json()
        ledger = budget.ledger
        table = ledger.to_string(index=False) if len(ledger) else "(no release yet)"
        return f"{budget.describe()}\n\n{table}"
    if Path(args.file).exists():
        raise CLIError(f"budget: {args.file!r} exists; a budget file is never overwritten from the command line")
    try:
        budget = PrivacyBudget(eps=args.eps, delta=args.delta or 0.0, rho=args.rho, accounting=args.accounting)
        budget.save(args.file)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"budget: {exc}") from None
    except OSError as exc:
        raise CLIError(f"budget: could not write {args.file!r} ({exc.strerror})") from None
    return f"Created {args.file}. {budget.describe()}"


def run_demo_command(args: argparse.Namespace) -> str:
    """The ``demo`` command (see :mod:`dpstats.demo`)."""
    if args.seed is not None and args.seed < 0:
        raise CLIError("--seed must be a non-negative integer")
    from .demo import run_demo
    from .privacy.accounting import check_eps

    try:
        check_eps(args.eps)
    except (ValueError, TypeError) as exc:
        raise CLIError(f"--{exc}") from None
    return run_demo(eps=args.eps, seed=args.seed, fmt=args.format)


def _add_fit_arguments(cmd: argparse.ArgumentParser, method_example: str) -> None:
    """The arguments of a fit command (``ols``, ``quantreg``, ``logit``, ``probit``)."""
    cmd.add_argument("formula", help="patsy formula, e.g. 'y ~ x + C(g)'")
    cmd.add_argument("--data", required=True, metavar="CSV", help="CSV file with a header row ('-' for stdin)")
    budget = cmd.add_mutually_exclusive_group(required=True)
    budget.add_argument("--eps", type=float, help="total privacy budget (> 0)")
    budget.add_argument("--rho", type=float, help="rho of rho-zCDP, for a zCDP mechanism (instead of --eps)")
    cmd.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="VAR=LO:HI",
        help="public bounds of a numeric variable or expression (repeat for each)",
    )
    cmd.add_argument(
        "--levels",
        action="append",
        default=[],
        metavar="VAR=A,B,C",
        help="public levels of a categorical column (repeat for each)",
    )
    cmd.add_argument(
        "--method", default="auto", help=f"mechanism: auto (default) or a registered name, e.g. {method_example}"
    )
    cmd.add_argument("--delta", type=float, default=0.0, help="delta for approximate-DP mechanisms (default 0)")
    cmd.add_argument("--seed", type=int, default=None, help="seed for reproducible noise (default: fresh randomness)")
    cmd.add_argument(
        "--se-share",
        type=float,
        default=None,
        help="part of eps spent on standard errors, in [0, 1) (default: the mechanism's; 0: none, SEs NaN)",
    )
    cmd.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a mechanism hyperparameter (repeat for each)",
    )
    cmd.add_argument(
        "--missing",
        choices=("impute", "raise"),
        default="impute",
        help="bad cells: impute row-wise (default; see dpstats/frontend/cells.py) or raise (for the data curator only)",
    )
    cmd.add_argument(
        "--budget",
        metavar="FILE",
        default=None,
        help="charge the fit to the privacy budget saved in FILE (refused before the CSV is read if it "
        "could overspend it; FILE is saved with the fit in its ledger)",
    )
    cmd.add_argument(
        "--target",
        type=float,
        default=None,
        help="the largest acceptable error of the first regressor's coefficient (its units): auto refuses, "
        "before spending, a call predicted to miss it (default: 10 non-private standard errors)",
    )
    cmd.add_argument(
        "--unit",
        metavar="COLUMN",
        default=None,
        help="the privacy unit: every row of one value of COLUMN (a person, a firm), with --max-rows",
    )
    cmd.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="with --unit, the public bound on one unit's rows: at most this many are kept, chosen without "
        "looking at the values",
    )
    cmd.add_argument(
        "--weights",
        default=None,
        metavar="COLUMN",
        help="the survey-weight column, its range declared with --bounds COLUMN=0:MAX (a method that cannot take "
        "weights is refused before the CSV is read)",
    )
    cmd.add_argument(
        "--cluster",
        default=None,
        metavar="COLUMN",
        help="with --weights, the survey's PSU column, its levels declared with --levels: design-based standard "
        "errors as survey::svyglm's",
    )
    cmd.add_argument(
        "--strata",
        default=None,
        metavar="COLUMN",
        help="with --weights, the survey's stratum column (the PSUs, or without --cluster the rows, nested within "
        "strata), its levels declared",
    )
    cmd.add_argument(
        "--force", action="store_true", help="fit even where auto's plan refuses (the summary's status says so)"
    )
    cmd.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``dpstats`` command."""
    parser = _Parser(
        prog="dpstats",
        description="Differentially private regression from the command line.",
        epilog="Example: dpstats ols 'foodexp ~ income' --data engel.csv --eps 1 "
        "--bounds income=0:5000 --bounds foodexp=0:2500",
    )
    sub = parser.add_subparsers(dest="command", metavar="{ols,quantreg,logit,probit,budget,demo}", parser_class=_Parser)
    sub.required = True

    ols = sub.add_parser(
        "ols",
        help="DP least squares on a CSV file",
        description="Fit dp_ols(FORMULA) on the rows of a CSV file and print the summary.",
    )
    _add_fit_arguments(ols, "noisystats")
    ols.set_defaults(run=run_fit, estimator="ols")
    quantreg = sub.add_parser(
        "quantreg",
        help="DP quantile regression on a CSV file",
        description="Fit dp_quantreg(FORMULA, q=Q) on the rows of a CSV file and print the summary.",
    )
    _add_fit_arguments(quantreg, "histogram")
    quantreg.add_argument("--q", type=float, default=0.5, help="the quantile tau, in (0, 1) (default 0.5)")
    quantreg.set_defaults(run=run_fit, estimator="quantreg")
    for link, model in (("logit", "logistic"), ("probit", "probit")):
        binary = sub.add_parser(
            link,
            help=f"DP {model} regression of a binary response on a CSV file",
            description=f"Fit dp_{link}(FORMULA) on the rows of a CSV file and print the summary and the average "
            "marginal effects. The response is 0/1, a fraction in [0, 1] or a comparison such as 'I(hours > 0)'.",
        )
        _add_fit_arguments(binary, "histogram")
        binary.add_argument(
            "--margins-share",
            type=float,
            default=None,
            help="part of eps spent on the average marginal effects, in [0, 1) (default 0.05; 0: none)",
        )
        binary.set_defaults(run=run_fit, estimator=link)

    budget_cmd = sub.add_parser(
        "budget",
        help="create a privacy budget file, or show its account and ledger",
        description="With --eps or --rho: create FILE (never overwritten). Without: show FILE's account and ledger.",
    )
    budget_cmd.add_argument("file", metavar="FILE", help="the budget's JSON file")
    budget_cmd.add_argument("--eps", type=float, default=None, help="total eps of the budget")
    budget_cmd.add_argument("--delta", type=float, default=None, help="total delta of the budget (default 0)")
    budget_cmd.add_argument("--rho", type=float, default=None, help="total rho of a zCDP account")
    budget_cmd.add_argument(
        "--accounting",
        choices=("basic", "zcdp"),
        default=None,
        help="basic composition (default without --rho) or zCDP (default with --rho)",
    )
    budget_cmd.add_argument("--format", choices=("text", "json"), default="text", help="output of the show form")
    budget_cmd.set_defaults(run=run_budget)

    demo = sub.add_parser(
        "demo",
        help="DP OLS on a public survey and on the small engel data, each with the non-private fit",
        description="Run dp_ols on AER's CPSSW8 wage survey (public, n = 61,395; eps = 5) and "
        "dp_ols('foodexp ~ income') on statsmodels' engel data (public, n = 235; --eps).",
    )
    demo.add_argument("--eps", type=float, default=1.0, help="the engel fit's privacy budget (default 1)")
    demo.add_argument("--seed", type=int, default=None, help="seed for reproducible noise (default: fresh randomness)")
    demo.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    demo.set_defaults(run=run_demo_command)
    return parser


def _error(message: str) -> int:
    print(f"dpstats: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        output = args.run(args)
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
    except CLIError as exc:
        return _error(str(exc))
    try:
        print(output, flush=True)
    except BrokenPipeError:  # e.g. ``dpstats ... | head``: stop quietly, as Unix tools do
        _silence_stdout()
        return 1
    return 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
