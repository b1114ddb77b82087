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
#' \code{NaN} where a standard error is not finite. A fit whose estimate keeps a bias its
#' interval does not cover (the perturbed histogram's binning, KNG's domain boundary) has
#' status "biased" (\code{fit$bias} names it; the summary, \code{tidy()} and \code{glance()}
#' show it). \code{predict()} needs
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
#' @rdname dpstats_fit
#' @export
confint.dpstats_fit <- function(object, parm, level = 0.95, ...) {
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
  p <- ifelse(is.finite(se), p, NaN)
  table <- cbind(Estimate = cf, `Std. Error` = se, `z value` = z, p)
  colnames(table)[4L] <- if (boot) "Pr(boot)" else "Pr(>|z|)"
  out <- object[c("call", "formula", "estimator", "tau", "response", "nobs", "method", "method_title",
                  "method_reason", "citation", "failed", "reason", "se_note", "plan_note", "bias", "privacy", "bounds",
                  "levels", "noisy_stats", "hyperparameters", "link", "survey")]
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
  status <- if (x$failed) paste("FAILED:", x$reason) else "ok"
  if (!x$failed && !is.null(x$bias) && !is.na(x$bias)) status <- paste("biased: the interval does not cover", x$bias)
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
