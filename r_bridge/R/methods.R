#' Methods for differentially private fits
#'
#' A \code{dpstats_fit} is the release of \code{\link{dp_ols}}, \code{\link{dp_quantreg}} or
#' \code{\link{dp_glm}} (a \code{dpstats_glm}, whose summary adds the average marginal effects):
#' coefficients, their covariance (\code{NaN} where the mechanism releases no valid DP
#' standard error), the released noisy statistics and the privacy spent. Its methods are
#' post-processing and need neither Python nor the data, so a fit read back with
#' \code{readRDS} works in a session without Python.
#'
#' Coefficients are named and ordered as \code{lm} names and orders them. Every test and
#' interval of a fit comes from one law: the bootstrap law of the release's replicates where
#' it carries them (intervals widened to the estimate where they leave it out, p-values that
#' invert them), the normal approximation from \code{vcov()} otherwise; z and p are
#' \code{NaN} where a standard error is not finite.
#'
#' A fit whose estimate keeps a bias (the perturbed histogram's binning, NoisyStats' repair of a
#' noisy Gram matrix, KNG's domain boundary, Theil-Sen's estimand) carries a bound on it per
#' coefficient, \code{fit$bias} (in the estimate's units: 0 where the mechanism keeps no bias,
#' \code{Inf} where nothing bounds it), and \code{fit$bias_source} names it. A finite bound is
#' inside the intervals, as Armstrong and Kolesár (2020) carry a bias bound B: \code{confint()}
#' widens each interval on both sides by \eqn{(cv_\alpha(B/se) - z_{1-\alpha/2}) se}, where
#' \eqn{cv_\alpha(t)} is the \eqn{1 - \alpha} quantile of \eqn{|N(t, 1)|}, so that it covers for
#' every bias within the bound, and the p-values invert the widened intervals; an infinite bound
#' leaves the interval as the mechanism gives it. The status, \code{fit$status} (the Python
#' package's), is "failed", "biased" where some coefficient's bound exceeds its standard error (the
#' bias can then be the larger part of the error; an infinite bound, or a positive one without a
#' standard error, counts) or "ok". The summary shows the status and the bounds, \code{tidy()} the
#' bound per term (column \code{bias}), \code{glance()} the status, the largest bound in standard
#' errors (\code{bias}: 0 without a bias, \code{Inf} where it is unbounded) and
#' \code{bias.source}. \code{predict()} needs
#' \code{newdata}; \code{residuals()} and \code{fitted()} stop, because they would need the
#' private data, which the fit does not keep. \code{tidy()} and \code{glance()} are
#' registered for broom's generics.
#'
#' A weighted fit (\code{weights =}, \code{cluster =}, \code{strata =}) keeps the R names of its design's
#' columns in \code{fit$survey}; its summary has a "Weights" line ("wt; PSUs: psu within strata st"),
#' \code{glance()} columns \code{weights}, \code{cluster} and \code{strata}, and \code{\link{dpstats_table}}
#' "Weights" and "PSUs" rows.
#'
#' @param x,object a \code{dpstats_fit} (or its summary).
#' @param digits significant digits to print.
#' @param level confidence level of the normal intervals.
#' @param parm coefficients to give intervals for (names or indices).
#' @param newdata a data frame of public values of the regressors.
#' @param ... unused.
#' @name dpstats_fit
NULL

# The methods of a dpstats_fit. All of them are post-processing of the release:
# they use the stored public values only and never need Python or the data.

.describe_privacy <- function(p) {
  switch(p$notion,
    pure = sprintf("eps = %s (pure DP)", sprintf("%g", p$eps)),
    approx = sprintf("eps = %s, delta = %s (approximate DP)", sprintf("%g", p$eps), sprintf("%g", p$delta)),
    zcdp = sprintf("rho = %s (zCDP; implies eps = %s, delta = %s)", sprintf("%g", p$rho), sprintf("%g", p$eps),
                   sprintf("%g", p$delta)),
    sprintf("eps = %s (%s)", sprintf("%g", p$eps), p$notion)
  )
}

