# dp_ols(), dp_quantreg() and dp_glm(): translate, send the columns, build the fit.

# One column as the record dpstats.r_interop.frame_from_columns() rebuilds:
# type, values (NA replaced by a placeholder), NA mask and, for factors, levels.
# Only the columns the formula uses are sent.
.column_record <- function(x, name, as_character = FALSE) {
  if (!is.null(dim(x)) && length(dim(x)) > 1L) {
    stop("column '", name, "' is a matrix; dpstats needs plain vector columns", call. = FALSE)
  }
  if (as_character) {
    if (!is.atomic(x)) stop("column '", name, "' has an unsupported type", call. = FALSE)
    values <- as.character(x)
    na <- is.na(values)
    values[na] <- ""
    return(list(type = "character", values = unname(values), na = unname(na)))
  }
  if (is.factor(x)) {
    codes <- as.integer(x)
    na <- is.na(codes)
    codes[na] <- 0L
    return(list(type = "factor", values = codes, na = na, levels = as.list(levels(x)), ordered = is.ordered(x)))
  }
  if (inherits(x, "Date")) {
    values <- as.numeric(unclass(x))
    na <- is.na(values)
    values[na] <- 0
    return(list(type = "date", values = values, na = na))
  }
  if (inherits(x, "POSIXct")) {
    values <- as.numeric(unclass(x))
    na <- is.na(values)
    values[na] <- 0
    tz <- attr(x, "tzone")
    return(list(type = "datetime", values = values, na = na, tz = if (is.null(tz)) "" else tz[[1L]]))
  }
  na <- unname(is.na(x))
  if (is.logical(x)) {
    values <- unname(as.vector(x))
    values[na] <- FALSE
    return(list(type = "logical", values = values, na = na))
  }
  if (is.integer(x)) {
    values <- unname(as.vector(x))
    values[na] <- 0L
    return(list(type = "integer", values = values, na = na))
  }
  if (is.double(x)) {
    values <- unname(as.vector(unclass(x)))
    values[na] <- 0
    return(list(type = "double", values = values, na = na))
  }
  if (is.character(x)) {
    values <- unname(as.vector(x))
    values[na] <- ""
    return(list(type = "character", values = values, na = na))
  }
  stop("column '", name, "' has a type dpstats cannot send (", class(x)[[1L]], ")", call. = FALSE)
}

.check_named_list <- function(x, what) {
  if (is.null(x)) return(list())
  if (!is.list(x) || (length(x) && (is.null(names(x)) || any(!nzchar(names(x)))))) {
    stop(what, " must be a named list, as in ", what,
         if (what == "bounds") " = list(y = c(0, 10), x = c(0, 1))" else " = list(g = c(\"a\", \"b\"))",
         call. = FALSE)
  }
  x
}

.check_bounds <- function(bounds) {
  bounds <- .check_named_list(bounds, "bounds")
  for (nm in names(bounds)) {
    b <- bounds[[nm]]
    if (!is.numeric(b) || length(b) != 2L) stop("bounds$", nm, " must be two numbers c(lower, upper)", call. = FALSE)
  }
  lapply(bounds, function(b) as.numeric(b))
}

# The cluster's levels may be the survey's PSUs as (stratum, cluster) pairs, list(c(75, 1), c(75, 2), ...):
# each pair becomes text, as the design's columns are sent (dpstats/frontend/survey.py).
.check_levels <- function(levels, cluster = NULL) {
  levels <- .check_named_list(levels, "levels")
  for (nm in names(levels)) {
    l <- levels[[nm]]
    if (is.factor(l)) l <- as.character(l)
    pairs <- is.list(l) && length(l) > 0L && all(vapply(l, function(p) is.atomic(p) && length(p) == 2L, NA))
    if (pairs && identical(nm, cluster)) {
      l <- lapply(l, as.character)
    } else if (!is.atomic(l) || length(l) == 0L) {
      stop("levels$", nm, " must be a non-empty vector of levels",
           if (pairs) " (a list of (stratum, cluster) pairs declares the PSUs of cluster =)", call. = FALSE)
    }
    if (anyNA(l, recursive = TRUE)) stop("levels$", nm, " must not contain NA", call. = FALSE)
    if (anyDuplicated(as.character(l))) stop("levels$", nm, " has duplicated levels", call. = FALSE)
    levels[[nm]] <- l
  }
  levels
}

