"""Binary-response models (logit and probit): links, maximum likelihood and the releases at a fit.

The core that every mechanism family fitting ``dp_logit`` / ``dp_probit`` shares
(docs/ARCHITECTURE.md): ``links`` (the two links, their bounded derivatives),
``mle`` (Newton's method for one weighted sample or a batch of samples) and
``at_fit`` (the noisy statistics at released coefficients that the average
marginal effects need).
"""
