#' dpstats: differentially private regression for applied economists
#'
#' The R front end of the Python package dpstats: \code{\link{dp_ols}},
#' \code{\link{dp_quantreg}} and \code{\link{dp_glm}} (logit and probit, with
#' \code{\link{dp_margeff}}) fit differentially private regressions from an R formula
#' and a data frame with declared public bounds and levels, through reticulate. The fit
#' (\code{\link{dpstats_fit}}) holds plain R values and has the methods of an R model fit.
#'
#' @keywords internal
#' @importFrom stats coef vcov confint nobs predict residuals fitted formula
#' @importFrom stats pnorm qnorm terms delete.response model.frame model.matrix na.pass
#' @importFrom stats printCoefmat setNames as.formula binomial family
"_PACKAGE"
