# dp_glm(): logit and probit models of a binary response, as glm(family = binomial(link = ...)).

.binary_estimators <- c("logit", "probit")

# The link of `family`, given as glm takes it (a family object, a family function or its name), when it is
# binomial with a logit or probit link; an error naming what was given otherwise.
.binary_link <- function(family, env) {
  if (is.character(family) && length(family) == 1L) {
    family <- tryCatch(get(family, mode = "function", envir = env), error = function(e) {
      stop("family '", family, "' is not a family function", call. = FALSE)
    })
  }
  if (is.function(family)) family <- family()
  if (!is.list(family) || !is.character(family$family) || !is.character(family$link)) {
    stop("family must be a family such as binomial(link = \"logit\")", call. = FALSE)
  }
  if (!identical(family$family, "binomial") || !family$link %in% .binary_estimators) {
    hint <- if (identical(family$family, "gaussian") && identical(family$link, "identity")) {
      "; for least squares use dp_ols()"
    } else {
      ""
    }
    stop("dp_glm fits binomial(link = \"logit\") and binomial(link = \"probit\") only, not ", family$family,
         "(link = \"", family$link, "\")", hint, call. = FALSE)
  }
  family$link
}

#' Differentially private logit and probit regression
#'
#' \code{dp_glm} fits a binary-response model from an R formula, as
#' \code{glm(formula, family = binomial(link = "logit"), data)} does, with the Python package
#' dpstats (\code{dpstats.dp_logit} and \code{dpstats.dp_probit}) through reticulate. The fit is a
#' \code{dpstats_glm}, a \code{\link{dpstats_fit}} with glm's \code{predict} types and
#' \code{family()}; \code{\link{dp_margeff}} gives its average marginal effects.
#'
#' The response is a 0/1 or logical column, a fraction in [0, 1] (the quasi-likelihood of Papke and
#' Wooldridge), or a comparison such as \code{I(hours > 0)} (whose variable has declared bounds); a
#' missing response is imputed at 1/2 and any other value clipped to [0, 1], row by row, so that no
#' row can make the call fail. A factor response is refused: recode it as a logical column first.
#' The regressors take the formulas and declarations of \code{\link{dp_ols}}.
#'
#' @param formula an R formula whose response is binary (see Details).
#' @param family \code{binomial(link = "logit")} (the default) or \code{binomial(link = "probit")}, as a
#'   family object, the family function or its name; any other family or link is refused.
#' @param data a data frame with the private rows (only the columns the formula uses are sent to Python).
#' @param eps the total privacy budget of the call.
#' @param bounds public bounds list(name = c(lower, upper)) for every numeric regressor (or expression);
#'   a 0/1 response needs none.
#' @param levels public levels list(name = c(...)) of every categorical variable.
#' @param method "auto" or a mechanism of the Python package for binary responses ("newton", "histogram",
#'   "tukey" with \code{delta}, "kng", "objective").
#' @param delta for approximate-DP mechanisms.
#' @param random_state NULL (fresh entropy) or an integer seed.
#' @param missing "impute" or "raise", as for \code{\link{dp_ols}}.
#' @param budget \code{NULL} or a budget from \code{\link{dp_budget}}, as for \code{\link{dp_ols}}.
#' @param margins_share the part of eps spent on what the average marginal effects need (NULL: the Python
#'   package's default, 0.05; 0: none, and \code{dp_margeff} says so).
#' @param unit,max_rows the privacy unit, as for \code{\link{dp_ols}}.
#' @param weights the survey-weight column, named bare as in \code{lm} (\code{weights = wt}), as a string or
#'   as \code{~wt}; its range is declared in \code{bounds} (\code{bounds = list(wt = c(0, 5000))}). The fit is
#'   the weighted MLE, survey::svyglm's point estimate, with design-based standard errors (the weighted
#'   sandwich); so far the "newton" mechanism (auto's choice with weights) takes them.
#' @param cluster,strata with \code{weights}, the survey's PSU and stratum columns, as for \code{\link{dp_ols}}:
#'   the standard errors are then svyglm's for \code{svydesign(ids = ~cluster, strata = ~strata, weights =
#'   ~weights, nest = TRUE)}.
#' @param ... the mechanism's hyperparameters, \code{se_share}, \code{target} and \code{force}, as for
#'   \code{\link{dp_ols}}.
#' @return an object of class \code{dpstats_glm} (and \code{\link{dpstats_fit}}) holding plain R values
#'   only: \code{coef}, \code{vcov}, \code{confint}, \code{summary}, \code{nobs}, \code{print},
#'   \code{tidy} and \code{glance} work as for \code{dp_ols}; \code{predict(fit, newdata, type = "link")}
#'   gives the linear index and \code{type = "response"} the probability; \code{family(fit)} the family.
#' @examples
#' \dontrun{
#' fit <- dp_glm(am ~ wt + hp, family = binomial(link = "probit"), data = mtcars, eps = 1,
#'               bounds = list(wt = c(1, 6), hp = c(50, 350)))
#' summary(fit)
#' dp_margeff(fit)
#' predict(fit, data.frame(wt = 3, hp = 120), type = "response")
#' }
#' @export
dp_glm <- function(formula, family = binomial(), data, eps, bounds = list(), levels = list(), method = "auto",
                   delta = 0, random_state = NULL, missing = c("impute", "raise"), budget = NULL,
                   margins_share = NULL, unit = NULL, max_rows = NULL, weights = NULL, cluster = NULL, strata = NULL,
                   ...) {
  link <- .binary_link(family, parent.frame())
  survey <- .survey_columns(substitute(weights), substitute(cluster), substitute(strata), parent.frame())
  if (!is.null(margins_share) && (!is.numeric(margins_share) || length(margins_share) != 1L)) {
    stop("margins_share must be NULL or one number in [0, 1)", call. = FALSE)
  }
  options <- c(list(...), if (is.null(margins_share)) NULL else list(margins_share = margins_share))
  .dp_fit(link, match.call(), formula, data, eps, bounds, levels, method, delta, random_state,
          match.arg(missing), options, budget = budget, unit = unit, max_rows = max_rows, survey = survey)
}