# Python's messages name Python's column names; put the R names back.
# An error of the Python side as an R condition of classes "dpstats_<Python class>" (for example
# "dpstats_RefusedBeforeSpending": auto declined the call before reading any data, nothing was
# charged), "dpstats_error", "error" and "condition", so that tryCatch() can tell them apart.
.stop_python <- function(out, message) {
  class <- c(paste0("dpstats_", .scalar(out$error, "Error")), "dpstats_error", "error", "condition")
  stop(structure(class = class, list(message = paste0("dpstats: ", message), call = NULL)))
}

.r_message <- function(message, tr) {
  renamed <- tr$pyname[tr$pyname != names(tr$pyname)]
  for (r in names(renamed)) message <- gsub(paste0("'", renamed[[r]], "'"), paste0("'", r, "'"), message, fixed = TRUE)
  message
}

# The call as stored in the fit: data given by anything but a name is not kept
# (a call such as dp_ols(y ~ x, data.frame(x = ...)) would otherwise store the data).
.public_call <- function(call) {
  if (!is.null(call$data) && !is.symbol(call$data)) call$data <- quote(`<data>`)
  call
}

# The declared bounds and levels under Python's names (NULL when none): bounds by the
# translated column or expression, levels of the variables sent as character, and a
# bare logical column as a two-level factor, as in lm (its levels follow from R's type).
.python_declarations <- function(bounds, levels, tr, data, env) {
  bounds_py <- setNames(lapply(bounds, as.list), vapply(names(bounds), .translate_bound_name, "",
                                                            data = data, tr = tr, env = env))
  categorical <- intersect(names(levels), union(tr$factor_vars, tr$bare_categorical))
  levels_py <- setNames(lapply(categorical, function(v) as.list(as.character(levels[[v]]))),
                        unname(tr$pyname[categorical]))
  for (v in tr$bare_logical) levels_py[[tr$pyname[[v]]]] <- list(FALSE, TRUE)
  list(bounds = if (length(bounds_py)) bounds_py else NULL, levels = if (length(levels_py)) levels_py else NULL)
}

