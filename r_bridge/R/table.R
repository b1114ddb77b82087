# dpstats_table(): several fits side by side. The layout is the Python package's
# dpstats.table (one source of truth): the fits' released values go to Python
# as plain lists and the rendered table comes back as a string.

# The fits of `fits` in order, with their labels: a fit, several quantiles' fits
# (dp_quantreg with several tau), or a list of fits, of such objects and of lists of
# fits, optionally named (the names label the columns).
.flatten_fits <- function(fits) {
  if (inherits(fits, "dpstats_fit")) return(list(fits = list(fits), labels = NULL))
  if (inherits(fits, "dpstats_quantile_fits")) return(list(fits = unname(fits$fits), labels = NULL))
  if (!is.list(fits) || !length(fits)) stop("fits must be a dpstats_fit or a non-empty list of them", call. = FALSE)
  out <- list()
  labels <- character()
  given <- names(fits)
  for (i in seq_along(fits)) {
    f <- fits[[i]]
    inner <- if (inherits(f, "dpstats_fit")) {
      list(f)
    } else if (inherits(f, "dpstats_quantile_fits")) {
      unname(f$fits)
    } else if (is.list(f) && length(f) && all(vapply(f, inherits, NA, what = "dpstats_fit"))) {
      unname(f)
    } else {
      stop("element ", i, " of fits is not a dpstats_fit (nor a list of them)", call. = FALSE)
    }
    out <- c(out, inner)
    labels <- c(labels, rep(if (is.null(given)) "" else given[[i]], length(inner)))
  }
  list(fits = out, labels = if (is.null(given) || all(!nzchar(given))) NULL else labels)
}

.rows <- function(m) if (is.null(m)) NULL else lapply(seq_len(nrow(m)), function(i) as.list(unname(m[i, ])))

.na_null <- function(x) if (is.null(x) || length(x) != 1L || is.na(x)) NULL else x

# What the Python table reads of a fit: released values and public facts only.
.table_record <- function(fit) {
  p <- fit$privacy
  list(
    terms = as.list(names(coef(fit))),
    params = as.list(unname(coef(fit))),
    cov = .rows(vcov(fit)),
    replicates = .rows(fit$replicates),
    interval = fit$interval,
    nobs = fit$nobs,
    privacy = list(notion = p$notion, eps = p$eps, delta = p$delta, rho = .na_null(p$rho),
                   proven = !identical(p$proven, FALSE)),
    method = fit$method,
    estimator = fit$estimator,
    q = if (length(fit$tau) == 1L) fit$tau else NULL,
    y_name = fit$response,
    failed = isTRUE(fit$failed),
    reason = .na_null(fit$reason),
    bias = as.list(unname(.bias_of(fit))),  # per term; Inf reaches Python as inf (unbounded)
    bias_source = .na_null(.bias_source_of(fit)),
    hyperparameters = .survey_record(fit$survey)
  )
}

.as_named_list <- function(x, what) {
  if (is.null(x)) return(NULL)
  if (is.null(names(x)) || any(!nzchar(names(x)))) stop(what, " must be named, as in ", what, " = list(...)", call. = FALSE)
  as.list(x)
}

#' A regression table of several differentially private fits
#'
#' Lays the fits side by side as the Python package's \code{dpstats.table} does (the
#' layout has one source of truth): a column per fit, the estimate over its standard
#' error in parentheses (or its interval, \code{confint(fit)}, in brackets), optional
#' significance stars, categorical blocks collapsed into rows such as "Firm FE: yes",
#' and rows with the public facts of each fit: the estimator, the mechanism, N and the
#' privacy spent (eps; delta and rho where a fit has them). The notes say that the
#' standard errors cover sampling error and privacy noise. The fits' released values
#' are sent to Python; nothing else is.
#'
#' @param fits a \code{dpstats_fit}, or a list of them (named: the names label the
#'   columns); an element may itself be a list of fits, or several quantiles' fits from one \code{dp_quantreg} call.
#' @param format "latex" (a booktabs table: \code{\\usepackage{booktabs}}), "markdown", "html" or "text".
#' @param rename a named list or vector, term = label.
#' @param order terms (or their labels) to show first, in this order.
#' @param drop terms (or their labels) not to show.
#' @param collapse a named list, row label = block: a block is the prefix of its terms'
#'   names, such as \code{"factor(firm)"}, or a vector of several term names. The
#'   block's terms are not shown; the row says "yes" for the fits that have them.
#' @param below "se" (standard errors in parentheses), "ci" (intervals in brackets) or "none".
#' @param level the intervals' confidence level.
#' @param stars FALSE, TRUE (* p < 0.1, ** p < 0.05, *** p < 0.01) or p-value thresholds.
#' @param digits decimals of the estimates and their standard errors.
#' @param title,notes a title, and notes added after the table's own.
#' @return a character string of class \code{dpstats_table}: \code{print()} writes it,
#'   and in a knitr document it is written as is.
#' @examples
#' \dontrun{
#' data(uis, package = "quantreg")
#' b <- list(Y = c(0, 7.5), AGE = c(18, 60), BECK = c(0, 63), TREAT = c(0, 1))
#' f1 <- dp_ols(Y ~ TREAT + AGE + BECK, data = uis, eps = 1, bounds = b)
#' f2 <- dp_ols(Y ~ TREAT + AGE + BECK + factor(IV), data = uis, eps = 1, bounds = b,
#'              levels = list(IV = 1:3))
#' f3 <- dp_quantreg(Y ~ TREAT + AGE + BECK, data = uis, tau = 0.5, eps = 1, bounds = b)
#' dpstats_table(list(f1, f2, f3), format = "markdown",
#'               collapse = list("IV-use FE" = "factor(IV)"))
#' }
#' @export
dpstats_table <- function(fits, format = c("latex", "markdown", "html", "text"), rename = NULL, order = NULL,
                          drop = NULL, collapse = NULL, below = c("se", "ci", "none"), level = 0.95,
                          stars = FALSE, digits = 3L, title = "", notes = NULL) {
  format <- match.arg(format)
  below <- match.arg(below)
  flat <- .flatten_fits(fits)
  if (!is.numeric(level) || length(level) != 1L || !(level > 0 && level < 1)) {
    stop("level must be one number in (0, 1)", call. = FALSE)
  }
  options <- list(
    labels = if (is.null(flat$labels)) NULL else as.list(flat$labels),
    rename = .as_named_list(rename, "rename"),
    order = if (is.null(order)) NULL else as.list(as.character(order)),
    drop = if (is.null(drop)) NULL else as.list(as.character(drop)),
    collapse = .as_named_list(collapse, "collapse"),
    below = below,
    alpha = 1 - level,
    stars = if (is.logical(stars)) isTRUE(stars) else as.list(as.numeric(stars)),
    digits = as.integer(digits),
    title = as.character(title),
    notes = if (is.null(notes)) NULL else as.list(as.character(notes))
  )
  out <- .interop()$table_from_r(lapply(flat$fits, .table_record), format, options)
  if (!isTRUE(out$ok)) stop("dpstats: ", out$message, call. = FALSE)
  structure(out$text, class = "dpstats_table", format = format)
}

#' @rdname dpstats_table
#' @param x a \code{dpstats_table}.
#' @param ... unused.
#' @export
print.dpstats_table <- function(x, ...) {
  cat(unclass(x), "\n", sep = "")
  invisible(x)
}

# Written as is into a knitr document (registered when knitr is loaded).
#' @rdname dpstats_table
#' @exportS3Method knitr::knit_print
knit_print.dpstats_table <- function(x, ...) {
  knitr::asis_output(paste0(unclass(x), "\n"))
}
