# Grouped (small-area) fits: dp_ols(..., by = "tract", groups = keys) returns one row of estimates per group.

.check_grouped <- function(by, groups, group_sizes) {
  if (is.null(by)) {
    if (!is.null(groups) || !is.null(group_sizes)) stop("groups and group_sizes need by = \"<column>\"", call. = FALSE)
    return(NULL)
  }
  if (!is.character(by) || length(by) != 1L) stop("by must name one column", call. = FALSE)
  if (is.factor(groups)) groups <- as.character(groups)
  if (is.null(groups) || !is.atomic(groups) || !length(groups) || anyNA(groups)) {
    stop("a grouped fit needs its keys declared: groups = c(...) (public, never read from the data)", call. = FALSE)
  }
  if (is.numeric(groups)) {
    if (any(groups != round(groups))) stop("declare group keys as strings or integers", call. = FALSE)
    groups <- as.integer(groups)
  }
  if (!is.null(group_sizes) && (!is.numeric(group_sizes) || length(group_sizes) != length(groups))) {
    stop("group_sizes must give one size per key of groups, in the same order", call. = FALSE)
  }
  list(by = by, groups = groups, group_sizes = if (is.null(group_sizes)) NULL else as.integer(group_sizes))
}

.new_grouped_fits <- function(res, grouped, call, formula) {
  tidy <- res$tidy
  terms <- unique(.chr(tidy$term))
  keys <- grouped$groups
  estimate <- matrix(.num(tidy$estimate), nrow = length(keys), byrow = TRUE, dimnames = list(as.character(keys), terms))
  frame <- data.frame(key = rep(keys, each = length(terms)), term = .chr(tidy$term),
                      estimate = .num(tidy$estimate), std.error = .num(tidy[["std.error"]]),
                      conf.low = .num(tidy[["conf.low"]]), conf.high = .num(tidy[["conf.high"]]),
                      bias = .num(tidy$bias), status = .chr(tidy$status), stringsAsFactors = FALSE)
  names(frame)[[1L]] <- grouped$by
  privacy <- res$privacy
  environment(formula) <- baseenv()  # never keep a caller's frame (it may hold the data)
  out <- list(
    by = grouped$by,
    groups = keys,
    coefficients = estimate,
    tidy = frame,
    nobs = setNames(.num(res$nobs), as.character(keys)),
    failed = setNames(as.logical(unlist(res$failed)), as.character(keys)),
    method = setNames(.chr(res$method), as.character(keys)),  # each group's: a grouped auto chooses per group
    call = call,
    formula = formula,
    privacy = list(
      notion = privacy$notion,
      eps = as.numeric(privacy$eps),
      delta = as.numeric(.scalar(privacy$delta, 0)),
      split = if (length(privacy$split)) unlist(lapply(privacy$split, as.numeric)) else numeric(),
      neighbours = .scalar(privacy$neighbours, NA_character_),
      caveats = .chr(privacy$caveats)
    ),
    summary_text = .chr(res$summary_text)
  )
  class(out) <- "dpstats_grouped_fits"
  out
}

#' One differentially private fit per declared group
#'
#' \code{dp_ols(..., by = "tract", groups = keys)} (and \code{dp_quantreg} with one \code{tau}) returns a
#' \code{dpstats_grouped_fits}: \code{coef()} is a matrix with one row per declared key and one column
#' per term, \code{tidy()} a long frame with a column named after \code{by}, then term, estimate,
#' std.error, conf.low, conf.high (widened by the group's bias bound, as its own fit's are), bias (the
#' bound) and status (write it with \code{write.csv(tidy(fit), "slopes.csv")}),
#' \code{$privacy} the whole call, whose eps is the eps passed, and \code{$method} each group's
#' mechanism, named by key (with \code{method = "auto"} each group's is chosen from its public size).
#' Everything is post-processing of the released values and needs neither Python nor the data.
#'
#' @param x,object a \code{dpstats_grouped_fits}.
#' @param ... unused.
#' @name dpstats_grouped_fits
NULL

#' @rdname dpstats_grouped_fits
#' @export
print.dpstats_grouped_fits <- function(x, ...) {
  cat(x$summary_text, sep = "\n")
  invisible(x)
}

#' @rdname dpstats_grouped_fits
#' @export
coef.dpstats_grouped_fits <- function(object, ...) object$coefficients

#' @rdname dpstats_grouped_fits
#' @exportS3Method generics::tidy
tidy.dpstats_grouped_fits <- function(x, ...) .frame(x$tidy)
