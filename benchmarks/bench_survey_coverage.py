"""Coverage of design-based standard errors on stratified two-stage samples with unequal weights (issue 41).

The population (fixed seed ``SEED``, about 300,000 rows): ``H = 20`` strata of
``CLUSTERS = 120`` clusters each, cluster sizes uniform on 60..190. A cluster has a
random intercept, a random slope and a cluster-level part of ``x`` (so its rows'
scores are correlated and the PSUs matter); ``x`` lies in [0, 1]. Two outcomes:

* ``y`` (0/1): logit with slope of ``x - 0.5`` rising across the strata from 0 to 3;
* ``yc``: linear with slope of ``x`` rising across the strata from 0 to 3, normal errors, clipped to its
  declared bounds (-5, 9) (the population is the clipped one, as dpstats sees it).

The target is the census coefficient: the fit of the formula on every row of the
population (the weighted fit's estimand). The design is informative: the
within-PSU sampling rate falls from 1.0 to 0.18 across the strata as the slope
rises, so the unweighted fit targets a smaller slope.

Samples (two designs, each drawn anew per replicate): in stratum h, ``m_h`` PSUs by
simple random sampling without replacement among its 120 clusters (equal
probability), then every row of a chosen PSU independently with probability
``r_h``; the weight is ``1 / pi = (120 / m_h) / r_h``, the declared weight range
``(0, W)`` a public constant above the largest weight the design can give (W = 180 in both designs).

* ``balanced``: ``m_h = 4`` in every stratum (80 PSUs), weights 30 to 167 (ratio 5.6), n about 5,800;
* ``unbalanced``: ``m_h`` = 2, 3, 4, 5, 6, 2, ... (80 PSUs), weights 24 to 170 (ratio 7.0), n about 5,700.
  The PSUs are declared as the design's (stratum, PSU) pairs, so no declared PSU is without rows.

On each sample, for each estimator (``ESTIMATORS``: one line each) and each eps in
``EPSILONS`` (1e9, the non-private limit, and 5), four fits of the same sample:

* ``design``: ``weights="wt", cluster="psu", strata="stratum"`` (svyglm's linearisation SEs);
* ``psu_only``: ``weights="wt", cluster="psu_id"`` with every sampled PSU its own declared level and no
  strata (strata ignored: conservative where the strata differ);
* ``rows``: ``weights="wt"`` only (the weighted sandwich, one PSU per row);
* ``unweighted``: no weights (targets another estimand under this design).

and, at eps = 1e9 only, R's ``survey::svyglm`` (``svydesign(ids=~psu,
strata=~stratum, weights=~wt, nest=TRUE)``, quasibinomial or gaussian) on the same
samples, with normal 95% intervals, if ``Rscript`` and the survey package are
there (``--no-r`` skips it). Reported per cell: replicates, coverage of the
census slope by the 95% interval (``res.conf_int()``), mean SE over the
estimates' empirical SD, bias over the census slope, failed fits.

An estimator whose function refuses survey weights (a ValueError or TypeError
from the call, raised before the data are read) is skipped with a note: so
dp_ols with method "noisystats" runs as soon as it takes ``weights=``.

Resumable: replicates come in batches of ``BATCH``; each batch of each (design,
estimator) is one JSON line in
``benchmarks/results/survey_coverage/<design>__<estimator>.jsonl`` (with the commit and a
hash of the uncommitted changes under dpstats/ it ran on), and a rerun skips the
batches there. Replicate ``r`` of a design is the same sample for every estimator
and every run.

    .venv/bin/python benchmarks/bench_survey_coverage.py [--reps 1000] [--minutes 40] [--no-r]
        [--designs balanced unbalanced] [--estimators logit_newton ols_noisystats]
    .venv/bin/python benchmarks/bench_survey_coverage.py --table   # the table from the shards only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm

import dpstats

SHARDS = Path(__file__).resolve().parent / "results" / "survey_coverage"
SEED = 41_2024
H = 20
CLUSTERS = 120
CLUSTER_SIZE = (60, 190)
SLOPES = np.linspace(0.0, 3.0, H)
"""Each stratum's slope of x (both outcomes): rising across the strata."""
RATES = np.linspace(1.0, 0.18, H)
"""Each stratum's within-PSU sampling rate: falling as the slope rises (an informative design)."""
X_BOUNDS = (0.0, 1.0)
YC_BOUNDS = (-5.0, 9.0)
EPSILONS = (1e9, 5.0)
BATCH = 50
LEVEL_Z = 1.959963984540054
TARGET = (0.93, 0.975)