.dp_fit <- function(estimator, call, formula, data, eps, bounds, levels, method, delta,
                    random_state, missing, options, tau = NULL, budget = NULL, grouped = NULL,
                    unit = NULL, max_rows = NULL, survey = NULL) {
  .check_budget(budget)
  if (is.character(formula) && length(formula) == 1L) formula <- as.formula(formula, env = parent.frame(2L))
  if (!inherits(formula, "formula")) stop("formula must be a formula such as y ~ x", call. = FALSE)
  if (!is.data.frame(data)) stop("data must be a data frame", call. = FALSE)
  if (!is.numeric(eps) || length(eps) != 1L) stop("eps must be one positive number", call. = FALSE)
  if (!is.numeric(delta) || length(delta) != 1L) stop("delta must be one number in [0, 1)", call. = FALSE)
  if (!is.character(method) || length(method) != 1L) stop("method must be a string", call. = FALSE)
  if (!is.null(random_state) && (!is.numeric(random_state) || length(random_state) != 1L)) {
    stop("random_state must be NULL or one integer", call. = FALSE)
  }
  bounds <- .check_bounds(bounds)
  levels <- .check_levels(levels, survey$cluster)
  if (!is.null(budget)) {  # refused before any column is read or sent
    first <- .interop()$check_budget_first(budget$state, estimator, eps, delta, method,
                                           if (length(options)) options else NULL)
    if (!isTRUE(first$ok)) .stop_python(first, first$message)
  }
  env <- environment(formula)
  if (is.null(env)) env <- parent.frame(2L)
  data <- as.data.frame(data, stringsAsFactors = FALSE, optional = TRUE)

  tr <- .translate_formula(formula, data, levels, env, binary = estimator %in% .binary_estimators)
  levels <- tr$levels  # with levels declared inside factor(x, levels = ...)
  as_character <- union(tr$factor_vars, tr$bare_categorical)
  columns <- setNames(
    lapply(tr$vars, function(v) .column_record(data[[v]], v, as_character = v %in% as_character)),
    unname(tr$pyname[tr$vars])
  )
  if (!is.null(grouped)) {  # the key column, sent under a name of its own; the keys and sizes as options
    if (!grouped$by %in% names(data)) stop("by = '", grouped$by, "' is not a column of data", call. = FALSE)
    py_by <- if (grouped$by %in% tr$vars) tr$pyname[[grouped$by]] else grouped$by
    if (!grouped$by %in% tr$vars && py_by %in% names(columns)) py_by <- ".dpstats_by"
    if (!py_by %in% names(columns)) {
      columns[[py_by]] <- .column_record(data[[grouped$by]], grouped$by, as_character = is.character(grouped$groups))
    }
    options <- c(options, list(by = py_by, groups = as.list(grouped$groups),
                               group_sizes = if (is.null(grouped$group_sizes)) NULL else as.list(grouped$group_sizes)))
  }
  design_levels <- list()
  if (!is.null(survey)) {  # the survey's columns, under their Python names (the weight's bound maps to it)
    sent <- .send_survey(survey, data, columns, levels)
    columns <- sent$columns
    options <- c(options, sent$options)
    design_levels <- sent$levels
  }
  if (!is.null(unit) || !is.null(max_rows)) {  # the privacy unit's key column, sent under a name of its own
    sent <- .unit_column(unit, max_rows, data, tr, columns)
    columns <- sent$columns
    options <- c(options, sent$options)
  }
  declared <- .python_declarations(bounds, levels, tr, data, env)
  if (length(design_levels)) declared$levels <- c(declared$levels, design_levels[setdiff(names(design_levels), names(declared$levels))])
  if (!is.null(random_state)) {
    if (random_state != round(random_state) || random_state < 0) stop("random_state must be a non-negative integer", call. = FALSE)
    if (abs(random_state) <= .Machine$integer.max) random_state <- as.integer(random_state)
  }

  mod <- .interop()
  out <- mod$fit_from_r(
    estimator = estimator, formula = tr$python, columns = columns, eps = eps,
    bounds = declared$bounds, levels = declared$levels,
    method = method, delta = delta, random_state = random_state, missing = missing,
    options = if (length(options)) options else NULL, tau = tau, nrow = nrow(data),
    budget = if (is.null(budget)) NULL else budget$state,
    ledger_formula = paste(deparse(formula, width.cutoff = 500L), collapse = " ")
  )
  if (!is.null(out$budget)) .update_budget(budget, out$budget)  # the release happened: it has spent
  if (!isTRUE(out$ok)) .stop_python(out, .r_message(out$message, tr))
  if (isTRUE(out$result$grouped)) {
    return(.new_grouped_fits(out$result, grouped, .public_call(call), formula))
  }
  if (!is.null(out$result$fits)) {
    fits <- .new_quantile_fits(out$result, tr, .public_call(call), formula, bounds, levels)
    fits$fits <- lapply(fits$fits, function(f) `[[<-`(f, "survey", .survey_record(survey)))
    return(fits)
  }
  fit <- .new_fit(out$result, tr, .public_call(call), formula, bounds, levels, estimator, tau)
  fit$survey <- .survey_record(survey)
  fit
}

