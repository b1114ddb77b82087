# dp_compare_methods(): the plan before spending. The formula is translated as dp_ols
# translates it, on a two-row prototype built from the declarations alone (a variable
# with declared levels is a factor, any other a number inside its bounds), and the
# Python package's dpstats.compare_methods predicts each mechanism's error from the
# public facts. No data are read or sent.

# Two rows that have the declared types: what the formula translation reads of data.
.prototype <- function(formula, bounds, levels) {
  vars <- all.vars(formula)
  columns <- lapply(vars, function(v) {
    if (v %in% names(levels)) {
      l <- as.character(levels[[v]])
      return(factor(l[c(1L, min(2L, length(l)))], levels = l))
    }
    if (v %in% names(bounds)) bounds[[v]] else c(0, 1)
  })
  as.data.frame(setNames(columns, vars), stringsAsFactors = FALSE, optional = TRUE)
}

#' Predicted errors of every mechanism, before any budget is spent
#'
#' The plan before spending: for a formula, the number of rows and the budget, the
#' error that each mechanism \code{method = "auto"} may choose is predicted to have,
#' from public facts only (n, eps, delta, the declared bounds and levels, the formula's
#' shape), with its failure rate and the eps or n it needs for a usable answer (a DP
#' power calculation). It says which mechanism auto would choose, and says so when no
#' mechanism can give a usable answer. No data are read: the formula is checked against
#' the declarations alone. The predictions come from the Python package's error model
#' (\code{dpstats.compare_methods}), calibrated by simulation on reference designs.
#'
#' @param formula a formula as \code{dp_ols} takes it (\code{factor(g)} needs the levels of g declared).
#' @param n the number of rows the fit will have (public).
#' @param eps the budget of the planned call.
#' @param bounds,levels the declarations the call will pass (as in \code{dp_ols}).
#' @param estimator "ols" (least squares) or "quantreg" (median regression).
#' @param delta the planned delta (0: pure DP).
#' @param target the largest acceptable error of the first regressor's coefficient, in
#'   its units; \code{NULL} asks for 2 standard errors of the non-private fit.
#' @param se_share the part of eps the planned call spends on standard errors
#'   (\code{NULL}: each mechanism's default), which decides the budget of each point estimate.
#' @param max_rows,units a call whose privacy unit holds up to \code{max_rows} of the n rows,
#'   in \code{units} units (\code{dp_ols(..., unit = , max_rows = )}): the mechanisms that prove
#'   the unit-level guarantee, at their unit-level reading.
#' @return a data frame of class \code{dpstats_comparison}, a row per mechanism: why it
#'   does not apply, its predicted failure rate, its error (user's units and standard
#'   errors of the non-private fit), the eps and n it needs, and auto's choice; with the
#'   attributes \code{chosen}, \code{usable} and \code{message}.
#' @examples
#' \dontrun{
#' dp_compare_methods(foodexp ~ income, n = 235, eps = 1,
#'                    bounds = list(income = c(0, 5000), foodexp = c(0, 2500)))
#' }
#' @export
dp_compare_methods <- function(formula, n, eps, bounds = list(), levels = list(), estimator = c("ols", "quantreg"),
                               delta = 0, target = NULL, se_share = NULL, max_rows = 1, units = NULL) {
  estimator <- match.arg(estimator)
  if (is.character(formula) && length(formula) == 1L) formula <- as.formula(formula, env = parent.frame())
  if (!inherits(formula, "formula")) stop("formula must be a formula such as y ~ x", call. = FALSE)
  if (!is.numeric(n) || length(n) != 1L) stop("n must be one number of rows", call. = FALSE)
  if (!is.numeric(eps) || length(eps) != 1L) stop("eps must be one positive number", call. = FALSE)
  bounds <- .check_bounds(bounds)
  levels <- .check_levels(levels)
  env <- environment(formula)
  if (is.null(env)) env <- parent.frame()
  data <- .prototype(formula, bounds, levels)
  tr <- .translate_formula(formula, data, levels, env)
  declared <- .python_declarations(bounds, tr$levels, tr, data, env)
  out <- .interop()$compare_from_r(tr$python, n, eps, declared$bounds, declared$levels, estimator, delta,
                                   target, se_share, max_rows, units)
  if (!isTRUE(out$ok)) stop("dpstats: ", .r_message(out$message, tr), call. = FALSE)
  table <- as.data.frame(lapply(out$table, function(column) unlist(lapply(column, function(v) if (is.null(v)) NA else v))),
                         check.names = FALSE, stringsAsFactors = FALSE)
  structure(table, class = c("dpstats_comparison", "data.frame"), chosen = out$chosen, usable = out$usable,
            message = out$message, text = out$text)
}

#' @rdname dp_compare_methods
#' @param x a \code{dpstats_comparison}.
#' @param ... unused.
#' @export
print.dpstats_comparison <- function(x, ...) {
  cat(attr(x, "text"), "\n", sep = "")
  invisible(x)
}