@dataclass(frozen=True)
class SurveyDesign:
    """A stratified two-stage design: ``psus[h]`` PSUs of stratum h (equal probability), rows at ``RATES[h]``."""

    name: str
    psus: tuple[int, ...]

    @property
    def stratum_weights(self) -> np.ndarray:
        """Every stratum's weight ``1 / pi`` (the same for all its sampled rows)."""
        return CLUSTERS / (np.asarray(self.psus) * RATES)

    @property
    def weight_bound(self) -> float:
        """The declared upper end of the weights: a public constant above the largest weight, rounded up."""
        return float(10 * math.ceil(self.stratum_weights.max() / 10 + 0.5))

    def declared(self) -> dict[str, list]:
        """The declared levels of the PSU columns: ``psu`` the design's (stratum, PSU) pairs, ``stratum`` and
        ``psu_id``."""
        return {
            "psu": [(h, c) for h, m in enumerate(self.psus) for c in range(m)],
            "stratum": list(range(H)),
            "psu_id": list(range(sum(self.psus))),
        }


DESIGNS = {
    "balanced": SurveyDesign("balanced", (4,) * H),
    "unbalanced": SurveyDesign("unbalanced", tuple(2 + h % 5 for h in range(H))),
}


@dataclass(frozen=True)
class Estimator:
    """One estimator: the dpstats function, its formula, method and options; ``family`` names the census fit
    and R's family (``"logit"`` or ``"ols"``)."""

    fit: Callable[..., object]
    formula: str
    method: str
    family: str
    options: dict[str, object] = field(default_factory=dict)

    @property
    def response(self) -> str:
        return self.formula.split("~")[0].strip()

    def bounds(self) -> dict[str, tuple[float, float]]:
        return {"x": X_BOUNDS} | ({"yc": YC_BOUNDS} if self.family == "ols" else {})


ESTIMATORS = {
    "logit_newton": Estimator(dpstats.dp_logit, "y ~ x", "newton", "logit", {"margins_share": 0}),
    "ols_noisystats": Estimator(dpstats.dp_ols, "yc ~ x", "noisystats", "ols"),
}
VARIANTS = {
    "design": {"weights": "wt", "cluster": "psu", "strata": "stratum"},
    "psu_only": {"weights": "wt", "cluster": "psu_id"},
    "rows": {"weights": "wt"},
    "unweighted": {},
}


@cache
def population() -> pd.DataFrame:
    """The finite population, sorted by cluster (module docstring)."""
    rng = np.random.default_rng(SEED)
    sizes = rng.integers(CLUSTER_SIZE[0], CLUSTER_SIZE[1] + 1, size=H * CLUSTERS)
    cluster = np.repeat(np.arange(H * CLUSTERS), sizes)
    stratum = cluster // CLUSTERS
    n = cluster.size
    x = np.clip(0.5 + rng.normal(0, 0.12, H * CLUSTERS)[cluster] + rng.normal(0, 0.18, n), *X_BOUNDS)
    slope = SLOPES[stratum] + rng.normal(0, 0.8, H * CLUSTERS)[cluster]
    eta = -0.3 + 0.03 * stratum + slope * (x - 0.5) + rng.normal(0, 0.5, H * CLUSTERS)[cluster]
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    ols_slope = SLOPES[stratum] + rng.normal(0, 1.0, H * CLUSTERS)[cluster]
    yc = 1.0 + 0.05 * stratum + ols_slope * x + rng.normal(0, 0.5, H * CLUSTERS)[cluster] + rng.normal(0, 1.0, n)
    return pd.DataFrame({"x": x, "y": y, "yc": np.clip(yc, *YC_BOUNDS), "stratum": stratum, "cluster": cluster})


@cache
def census(family: str) -> dict[str, float]:
    """The census coefficients of ``y ~ x`` (logit) or ``yc ~ x`` (least squares) on the whole population."""
    pop = population()
    X = sm.add_constant(pop["x"].to_numpy())
    if family == "logit":
        params = sm.Logit(pop["y"].to_numpy(), X).fit(disp=0).params
    else:
        params = np.linalg.lstsq(X, pop["yc"].to_numpy(), rcond=None)[0]
    return {"Intercept": float(params[0]), "x": float(params[1])}


@cache
def cluster_starts() -> np.ndarray:
    """Where each cluster's rows start in the population (and the end), sorted by cluster."""
    counts = np.bincount(population()["cluster"].to_numpy(), minlength=H * CLUSTERS)
    return np.concatenate([[0], np.cumsum(counts)])