# A binary fit: the link, and the average marginal effects (Python's to_dict()["margins"]) under R's names,
# in the coefficients' order.
.as_glm_fit <- function(fit, margins) {
  fit$family <- "binomial"
  fit$link <- fit$estimator
  if (!is.null(margins)) {
    python <- .chr(margins$terms)
    idx <- match(python, fit$python$terms)
    terms <- ifelse(is.na(idx), python, names(fit$coefficients)[idx])
    o <- order(idx)
    fit$margins <- list(terms = terms[o], dydx = .num(margins$dydx)[o], se = .num(margins$se)[o])
  }
  class(fit) <- c("dpstats_glm", class(fit))
  fit
}

#' Average marginal effects of a differentially private logit or probit fit
#'
#' The average over the rows of \eqn{d P(y = 1 | x) / d x_j}, every column of the design taken as
#' continuous (dummies too), with delta-method standard errors that cover the privacy noise: the
#' Python package's \code{res.get_margeff()}, statsmodels' \code{get_margeff(at = "overall",
#' method = "dydx")}. The averages they need at the released coefficients are released with
#' \code{margins_share} of the call's eps (\code{\link{dp_glm}}); this function is post-processing and
#' needs neither Python nor the data. The columns follow \code{summary(margins::margins(fit))}.
#'
#' @param fit a \code{dpstats_glm} from \code{\link{dp_glm}}.
#' @param level confidence level of the normal intervals.
#' @return a data frame with one row per regressor: \code{factor}, \code{AME}, \code{SE}, \code{z},
#'   \code{p}, \code{lower}, \code{upper}.
#' @examples
#' \dontrun{
#' fit <- dp_glm(am ~ wt + hp, data = mtcars, eps = 1, bounds = list(wt = c(1, 6), hp = c(50, 350)))
#' dp_margeff(fit)
#' }
#' @export
dp_margeff <- function(fit, level = 0.95) {
  if (!inherits(fit, "dpstats_glm")) stop("fit must be a dpstats_glm from dp_glm()", call. = FALSE)
  if (!is.numeric(level) || length(level) != 1L || !(level > 0 && level < 1)) {
    stop("level must be one number in (0, 1)", call. = FALSE)
  }
  m <- fit$margins
  if (is.null(m)) stop("this fit spent nothing on marginal effects (margins_share = 0)", call. = FALSE)
  z <- m$dydx / m$se
  q <- qnorm(1 - (1 - level) / 2)
  data.frame(factor = m$terms, AME = m$dydx, SE = m$se, z = z, p = 2 * pnorm(-abs(z)),
             lower = m$dydx - q * m$se, upper = m$dydx + q * m$se, stringsAsFactors = FALSE)
}

#' @rdname dp_glm
#' @param object a \code{dpstats_glm}.
#' @param newdata a data frame of public values of the regressors.
#' @param type \code{"link"} (the default, as for glm: the linear index) or \code{"response"} (the
#'   probability).
#' @export
predict.dpstats_glm <- function(object, newdata, type = c("link", "response"), ...) {
  type <- match.arg(type)
  eta <- predict.dpstats_fit(object, newdata)
  if (type == "link") return(eta)
  if (identical(object$link, "probit")) pnorm(eta) else stats::plogis(eta)
}

#' @rdname dp_glm
#' @export
family.dpstats_glm <- function(object, ...) binomial(link = object$link)
