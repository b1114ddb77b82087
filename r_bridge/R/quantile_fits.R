# Several quantiles from one dp_quantreg call: one dpstats_fit per quantile.

#' Several quantiles from one differentially private call
#'
#' \code{dp_quantreg(..., tau = c(0.25, 0.5, 0.75))} returns a \code{dpstats_quantile_fits}:
#' one \code{\link{dpstats_fit}} per quantile in \code{$fits} (named as \code{quantreg}
#' names its columns, \code{"tau= 0.25"}), each with an equal part of eps, and the privacy of
#' the whole call in \code{$privacy} (the parts add up to eps, by basic composition). Its
#' methods are post-processing of the releases, need neither Python nor the data, and follow
#' \code{quantreg}'s \code{rqs} objects: \code{coef()} is a matrix with one column per quantile,
#' \code{predict()} one column per quantile, \code{confint()} an array (term, bound,
#' quantile), \code{vcov()} a list of matrices; \code{tidy()} and \code{glance()} stack the
#' fits' frames with a column \code{tau}.
#'
#' @param x,object a \code{dpstats_quantile_fits} (or its summary).
#' @param digits significant digits to print.
#' @param level,conf.level confidence level of the intervals.
#' @param parm coefficients to give intervals for (names or indices).
#' @param newdata a data frame of public values of the regressors.
#' @param conf.int add \code{conf.low} and \code{conf.high} columns.
#' @param ... passed to the single fits' methods.
#' @name dpstats_quantile_fits
NULL

.tau_names <- function(tau) paste("tau=", format(round(tau, 3)))

.new_quantile_fits <- function(res, tr, call, formula, bounds, levels) {
  tau <- .num(res$quantiles)
  fits <- lapply(seq_along(tau), function(i) {
    .new_fit(res$fits[[i]], tr, call, formula, bounds, levels, "quantreg", list(tau[[i]]))
  })
  names(fits) <- .tau_names(tau)
  privacy <- res$privacy
  environment(formula) <- baseenv()  # never keep a caller's frame (it may hold the data)
  out <- list(
    fits = fits,
    tau = tau,
    call = call,
    formula = formula,
    nobs = fits[[1L]]$nobs,
    method = fits[[1L]]$method,
    privacy = list(
      notion = privacy$notion,
      eps = as.numeric(privacy$eps),
      delta = as.numeric(.scalar(privacy$delta, 0)),
      rho = as.numeric(.scalar(privacy$rho, NA_real_)),
      split = if (length(privacy$split)) unlist(lapply(privacy$split, as.numeric)) else numeric(),
      neighbours = .scalar(privacy$neighbours, NA_character_),
      caveats = .chr(privacy$caveats),
      proven = !identical(privacy$proven, FALSE)
    )
  )
  class(out) <- "dpstats_quantile_fits"
  out
}

.split_text <- function(split) {
  paste(sprintf("%s: %s", names(split), formatC(split, digits = 4, format = "g")), collapse = ", ")
}

#' @rdname dpstats_quantile_fits
#' @export
print.dpstats_quantile_fits <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat("DP quantile regression (dpstats): ", x$fits[[1L]]$method_title, "\n", sep = "")
  cat("Call:  ", paste(deparse(x$call, width.cutoff = 500L), collapse = "\n"), "\n", sep = "")
  cat("Privacy: ", .describe_privacy(x$privacy), " in total; n = ", x$nobs, " (public)\n", sep = "")
  if (length(x$privacy$split)) cat("Budget split: ", .split_text(x$privacy$split), "\n", sep = "")
  failed <- vapply(x$fits, function(f) f$failed, NA)
  if (any(failed)) cat("Failed (the budget was still spent): ", paste(names(x$fits)[failed], collapse = ", "), "\n", sep = "")
  cat("\nCoefficients:\n")
  print.default(format(coef(x), digits = digits), print.gap = 2L, quote = FALSE)
  cat("\n")
  invisible(x)
}

#' @rdname dpstats_quantile_fits
#' @export
coef.dpstats_quantile_fits <- function(object, ...) {
  out <- do.call(cbind, lapply(object$fits, coef))
  colnames(out) <- names(object$fits)
  out
}

#' @rdname dpstats_quantile_fits
#' @export
vcov.dpstats_quantile_fits <- function(object, ...) lapply(object$fits, vcov)

#' @rdname dpstats_quantile_fits
#' @export
nobs.dpstats_quantile_fits <- function(object, ...) object$nobs

#' @rdname dpstats_quantile_fits
#' @export
formula.dpstats_quantile_fits <- function(x, ...) x$formula

#' @rdname dpstats_quantile_fits
#' @export
confint.dpstats_quantile_fits <- function(object, parm, level = 0.95, ...) {
  all_terms <- missing(parm)
  cis <- lapply(object$fits, function(f) if (all_terms) confint(f, level = level) else confint(f, parm, level))
  out <- array(unlist(cis), dim = c(dim(cis[[1L]]), length(cis)),
               dimnames = c(dimnames(cis[[1L]]), list(names(object$fits))))
  out
}

#' @rdname dpstats_quantile_fits
#' @export
predict.dpstats_quantile_fits <- function(object, newdata, ...) {
  if (missing(newdata) || is.null(newdata)) {
    stop("predict() needs newdata: predictions at the rows the model was fitted on would need the ",
         "private data, which a differentially private fit does not keep", call. = FALSE)
  }
  out <- do.call(cbind, lapply(object$fits, predict, newdata = newdata))
  colnames(out) <- names(object$fits)
  out
}

#' @rdname dpstats_quantile_fits
#' @export
residuals.dpstats_quantile_fits <- function(object, ...) .private_data_error("residuals")

#' @rdname dpstats_quantile_fits
#' @export
fitted.dpstats_quantile_fits <- function(object, ...) .private_data_error("fitted")

#' @rdname dpstats_quantile_fits
#' @export
summary.dpstats_quantile_fits <- function(object, level = 0.95, ...) {
  out <- list(call = object$call, privacy = object$privacy, nobs = object$nobs, tau = object$tau,
              summaries = lapply(object$fits, summary, level = level))
  class(out) <- "summary.dpstats_quantile_fits"
  out
}

#' @rdname dpstats_quantile_fits
#' @export
print.summary.dpstats_quantile_fits <- function(x, digits = max(3L, getOption("digits") - 3L), ...) {
  cat(length(x$tau), " quantiles, ", .describe_privacy(x$privacy), " in total; n = ", x$nobs, " (public)\n", sep = "")
  if (length(x$privacy$split)) cat("Budget split: ", .split_text(x$privacy$split), "\n", sep = "")
  for (s in x$summaries) {
    cat("\n")
    print(s, digits = digits, ...)
  }
  invisible(x)
}

#' @rdname dpstats_quantile_fits
#' @exportS3Method generics::tidy
tidy.dpstats_quantile_fits <- function(x, conf.int = FALSE, conf.level = 0.95, ...) {
  frames <- lapply(seq_along(x$fits), function(i) {
    f <- as.data.frame(tidy.dpstats_fit(x$fits[[i]], conf.int = conf.int, conf.level = conf.level))
    f$tau <- x$tau[[i]]
    f
  })
  out <- do.call(rbind, frames)
  rownames(out) <- NULL
  .frame(out)
}

#' @rdname dpstats_quantile_fits
#' @exportS3Method generics::glance
glance.dpstats_quantile_fits <- function(x, ...) {
  out <- do.call(rbind, lapply(x$fits, function(f) as.data.frame(glance.dpstats_fit(f))))
  rownames(out) <- NULL
  .frame(out)
}