def sample(design: SurveyDesign, rep: int) -> pd.DataFrame:
    """Replicate ``rep``'s stratified two-stage sample (module docstring), the same in every run."""
    rng = np.random.default_rng([SEED, list(DESIGNS).index(design.name), rep])
    starts, weights = cluster_starts(), design.stratum_weights
    rows, psu, psu_id, wt = [], [], [], []
    for h, m in enumerate(design.psus):
        for local, c in enumerate(rng.choice(CLUSTERS, size=m, replace=False)):
            g = h * CLUSTERS + c
            members = np.arange(starts[g], starts[g + 1])
            taken = members[rng.uniform(size=members.size) < RATES[h]]
            rows.append(taken)
            psu.append(np.full(taken.size, local))
            psu_id.append(np.full(taken.size, sum(design.psus[:h]) + local))
            wt.append(np.full(taken.size, weights[h]))
    data = population().iloc[np.concatenate(rows)].reset_index(drop=True)
    return data.assign(psu=np.concatenate(psu), psu_id=np.concatenate(psu_id), wt=np.concatenate(wt))


def fit_seed(design: str, rep: int, eps_index: int, variant: str) -> int:
    """The fit's random_state: one stream per (design, replicate, eps, SE kind)."""
    entropy = [SEED, list(DESIGNS).index(design), rep, eps_index, list(VARIANTS).index(variant)]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def one_fit(est: Estimator, design: SurveyDesign, data: pd.DataFrame, eps: float, variant: str, seed: int) -> dict:
    """One fit's slopes: estimates, SEs and 95% interval ends (NaN and the error where it raised)."""
    survey = VARIANTS[variant]
    bounds = est.bounds() | ({"wt": (0.0, design.weight_bound)} if "weights" in survey else {})
    levels = {k: v for k, v in design.declared().items() if k in survey.values()} or None
    try:
        res = est.fit(est.formula, data, eps=eps, bounds=bounds, levels=levels, method=est.method,
                      random_state=seed, **est.options, **survey)  # fmt: skip
    except (ValueError, TypeError, np.linalg.LinAlgError) as error:
        return {"est": [math.nan], "se": [math.nan], "lo": [math.nan], "hi": [math.nan], "status": repr(error)}
    slopes = [t for t in res.params.index if t != "Intercept"]
    ci = res.conf_int().loc[slopes]
    return {
        "est": res.params[slopes].tolist(),
        "se": res.bse[slopes].tolist(),
        "lo": ci["lower"].tolist(),
        "hi": ci["upper"].tolist(),
        "status": "failed" if res.failed else str(res.status),
    }