# unit = "person_id", max_rows = k: the key column goes to Python as text, under its own name when the
# formula uses the column too; a whole max_rows becomes an integer (Python refuses 5.0 as a count).
.unit_column <- function(unit, max_rows, data, tr, columns) {
  if (is.null(unit)) stop("max_rows bounds the rows of one unit: pass unit = '<column>' with it", call. = FALSE)
  if (!is.character(unit) || length(unit) != 1L || !unit %in% names(data)) {
    stop("unit must name a column of data (the privacy unit's key, e.g. 'person_id')", call. = FALSE)
  }
  if (is.numeric(max_rows) && length(max_rows) == 1L && is.finite(max_rows) && max_rows == round(max_rows) &&
      abs(max_rows) <= .Machine$integer.max) {
    max_rows <- as.integer(max_rows)
  }
  py_unit <- if (unit %in% tr$vars) ".dpstats_unit" else unit
  columns[[py_unit]] <- .column_record(data[[unit]], unit, as_character = TRUE)
  list(columns = columns, options = list(unit = py_unit, max_rows = max_rows))
}

#' Differentially private regression from an R formula
#'
#' Fits a differentially private least-squares (\code{dp_ols}) or quantile
#' (\code{dp_quantreg}) regression with the Python package dpstats, through
#' reticulate. Only the columns the formula uses are sent to Python, column by
#' column with their NA masks; the fit comes back as plain R values.
#'
#' R formulas are translated as written: \code{factor(x)} with its levels declared,
#' \code{I()}, \code{log()}, interactions and \code{- 1}; anything that reads other rows
#' (\code{scale()}, \code{poly()}, \code{mean(x)}) is refused. A variable is categorical
#' because its levels are declared, numeric otherwise, whatever its R type.
#'
#' @param formula an R formula: variables, factor(x), I(), log(), interactions, -1 / +0.
#' @param data a data frame with the private rows (only the columns the formula uses are sent to Python).
#' @param eps the total privacy budget of the call.
#' @param bounds public bounds list(name = c(lower, upper)) for every numeric variable (or expression,
#'   such as "log(hp)"); the data are clipped to them.
#' @param levels public levels list(name = c(...)) of every categorical variable (factor(x) terms,
#'   character and factor columns). They are never read from the data.
#' @param method "auto" or a mechanism of the Python package ("noisystats", ...).
#' @param delta for approximate-DP mechanisms.
#' @param random_state NULL (fresh entropy) or an integer seed.
#' @param missing "impute" (the default: every bad cell gets a row-wise treatment, so that no row can
#'   make the call fail: a missing or non-finite number becomes the midpoint of its bounds, an undeclared
#'   or missing level the first declared level) or "raise" (for the data curator only: its error
#'   describes confidential data).
#' @param budget \code{NULL} or a budget from \code{\link{dp_budget}}: the fit is charged to it, and refused
#'   before any data are sent to Python if it could overspend it.
#' @param by \code{NULL}, or the name of a column of keys for a grouped (small-area) fit: one fit per
#'   key in \code{groups}.
#' @param groups the declared keys (a character or integer vector), public, never read from the data.
#'   Rows whose key is not declared (NA, another type) are dropped row-wise.
#' @param group_sizes \code{NULL}, or the public size of each group, in the order of \code{groups}: then
#'   each group spends the whole eps (parallel composition); without it each spends eps / 2, part of it
#'   on a noisy size (a replaced row can leave one group and join another). The proof is in the Python
#'   package's dpstats/groups/partition.py.
#' @param unit \code{NULL}, or the name of the column whose every row of one value is one privacy unit (a
#'   person, a firm); neighbouring datasets then differ in every row of one unit.
#' @param max_rows with \code{unit}, the public bound k on one unit's rows: at most k rows per unit are
#'   kept, chosen without looking at the values. Tukey depth (with \code{delta}) and NoisyStats cluster
#'   their standard errors by unit; other mechanisms run at eps / k with none. The proof is in the Python
#'   package's dpstats/mechanisms/units.py.
#' @param weights the survey-weight column, named bare as in \code{lm} (\code{weights = wt}), as a string or
#'   as \code{~wt}; its range is declared in \code{bounds} (\code{bounds = list(wt = c(0, 5000))}: one row
#'   moves the fit by at most what the largest weight allows). The fit is the weighted one (\code{lm(weights =)},
#'   \code{quantreg::rq(weights =)}, survey::svyglm's point estimate) with design-based standard errors; a
#'   method that cannot take weights is refused before any data are sent.
#' @param cluster,strata with \code{weights}, the survey's PSU and stratum columns (bare, as strings, or as
#'   \code{~psu} as in \code{svydesign(ids = ~psu, strata = ~st)}), their levels declared in \code{levels}; PSUs
#'   are nested within strata (\code{nest = TRUE}) and the standard errors are survey::svyglm's linearisation
#'   ones, with the privacy noise included. The cluster's levels are its codes, every stratum having a PSU of
#'   each, or the design's PSUs as (stratum, cluster) pairs, the survey's published list
#'   (\code{levels = list(psu = unique(Map(c, d$st, d$psu)), st = ...)}): a declared PSU without rows counts
#'   as one with a score total of 0, so declare the sample's PSUs.
#' @param ... the mechanism's hyperparameters, \code{se_share}: the part of eps spent on standard
#'   errors (NULL for the mechanism's default, 0 for none: then they are NaN), and \code{target} and
#'   \code{force}: \code{method = "auto"} refuses, before any data are sent and with nothing charged, a
#'   call whose best mechanism is predicted to fail more often than not or to err by more than
#'   \code{target} (the first regressor's coefficient, in its units; without it, by more than 10
#'   standard errors of the non-private fit). The error is an R condition of class
#'   \code{dpstats_RefusedBeforeSpending} whose message holds the plan; \code{force = TRUE} or an
#'   explicit \code{method} fits anyway, and the summary's status says so.
#' @return an object of class \code{\link{dpstats_fit}} holding plain R values only; from
#'   \code{dp_quantreg} with several \code{tau}, a \code{\link{dpstats_quantile_fits}} (one fit per quantile);
#'   with \code{by}, a \code{\link{dpstats_grouped_fits}} (one row of estimates per group).
#' @examples
#' \dontrun{
#' data(engel, package = "quantreg")
#' fit <- dp_ols(foodexp ~ income, data = engel, eps = 1,
#'               bounds = list(income = c(0, 5000), foodexp = c(0, 2500)))
#' summary(fit)
#' }
#' @export
dp_ols <- function(formula, data, eps, bounds = list(), levels = list(), method = "auto", delta = 0,
                   random_state = NULL, missing = c("impute", "raise"), budget = NULL,
                   by = NULL, groups = NULL, group_sizes = NULL, unit = NULL, max_rows = NULL, weights = NULL,
                   cluster = NULL, strata = NULL, ...) {
  survey <- .survey_columns(substitute(weights), substitute(cluster), substitute(strata), parent.frame())
  .dp_fit("ols", match.call(), formula, data, eps, bounds, levels, method, delta, random_state,
          match.arg(missing), list(...), budget = budget, grouped = .check_grouped(by, groups, group_sizes),
          unit = unit, max_rows = max_rows, survey = survey)
}

