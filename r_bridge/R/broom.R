# broom-style frames. Registered for generics::tidy and generics::glance (the
# generics broom re-exports) through delayed S3 registration (roxygen's @exportS3Method), so
# broom::tidy(fit) works whenever broom is installed, and nothing is loaded
# otherwise.

# "failed", "biased" or "ok": the Python package's status (dpstats/uncertainty/bias.py, **Status**: "biased"
# where some coefficient's bias bound exceeds its standard error), stored with the fit. A fit saved before
# the Python side decided it is "biased" where it names a bias, as it was then.
.status <- function(x) {
  if (isTRUE(x$failed)) return("failed")
  s <- x$status
  if (!is.null(s) && length(s) == 1L && !is.na(s)) return(as.character(s))
  if (!is.na(.bias_source_of(x))) "biased" else "ok"
}

.frame <- function(df) {
  if (requireNamespace("tibble", quietly = TRUE)) tibble::as_tibble(df) else df
}

#' @rdname dpstats_fit
#' @param conf.int add \code{conf.low} and \code{conf.high} columns.
#' @param conf.level confidence level of the intervals.
#' @exportS3Method generics::tidy
tidy.dpstats_fit <- function(x, conf.int = FALSE, conf.level = 0.95, ...) {
  s <- summary(x, level = conf.level)
  cf <- s$coefficients
  out <- data.frame(
    term = rownames(cf),
    estimate = unname(cf[, "Estimate"]),
    std.error = unname(cf[, "Std. Error"]),
    statistic = unname(cf[, "z value"]),
    p.value = unname(cf[, 4L]),
    stringsAsFactors = FALSE
  )
  if (conf.int) {
    out$conf.low <- unname(s$conf.int[, 1L])
    out$conf.high <- unname(s$conf.int[, 2L])
  }
  out$bias <- unname(.bias_of(x))  # the bound, inside the interval where finite
  out$status <- rep(.status(x), nrow(out))
  .frame(out)
}

#' @rdname dpstats_fit
#' @exportS3Method generics::glance
glance.dpstats_fit <- function(x, ...) {
  p <- x$privacy
  out <- data.frame(
    nobs = x$nobs,
    df.model = length(x$coefficients),
    method = x$method,
    notion = p$notion,
    eps = p$eps,
    delta = p$delta,
    rho = p$rho,
    proven = !identical(p$proven, FALSE),
    neighbours = if (is.null(p$neighbours)) NA_character_ else p$neighbours,
    failed = x$failed,
    status = .status(x),
    bias = .bias_ratio(x),
    bias.source = .bias_source_of(x),
    inference = if (is.null(x$replicates)) "normal" else sprintf("bootstrap (%s)", x$interval),
    weights = .scalar(x$survey$weights, NA_character_),
    cluster = .scalar(x$survey$cluster, NA_character_),
    strata = .scalar(x$survey$strata, NA_character_),
    stringsAsFactors = FALSE
  )
  if (!is.null(x$tau) && length(x$tau) == 1L) out$tau <- x$tau
  if (!is.null(x$link)) out$link <- x$link
  .frame(out)
}