.estimator_title <- function(x) {
  switch(.scalar(x$estimator, "ols"), quantreg = "DP quantile regression", logit = "DP logistic regression",
         probit = "DP probit regression", "DP linear regression")
}

.summary_titles <- c(ols = "DP OLS Regression Results", quantreg = "DP Quantile Regression Results",
                     logit = "DP Logit Regression Results", probit = "DP Probit Regression Results")

#' @rdname dpstats_fit
#' @export
print.dpstats_fit <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat(.estimator_title(x), " (dpstats): ", x$method_title, "\n", sep = "")
  cat("Call:  ", paste(deparse(x$call, width.cutoff = 500L), collapse = "\n"), "\n", sep = "")
  cat("Privacy: ", .describe_privacy(x$privacy), "; n = ", x$nobs, " (public)", sep = "")
  if (!is.null(x$tau)) cat("; tau = ", paste(format(x$tau), collapse = ", "), sep = "")
  cat("\n")
  if (!is.null(x$survey)) cat("Weights: ", .survey_text(x$survey), "\n", sep = "")
  cat("\n")
  if (x$failed) {
    cat("The mechanism failed (the privacy budget was still spent): ", x$reason, "\n", sep = "")
  } else {
    cat("Coefficients:\n")
    print.default(format(x$coefficients, digits = digits), print.gap = 2L, quote = FALSE)
  }
  cat("\n")
  invisible(x)
}

#' @rdname dpstats_fit
#' @export
coef.dpstats_fit <- function(object, ...) object$coefficients

#' @rdname dpstats_fit
#' @export
vcov.dpstats_fit <- function(object, ...) object$vcov

#' @rdname dpstats_fit
#' @export
nobs.dpstats_fit <- function(object, ...) object$nobs

#' @rdname dpstats_fit
#' @export
formula.dpstats_fit <- function(x, ...) x$formula

# Intervals as the Python side computes them (dpstats/uncertainty/intervals.py): bootstrap
# intervals from the release's replicates where it has them, of the release's
# kind: "basic" (2 coef minus the replicates' quantiles) or "percentile" (the
# quantiles), numpy's default quantile being R's type 7, widened to the estimate
# where they leave it out, infinite if fewer than 20 replicates are finite; normal
# (z) intervals from vcov() otherwise, as confint.default: NaN where the mechanism
# reports no standard error, infinite where the release they need failed.
# A finite bias bound is inside the intervals (dpstats/uncertainty/bias.py): each is widened on both sides by
# (cv_alpha(B / se) - z_{1 - alpha/2}) se.
#' @rdname dpstats_fit
#' @export
confint.dpstats_fit <- function(object, parm, level = 0.95, ...) {
  ci <- .release_confint(object, parm, level)
  terms <- rownames(ci)
  .widened(ci, .standard_errors(object)[terms], .bias_of(object)[terms], 1 - level)
}

.release_confint <- function(object, parm, level) {
  cf <- coef(object)
  pnames <- names(cf)
  if (missing(parm)) parm <- pnames else if (is.numeric(parm)) parm <- pnames[parm]
  a <- (1 - level) / 2
  a <- c(a, 1 - a)
  pct <- paste(format(100 * a, trim = TRUE, scientific = FALSE, digits = 3), "%")
  ci <- array(NA_real_, dim = c(length(parm), 2L), dimnames = list(parm, pct))
  reps <- object$replicates
  if (is.null(reps)) {
    se <- sqrt(diag(vcov(object)))[parm]
    ci[] <- cf[parm] + se %o% qnorm(a)
    return(ci)
  }
  reps <- reps[stats::complete.cases(reps) & apply(is.finite(reps), 1L, all), , drop = FALSE]
  if (nrow(reps) < 20L) {
    ci[, 1L] <- ifelse(is.nan(cf[parm]), NaN, -Inf)
    ci[, 2L] <- ifelse(is.nan(cf[parm]), NaN, Inf)
    return(ci)
  }
  for (term in parm) {
    q <- stats::quantile(reps[, term], probs = a, type = 7, names = FALSE)
    ends <- if (identical(object$interval, "percentile")) q else 2 * cf[[term]] - rev(q)
    ci[term, ] <- c(min(ends[[1L]], cf[[term]]), max(ends[[2L]], cf[[term]]))
  }
  ci
}