#' @rdname dp_ols
#' @param tau the quantile(s) of \code{dp_quantreg}, in (0, 1); several quantiles share eps (equal parts)
#'   and are charged to a budget once.
#' @export
dp_quantreg <- function(formula, data, tau = 0.5, eps, bounds = list(), levels = list(), method = "auto",
                        delta = 0, random_state = NULL, missing = c("impute", "raise"), budget = NULL,
                        by = NULL, groups = NULL, group_sizes = NULL, unit = NULL, max_rows = NULL, weights = NULL,
                        cluster = NULL, strata = NULL, ...) {
  if (!is.numeric(tau) || length(tau) < 1L || any(!is.finite(tau))) stop("tau must be numbers in (0, 1)", call. = FALSE)
  survey <- .survey_columns(substitute(weights), substitute(cluster), substitute(strata), parent.frame())
  .dp_fit("quantreg", match.call(), formula, data, eps, bounds, levels, method, delta, random_state,
          match.arg(missing), list(...), tau = as.list(as.numeric(tau)), budget = budget,
          grouped = .check_grouped(by, groups, group_sizes), unit = unit, max_rows = max_rows, survey = survey)
}

# --- from Python's builtins to plain R values ---------------------------------

.num <- function(x) {
  if (is.null(x)) return(numeric())
  if (is.list(x)) return(vapply(x, function(v) if (is.null(v)) NA_real_ else as.numeric(v), numeric(1)))
  as.numeric(x)
}