def takes_survey_weights(est: Estimator) -> str | None:
    """None if the estimator takes weights, cluster and strata; else the refusal's message (a ValueError or
    TypeError from the call: dpstats refuses before reading the data)."""
    design = DESIGNS["balanced"]
    bounds = est.bounds() | {"wt": (0.0, design.weight_bound)}
    try:
        est.fit(est.formula, sample(design, 0), eps=1.0, bounds=bounds, levels=design.declared(), method=est.method,
                random_state=0, **est.options, **VARIANTS["design"])  # fmt: skip
    except (ValueError, TypeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


R_SCRIPT = """
suppressMessages(library(survey))
args <- commandArgs(TRUE)
d <- read.csv(args[1])
fam <- if (args[3] == "logit") quasibinomial() else gaussian()
f <- as.formula(args[4])
out <- do.call(rbind, lapply(split(d, d$rep), function(s) {
  des <- svydesign(ids = ~psu, strata = ~stratum, weights = ~wt, nest = TRUE, data = s)
  fit <- svyglm(f, design = des, family = fam)
  data.frame(rep = s$rep[1], term = names(coef(fit)), est = unname(coef(fit)), se = unname(SE(fit)))
}))
write.csv(out, args[2], row.names = FALSE)
"""


def svyglm(est: Estimator, samples: dict[int, pd.DataFrame]) -> dict[int, dict] | None:
    """R survey::svyglm's slope estimates, SEs and normal 95% intervals on the samples (None if R fails)."""
    if shutil.which("Rscript") is None:
        return None
    columns = [est.response, "x", "wt", "psu", "stratum"]
    frame = pd.concat([s[columns].assign(rep=r) for r, s in samples.items()], ignore_index=True)
    with tempfile.TemporaryDirectory() as tmp:
        src, out, script = Path(tmp, "in.csv"), Path(tmp, "out.csv"), Path(tmp, "fit.R")
        frame.to_csv(src, index=False)
        script.write_text(R_SCRIPT)
        done = subprocess.run(["Rscript", str(script), str(src), str(out), est.family, est.formula],
                              capture_output=True, text=True, check=False)  # fmt: skip
        if done.returncode != 0 or not out.exists():
            print(f"  svyglm skipped: {done.stderr.strip()[-300:]}")
            return None
        fits = pd.read_csv(out)
    fits = fits[fits["term"] != "(Intercept)"]
    result = {}
    for r, rows in fits.groupby("rep"):
        est_, se = rows["est"].to_numpy(), rows["se"].to_numpy()
        result[int(r)] = {"est": est_.tolist(), "se": se.tolist(), "lo": (est_ - LEVEL_Z * se).tolist(),
                          "hi": (est_ + LEVEL_Z * se).tolist(), "status": "ok"}  # fmt: skip
    return result


@cache
def code_version() -> dict[str, str]:
    """The commit the run imported dpstats from, and a hash of the uncommitted changes under dpstats/ (tracked
    and untracked), "" if none: which shards ran on the same code."""
    root = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout

    changes = git("diff", "HEAD", "--", "dpstats")
    for name in sorted(git("ls-files", "--others", "--exclude-standard", "--", "dpstats").split()):
        changes += name + (root / name).read_text(errors="replace")
    return {"commit": git("rev-parse", "--short", "HEAD").strip(),
            "uncommitted": hashlib.sha1(changes.encode()).hexdigest()[:10] if changes else ""}  # fmt: skip


def shard(design: str, estimator: str) -> Path:
    return SHARDS / f"{design}__{estimator}.jsonl"


def read_batches(path: Path) -> Iterator[dict]:
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                yield json.loads(line)


def run_batch(name: str, est: Estimator, design: SurveyDesign, batch: int, use_r: bool) -> dict:
    """One batch of replicates: every eps and variant on each sample, and svyglm at eps 1e9."""
    reps = range(batch * BATCH, (batch + 1) * BATCH)
    samples = {r: sample(design, r) for r in reps}
    fits: dict[int, dict] = {}
    for r, data in samples.items():
        wt = data["wt"].to_numpy()
        fits[r] = {"rep": r, "n": len(data), "weight_ratio": float(wt.max() / wt.min()), "fits": {}}
        for i, eps in enumerate(EPSILONS):
            for variant in VARIANTS:
                seed = fit_seed(design.name, r, i, variant)
                fits[r]["fits"][f"{eps:g}/{variant}"] = one_fit(est, design, data, eps, variant, seed)
    reference = svyglm(est, samples) if use_r else None
    if reference is not None:
        for r in reps:
            fits[r]["fits"][f"{EPSILONS[0]:g}/svyglm"] = reference.get(r, {"status": "missing"})
    return {"batch": batch, "estimator": name, "design": design.name, "census": census(est.family),
            "weight_bound": design.weight_bound, "code": code_version(),
            "replicates": [fits[r] for r in reps]}  # fmt: skip


def run(designs: list[str], estimators: list[str], reps: int, minutes: float, use_r: bool) -> None:
    """Fill every (design, estimator) shard up to ``reps`` replicates, batch by batch, until ``minutes`` pass."""
    SHARDS.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    print(f"dpstats code: {code_version()}", flush=True)
    runnable = []
    for name in estimators:
        refusal = takes_survey_weights(ESTIMATORS[name])
        if refusal is None:
            runnable.append(name)
        else:
            print(f"note: {name} skipped, it does not take survey weights yet ({refusal})", flush=True)
    for batch in range(math.ceil(reps / BATCH)):
        for d in designs:
            for name in runnable:
                path = shard(d, name)
                if batch in {b["batch"] for b in read_batches(path)}:
                    continue
                if time.monotonic() - start > 60 * minutes:
                    print(f"stopped after {minutes:g} minutes; rerun to resume")
                    return
                t = time.monotonic()
                line = run_batch(name, ESTIMATORS[name], DESIGNS[d], batch, use_r)
                with path.open("a") as out:
                    out.write(json.dumps(line) + "\n")
                print(f"{d} {name} batch {batch}: {time.monotonic() - t:.0f}s", flush=True)


def cell_rows() -> pd.DataFrame:
    """One row per (estimator, design, eps, SE kind, replicate) from every shard."""
    records = []
    for path in sorted(SHARDS.glob("*.jsonl")):
        for line in read_batches(path):
            truth = line["census"]["x"]
            code = "{commit}+{uncommitted}".format(**line["code"])
            for rep in line["replicates"]:
                for key, f in rep["fits"].items():
                    eps, kind = key.split("/")
                    records.append({"estimator": line["estimator"], "design": line["design"], "eps": eps,
                                    "se kind": kind, "rep": rep["rep"], "n": rep["n"],
                                    "weight_ratio": rep["weight_ratio"], "est": f["est"][0], "se": f["se"][0],
                                    "covers": f["lo"][0] <= truth <= f["hi"][0], "truth": truth,
                                    "failed": not np.isfinite(f["est"][0]) or f["status"] == "failed",
                                    "flagged": f["status"] == "biased", "code": code})  # fmt: skip
    return pd.DataFrame.from_records(records)


def table() -> pd.DataFrame:
    """Coverage, mean SE / empirical SD and bias per cell (failed fits left out of all three, and counted)."""
    rows = cell_rows()
    if rows.empty:
        print("no shards yet")
        return rows
    kinds = [*VARIANTS, "svyglm"]
    out = []
    for (estimator, design, eps, kind), cell in rows.groupby(["estimator", "design", "eps", "se kind"]):
        ok = cell[~cell["failed"]]
        sd = ok["est"].std(ddof=1)
        coverage = ok["covers"].mean()
        out.append({"estimator": estimator, "design": design, "eps": eps, "se kind": kind, "reps": len(ok),
                    "failed": int(cell["failed"].sum()), "flagged biased": int(cell["flagged"].sum()),
                    "coverage": coverage, "mc se": math.sqrt(0.95 * 0.05 / max(len(ok), 1)),
                    "in target": TARGET[0] <= coverage <= TARGET[1], "se/sd": ok["se"].mean() / sd,
                    "median se/sd": ok["se"].median() / sd,
                    "bias": ok["est"].mean() - ok["truth"].iloc[0], "mean se": ok["se"].mean(), "sd": sd,
                    "census": ok["truth"].iloc[0], "mean n": ok["n"].mean(),
                    "max/min weight": ok["weight_ratio"].mean()})  # fmt: skip
    versions = rows.groupby(["estimator", "design"])["code"].unique()
    for (estimator, design), codes in versions.items():
        if len(codes) > 1:
            print(f"note: {estimator}, {design}: shards from {len(codes)} versions of dpstats ({', '.join(codes)})")
    frame = pd.DataFrame(out)
    frame["order"] = frame["se kind"].map(kinds.index)
    frame["eps order"] = frame["eps"].astype(float).map(lambda e: -e)
    return frame.sort_values(["estimator", "design", "eps order", "order"]).drop(columns=["order", "eps order"])


def print_table() -> None:
    frame = table()
    if frame.empty:
        return
    print(f"Coverage of the census slope of x by 95% intervals (target {TARGET}); design-based = 'design'.")
    print("mc se: the Monte Carlo s.e. of a coverage of 0.95 over that many replicates, sqrt(.95 x .05 / reps).")
    print("se/sd: mean reported SE over the estimates' SD (median se/sd: the median SE's); bias: mean - census.")
    for (estimator, design), cells in frame.groupby(["estimator", "design"], sort=False):
        first = cells.iloc[0]
        print(f"\n{estimator}, {design} design: census slope {first['census']:.4f}, mean n {first['mean n']:.0f}, "
              f"max/min weight {first['max/min weight']:.1f}, declared weight bound "
              f"{DESIGNS[design].weight_bound:g}")  # fmt: skip
        shown = cells[["eps", "se kind", "reps", "failed", "flagged biased", "coverage", "mc se", "in target",
                       "se/sd", "median se/sd", "bias", "mean se", "sd"]]  # fmt: skip
        print(shown.to_string(index=False, float_format=lambda v: f"{v:.4f}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="replicates per (design, estimator) in all")
    parser.add_argument("--minutes", type=float, default=math.inf, help="start no batch after this many minutes")
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=list(DESIGNS))
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS))
    parser.add_argument("--no-r", action="store_true", help="skip R survey::svyglm's reference fits")
    parser.add_argument("--table", action="store_true", help="only print the table of what the shards hold")
    args = parser.parse_args()
    if not args.table:
        run(args.designs, args.estimators, args.reps, args.minutes, not args.no_r)
    print_table()


if __name__ == "__main__":
    main()