# --- bias bounds (dpstats/uncertainty/bias.py) ---------------------------------

# The fit's bias bounds, named as coef(): 0 where it keeps no bias, Inf where nothing bounds the bias it
# names. A fit saved before the bounds (fit$bias the bias in words) reads as unbounded where it names one.
.bias_of <- function(x) {
  k <- length(x$coefficients)
  b <- x$bias
  if (is.null(b) || is.character(b)) b <- rep(if (is.null(b) || all(is.na(b))) 0 else Inf, k)
  setNames(as.numeric(b), names(x$coefficients))
}

# The bias in words, NA where the fit keeps none.
.bias_source_of <- function(x) {
  s <- x$bias_source
  if (is.null(s) && is.character(x$bias)) s <- x$bias
  if (is.null(s) || !length(s)) NA_character_ else as.character(s[[1L]])
}

# The square roots of the covariance's diagonal (NaN where negative), named as coef().
.standard_errors <- function(x) {
  setNames(suppressWarnings(sqrt(diag(x$vcov))), names(x$coefficients))
}

# The largest bias bound in standard errors (0 without a bias; Inf where a bias is unbounded or a bounded
# one has no finite standard error), as the Python package's res.bias_ratio.
.bias_ratio <- function(x) {
  b <- .bias_of(x)
  se <- .standard_errors(x)
  measured <- is.finite(se) & se > 0
  ratio <- ifelse(!is.na(b) & b > 0, b / ifelse(measured, se, 0), 0)
  max(c(0, ratio))
}

# cv_alpha(t): the 1 - alpha quantile of |N(t, 1)| (Armstrong and Kolesár 2020), elementwise; Inf where t is
# not finite. The Python package's critical_value, solved on the same bracket.
.bias_cv <- function(t, alpha) {
  z <- stats::qnorm(1 - alpha / 2)
  vapply(abs(as.numeric(t)), function(s) {
    if (!is.finite(s)) return(Inf)
    gap <- function(c) stats::pnorm(c - s) - stats::pnorm(-c - s) - (1 - alpha)
    stats::uniroot(gap, c(z - 1e-12, s + z + 1), tol = 1e-13, maxiter = 1000L)$root
  }, numeric(1))
}

# The intervals (a two-column matrix) widened on each side by (cv_alpha(B / se) - z) se; unchanged where the
# bound is 0 or infinite, or the standard error is not finite and positive.
.widened <- function(ci, se, bound, alpha) {
  usable <- is.finite(bound) & bound > 0 & is.finite(se) & se > 0
  if (any(usable)) {
    extra <- (.bias_cv(bound[usable] / se[usable], alpha) - stats::qnorm(1 - alpha / 2)) * se[usable]
    ci[usable, 1L] <- ci[usable, 1L] - extra
    ci[usable, 2L] <- ci[usable, 2L] + extra
  }
  ci
}

# Two-sided p-values that invert the widened intervals: p is read as |z| = z_{1 - p/2} and becomes
# P(|N(t, 1)| > |z|) with t = B / se, the largest the bias allows.
.widened_pvalues <- function(p, se, bound) {
  usable <- is.finite(bound) & bound > 0 & is.finite(se) & se > 0 & is.finite(p)
  if (any(usable)) {
    z <- stats::qnorm(p[usable] / 2, lower.tail = FALSE)
    t <- bound[usable] / se[usable]
    p[usable] <- pmin(stats::pnorm(z - t, lower.tail = FALSE) + stats::pnorm(z + t, lower.tail = FALSE), 1)
  }
  p
}

