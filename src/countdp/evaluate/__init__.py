"""Evaluation: error metrics, Monte Carlo experiments and the data sets (UCI Adult, Binomial groups)."""