.chr <- function(x) {
  if (is.null(x)) return(character())
  if (is.list(x)) return(vapply(x, function(v) if (is.null(v)) NA_character_ else as.character(v), ""))
  as.character(x)
}

.scalar <- function(x, default = NA) if (is.null(x)) default else x

.square <- function(rows, names) {
  k <- length(names)
  m <- matrix(NA_real_, k, k, dimnames = list(names, names))
  for (i in seq_len(k)) m[i, ] <- .num(rows[[i]])
  m
}

# Bootstrap replicates (a list of rows, one column per term), or NULL.
.replicates <- function(rows, names) {
  if (is.null(rows) || !length(rows)) return(NULL)
  m <- matrix(unlist(lapply(rows, .num)), ncol = length(names), byrow = TRUE)
  colnames(m) <- names
  m
}

# A released statistic: a number, a vector, or a matrix (a list of rows).
.stat <- function(x) {
  if (is.list(x) && length(x) && all(vapply(x, function(r) length(r) > 1L || is.list(r), NA))) {
    rows <- lapply(x, .num)
    if (length(unique(lengths(rows))) == 1L) return(do.call(rbind, rows))
  }
  .num(x)
}

# The per-coefficient bias bounds of a release (res$bias, dpstats/uncertainty/bias.py): 0 where it keeps no
# bias, Inf where nothing bounds the bias it names. A release from a dpstats before the bounds (res$bias
# the bias in words) reads as unbounded where it names one.
.bias_bounds <- function(bias, source, k) {
  if (is.character(bias)) return(rep(if (all(is.na(bias))) 0 else Inf, k))
  b <- .num(bias)
  if (length(b) == k) return(b)
  rep(if (is.null(source) || all(is.na(source))) 0 else Inf, k)
}

.plain_list <- function(x) {
  if (is.null(x) || length(x) == 0L) return(list())
  lapply(x, function(v) if (is.list(v)) .plain_list(v) else v)
}