# The finite replicates, or NULL where there are none or fewer than 20.
.finite_replicates <- function(object) {
  reps <- object$replicates
  if (is.null(reps)) return(NULL)
  reps <- reps[apply(is.finite(reps), 1L, all), , drop = FALSE]
  if (nrow(reps) < 20L) NULL else reps
}

# Where R's type-7 quantile function Q of the sorted values v crosses x: "left", the u
# below which Q < x; "right", the u above which Q > x (as the Python side's _quantile_level).
.quantile_level <- function(v, x, side) {
  k <- if (identical(side, "left")) sum(v < x) else sum(v <= x)
  if (k == 0L || k == length(v)) return(as.numeric(k > 0L))
  (k - 1 + (x - v[[k]]) / (v[[k + 1L]] - v[[k]])) / (length(v) - 1)
}

# p-values that invert confint(): p < alpha exactly when 0 is outside the 1 - alpha interval
# (dpstats/uncertainty/intervals.py, bootstrap_pvalues).
.bootstrap_pvalues <- function(cf, reps, kind) {
  vapply(seq_along(cf), function(j) {
    theta <- cf[[j]]
    if (!is.finite(theta)) return(NaN)
    if (theta == 0) return(1)
    v <- sort(reps[, j])
    percentile <- identical(kind, "percentile")
    point <- if (percentile) 0 else 2 * theta
    tail <- if ((theta > 0) == percentile) .quantile_level(v, point, "right") else 1 - .quantile_level(v, point, "left")
    min(1, 2 * tail)
  }, numeric(1))
}

.private_data_error <- function(what) {
  stop(what, "() would need the private data: a differentially private fit keeps only its release ",
       "(coefficients, noisy statistics, privacy spent), never the rows it was fitted on. ",
       "Use predict(fit, newdata) on public data instead.", call. = FALSE)
}

#' @rdname dpstats_fit
#' @export
residuals.dpstats_fit <- function(object, ...) .private_data_error("residuals")

#' @rdname dpstats_fit
#' @export
fitted.dpstats_fit <- function(object, ...) .private_data_error("fitted")

# Design matrix of the fit's right-hand side on public data, with the declared
# levels and treatment contrasts (as the Python side used).
.public_model_matrix <- function(object, newdata) {
  nd <- as.data.frame(newdata, optional = TRUE, stringsAsFactors = FALSE)
  for (v in object$bare_logical) if (v %in% names(nd)) nd[[v]] <- factor(as.character(nd[[v]]), levels = c("FALSE", "TRUE"))
  for (v in object$bare_categorical) {
    if (v %in% names(nd)) nd[[v]] <- factor(as.character(nd[[v]]), levels = as.character(object$levels[[v]]))
  }
  tt <- delete.response(terms(object$formula))
  environment(tt) <- list2env(object$constants, parent = baseenv())
  xlev <- object$xlevels[setdiff(names(object$xlevels), c(object$bare_logical, object$bare_categorical))]
  mf <- model.frame(tt, nd, na.action = na.pass, xlev = if (length(xlev)) xlev else NULL)
  factors <- names(mf)[vapply(mf, is.factor, NA)]
  contrasts <- if (length(factors)) setNames(rep(list("contr.treatment"), length(factors)), factors) else NULL
  model.matrix(tt, mf, contrasts.arg = contrasts)
}

#' @rdname dpstats_fit
#' @export
predict.dpstats_fit <- function(object, newdata, ...) {
  if (missing(newdata) || is.null(newdata)) {
    stop("predict() needs newdata: predictions at the rows the model was fitted on would need the ",
         "private data, which a differentially private fit does not keep", call. = FALSE)
  }
  if (object$failed) stop("the mechanism failed, so the fit has no coefficients to predict with", call. = FALSE)
  X <- .public_model_matrix(object, newdata)
  cf <- coef(object)
  if (!setequal(colnames(X), names(cf))) {
    stop("newdata does not produce the fitted model's design columns (", paste(names(cf), collapse = ", "),
         "); got ", paste(colnames(X), collapse = ", "), call. = FALSE)
  }
  out <- drop(X[, names(cf), drop = FALSE] %*% cf)
  names(out) <- rownames(X)
  out
}

# --- summary -----------------------------------------------------------------

#' @rdname dpstats_fit
#' @export
summary.dpstats_fit <- function(object, level = 0.95, ...) {
  cf <- coef(object)
  se <- sqrt(diag(vcov(object)))
  z <- ifelse(is.finite(se), cf / se, NaN)
  boot <- !is.null(object$replicates)
  reps <- .finite_replicates(object)
  p <- if (!boot) 2 * pnorm(-abs(z)) else if (is.null(reps)) rep(NaN, length(cf)) else .bootstrap_pvalues(cf, reps, object$interval)
  p <- .widened_pvalues(p, se, .bias_of(object))  # they invert confint()'s widened intervals
  p <- ifelse(is.finite(se), p, NaN)
  table <- cbind(Estimate = cf, `Std. Error` = se, `z value` = z, p)
  colnames(table)[4L] <- if (boot) "Pr(boot)" else "Pr(>|z|)"
  out <- object[c("call", "formula", "estimator", "tau", "response", "nobs", "method", "method_title",
                  "method_reason", "citation", "failed", "reason", "se_note", "plan_note", "privacy", "bounds",
                  "levels", "noisy_stats", "hyperparameters", "link", "survey")]
  out$bias <- .bias_of(object)
  out$bias_source <- .bias_source_of(object)
  out$bias_ratio <- .bias_ratio(object)
  out$status <- .status(object)
  out$coefficients <- table
  if (!is.null(object$margins)) {
    me <- dp_margeff(object, level = level)
    out$margins <- cbind(`dy/dx` = me$AME, `Std. Error` = me$SE, `z value` = me$z, `Pr(>|z|)` = me$p)
    rownames(out$margins) <- me$factor
  }
  out$inference <- if (boot) sprintf("bootstrap (%s)", object$interval) else "normal"
  out$conf.int <- confint(object, level = level)
  out$level <- level
  class(out) <- "summary.dpstats_fit"
  out
}

# The status line of a fit that did not fail, as the Python package's summary writes it (_status_text in
# dpstats/results/regression.py): "ok", or the status with the bias bound in standard errors and whether the
# intervals hold it.
.status_text <- function(x) {
  source <- .scalar(x$bias_source, NA_character_)
  if (is.na(source)) return("ok")
  ratio <- x$bias_ratio
  if (!is.finite(ratio) && any(is.infinite(x$bias))) return(paste("biased: the interval does not cover", source))
  carried <- if (is.finite(ratio)) "the intervals carry the bound" else "no interval carries it"
  size <- if (is.finite(ratio)) sprintf("up to %.2g standard errors", ratio) else "of unknown size next to the noise"
  sprintf("%s: bias %s (%s; bias bounds below): %s", x$status, size, carried, source)
}

.stat_text <- function(v) {
  if (length(v) > 16L) {
    return(if (is.matrix(v)) sprintf("%dx%d matrix (see fit$noisy_stats)", nrow(v), ncol(v)) else "see fit$noisy_stats")
  }
  f <- function(x) ifelse(is.finite(x), formatC(x, digits = 4, format = "g"), "NaN")
  if (is.matrix(v)) return(paste(apply(v, 1L, function(r) paste(trimws(f(r)), collapse = ", ")), collapse = "; "))
  paste(trimws(f(v)), collapse = ", ")
}

.field <- function(label, value, width = 17L) {
  cat(formatC(paste0(label, ":"), width = -width), value, "\n", sep = "")
}