.new_fit <- function(res, tr, call, formula, bounds, levels, estimator, tau) {
  python_terms <- .chr(res$terms)
  r_terms <- .r_term_names(python_terms, tr$leaves)
  coefficients <- setNames(.num(res$params), r_terms)
  V <- .square(res$cov, r_terms)
  privacy <- res$privacy
  split <- if (length(privacy$split)) unlist(lapply(privacy$split, as.numeric)) else numeric()
  environment(formula) <- baseenv()  # never keep a caller's frame (it may hold the data)
  xlevels <- list()
  for (lf in tr$leaves) if (isTRUE(lf$categorical)) xlevels[[lf$label]] <- lf$levels_r
  fit <- list(
    coefficients = coefficients,
    vcov = V,
    replicates = .replicates(res$replicates, r_terms),
    interval = .scalar(res$interval, "basic"),
    nobs = as.integer(res$nobs),
    call = call,
    formula = formula,
    estimator = estimator,
    tau = if (is.null(tau)) NULL else unlist(tau),
    response = tr$response$label,
    method = .scalar(res$method, NA_character_),
    method_title = .scalar(res$method_title, NA_character_),
    method_reason = .scalar(res$method_reason, NA_character_),
    citation = .scalar(res$citation, NA_character_),
    failed = isTRUE(res$failed),
    reason = .scalar(res$reason, NA_character_),
    se_note = .scalar(res$se_note, NA_character_),
    plan_note = .scalar(res$plan_note, NA_character_),
    bias = setNames(.bias_bounds(res$bias, res$bias_source, length(r_terms)), r_terms),
    bias_source = .scalar(res$bias_source, if (is.character(res$bias)) res$bias else NA_character_),
    status = .scalar(res$status, if (isTRUE(res$failed)) "failed" else NA_character_),
    privacy = list(
      notion = privacy$notion,
      eps = as.numeric(privacy$eps),
      delta = as.numeric(.scalar(privacy$delta, 0)),
      rho = as.numeric(.scalar(privacy$rho, NA_real_)),
      split = split,
      neighbours = .scalar(privacy$neighbours, NA_character_),
      caveats = .chr(privacy$caveats),
      proven = !identical(privacy$proven, FALSE)
    ),
    bounds = bounds,
    levels = lapply(levels[intersect(names(levels), union(tr$factor_vars, tr$bare_categorical))], identity),
    noisy_stats = lapply(res$noisy_stats, .stat),
    hyperparameters = .plain_list(res$hyperparameters),
    # what predict() needs, all public
    xlevels = xlevels,
    factor_vars = tr$factor_vars,
    bare_categorical = tr$bare_categorical,
    bare_logical = tr$bare_logical,
    constants = tr$constants,
    python = list(
      formula = tr$python,
      terms = python_terms,
      summary = .scalar(res$summary_text, NA_character_),
      version = .scalar(res$dpstats_version, NA_character_)
    )
  )
  class(fit) <- "dpstats_fit"
  fit <- .order_like_r(fit, tr$leaves)
  if (estimator %in% .binary_estimators) fit <- .as_glm_fit(fit, res$margins)
  fit
}

# Name and order the coefficients as R's model.matrix does (lm's names and
# order), found on a one-row frame built from the declared metadata only.
# Keeps Python's order when the columns do not match (predict() then says so).
.order_like_r <- function(fit, leaves) {
  vars <- setdiff(all.vars(fit$formula[[3L]]), names(fit$constants))
  row <- lapply(setNames(nm = vars), function(v) {
    if (v %in% fit$bare_logical) return(FALSE)
    if (v %in% c(fit$factor_vars, fit$bare_categorical)) return(as.character(fit$levels[[v]])[[1L]])
    b <- fit$bounds[[v]]
    if (is.null(b)) 1 else mean(b)
  })
  X <- tryCatch(suppressWarnings(.public_model_matrix(fit, as.data.frame(row, optional = TRUE))),
                error = function(e) NULL)
  fit$names_match <- FALSE
  if (is.null(X)) return(fit)
  map <- .piece_map(leaves)
  r_pieces <- unique(unname(map))
  fit_key <- .piece_key(.term_pieces(fit$python$terms, map))
  r_key <- .piece_key(.term_pieces(colnames(X), setNames(r_pieces, r_pieces)))
  if (anyNA(fit_key) || anyNA(r_key) || anyDuplicated(fit_key) || !setequal(fit_key, r_key) ||
      length(fit_key) != length(r_key)) {
    return(fit)
  }
  idx <- match(r_key, fit_key)
  r_names <- colnames(X)
  fit$python$terms <- fit$python$terms[idx]
  fit$coefficients <- setNames(unname(fit$coefficients[idx]), r_names)
  fit$vcov <- fit$vcov[idx, idx, drop = FALSE]
  fit$bias <- setNames(unname(fit$bias[idx]), r_names)
  dimnames(fit$vcov) <- list(r_names, r_names)
  if (!is.null(fit$replicates)) {
    fit$replicates <- fit$replicates[, idx, drop = FALSE]
    colnames(fit$replicates) <- r_names
  }
  fit$names_match <- TRUE
  fit
}