# One variable's declared levels in words; a survey's PSUs declared as pairs as "(75, 1), (75, 2), ...".
.format_levels <- function(l) {
  paste(if (is.list(l)) sprintf("(%s)", vapply(l, paste, "", collapse = ", ")) else l, collapse = ", ")
}

#' @rdname dpstats_fit
#' @export
print.summary.dpstats_fit <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  title <- unname(.summary_titles[.scalar(x$estimator, "ols")])
  if (is.na(title)) title <- .summary_titles[["ols"]]
  cat(title, " (dpstats)\n\nCall:\n", paste(deparse(x$call, width.cutoff = 500L), collapse = "\n"), "\n\n", sep = "")
  method <- x$method_title
  if (!is.na(x$method_reason)) method <- paste0(method, " [auto: ", x$method_reason, "]")
  .field("Dep. variable", x$response)
  if (!is.null(x$tau)) .field("Quantile (tau)", paste(format(x$tau), collapse = ", "))
  if (!is.null(x$link)) .field("Family", paste0("binomial (link = ", x$link, ")"))
  .field("Method", method)
  .field("Reference", x$citation)
  .field("Observations", paste0(x$nobs, " (public)"))
  if (!is.null(x$survey)) .field("Weights", .survey_text(x$survey))
  status <- if (x$failed) paste("FAILED:", x$reason) else .status_text(x)
  if (!is.null(x$plan_note) && !is.na(x$plan_note)) {
    status <- paste0(status, " (fitted although the plan advised against it: ", x$plan_note, ")")
  }
  .field("Status", status)
  cat("\n")
  .field("Privacy", .describe_privacy(x$privacy))
  .field("Guarantee", if (identical(x$privacy$proven, FALSE)) {
    "NOT proven: it rests on a sampler whose law is not exact (see the caveats)"
  } else {
    "proven (the mechanism's proof holds for the sampler as implemented)"
  })
  .field("Neighbours", x$privacy$neighbours)
  split <- x$privacy$split
  if (length(split)) .field("Budget split", paste(sprintf("%s: %s", names(split), formatC(split, digits = 4, format = "g")), collapse = ", "))
  b <- x$bounds
  .field("Declared bounds", if (length(b)) paste(sprintf("%s in [%s, %s]", names(b), vapply(b, function(v) format(v[[1]]), ""),
                                                          vapply(b, function(v) format(v[[2]]), "")), collapse = ", ") else "none")
  if (length(x$levels)) {
    .field("Declared levels", paste(sprintf("%s: %s", names(x$levels), vapply(x$levels, .format_levels, "")),
                                    collapse = "; "))
  }
  for (cv in x$privacy$caveats) .field("Caveat", cv)
  tuning <- x$hyperparameters[setdiff(names(x$hyperparameters), .survey_args)]  # the design has its own line
  if (length(tuning)) {
    .field("Hyperparameters", paste(sprintf("%s=%s", names(tuning),
                                            vapply(tuning, function(h) paste(format(unlist(h)), collapse = ","), "")),
                                    collapse = ", "))
  }
  cat("\nCoefficients (", if (identical(x$inference, "normal")) "normal approximation" else
      paste0(x$inference, " law of the release's replicates"), "):\n", sep = "")
  if (x$failed) {
    cat("  none: the mechanism failed\n")
  } else {
    printCoefmat(x$coefficients, digits = digits, na.print = "NaN", has.Pvalue = TRUE, P.values = TRUE,
                 signif.stars = FALSE)
    if (!is.na(.scalar(x$bias_source, NA_character_))) {
      cat("\nBias bounds (|bias| <=; the intervals and p-values carry the finite ones):\n")
      print.default(format(x$bias, digits = digits), print.gap = 2L, quote = FALSE)
    }
  }
  if (!is.null(x$margins) && !x$failed) {
    cat("\nAverage marginal effects (dy/dx over the rows; dp_margeff(fit)):\n")
    printCoefmat(x$margins, digits = digits, na.print = "NaN", has.Pvalue = TRUE, P.values = TRUE,
                 signif.stars = FALSE)
  }
  if (length(x$noisy_stats)) {
    cat("\nReleased noisy statistics:\n")
    for (nm in names(x$noisy_stats)) .field(paste0("  ", nm), .stat_text(x$noisy_stats[[nm]]), width = 19L)
  }
  cat("\nNotes:\n")
  notes <- c(if (x$failed) paste("The mechanism failed; the privacy budget was still spent.", x$reason),
             x$se_note, "Data were clipped to the declared bounds; estimates are in the data's units.")
  for (n in notes[!is.na(notes)]) cat(paste(strwrap(n, width = 0.9 * getOption("width"), initial = "[*] ", exdent = 4), collapse = "\n"), "\n", sep = "")
  invisible(x)
}

#' Joint test of coefficients from a differentially private fit
#'
#' The Wald F test that the named coefficients are all zero, from the release
#' alone (no privacy budget): \eqn{F = W / q} with
#' \eqn{W = b' V^{-1} b} for the q coefficients b and their block V of
#' \code{vcov(fit)}, which covers sampling error and privacy noise. Where the
#' fit carries bootstrap replicates the p-value is the share of replicates
#' whose departure from the estimate gives a statistic at least W (the law of
#' W under the null, as the Python package's \code{res.f_test}); otherwise it
#' is \eqn{\chi^2_q}.
#'
#' @param fit a \code{dpstats_fit}.
#' @param terms the names of the coefficients tested (all zero under the null).
#' @return a list with \code{statistic} (F), \code{df}, \code{p.value} and \code{reference}.
#' @examples
#' \dontrun{
#' fit <- dp_ols(mpg ~ wt + factor(cyl), data = mtcars, eps = 5,
#'               bounds = list(mpg = c(10, 35), wt = c(1, 6)), levels = list(cyl = c(4, 6, 8)))
#' dp_f_test(fit, c("factor(cyl)6", "factor(cyl)8"))
#' }
#' @export
dp_f_test <- function(fit, terms) {
  if (!inherits(fit, "dpstats_fit")) stop("fit must be a dpstats_fit", call. = FALSE)
  unknown <- setdiff(terms, names(coef(fit)))
  if (length(terms) == 0L || length(unknown)) {
    stop("unknown term(s): ", paste(unknown, collapse = ", "), "; the terms are ",
         paste(names(coef(fit)), collapse = ", "), call. = FALSE)
  }
  b <- coef(fit)[terms]
  V <- vcov(fit)[terms, terms, drop = FALSE]
  q <- length(terms)
  if (anyNA(V) || anyNA(b)) return(list(statistic = NaN, df = q, p.value = NaN, reference = "none"))
  if (any(is.infinite(V))) return(list(statistic = 0, df = q, p.value = 1, reference = "none"))
  middle <- .pinv(V)
  w <- drop(t(b) %*% middle %*% b)
  reps <- fit$replicates
  if (is.null(reps)) return(list(statistic = w / q, df = q, p.value = stats::pchisq(w, q, lower.tail = FALSE),
                                 reference = "chi2"))
  reps <- reps[apply(is.finite(reps), 1L, all), , drop = FALSE]
  if (nrow(reps) < 20L) return(list(statistic = w / q, df = q, p.value = 1, reference = "none"))
  dep <- sweep(reps[, terms, drop = FALSE], 2L, b)
  null <- rowSums((dep %*% middle) * dep)
  list(statistic = w / q, df = q, p.value = (1 + sum(null >= w)) / (length(null) + 1), reference = "bootstrap")
}

# The Moore-Penrose inverse of a symmetric matrix (as numpy's pinv).
.pinv <- function(V) {
  e <- eigen((V + t(V)) / 2, symmetric = TRUE)
  keep <- e$values > max(abs(e$values)) * 1e-15 * nrow(V)
  e$vectors[, keep, drop = FALSE] %*% (t(e$vectors[, keep, drop = FALSE]) / e$values[keep])
}
