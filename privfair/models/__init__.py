"""Decision sets C_P — what a problem optimises over: thresholds, finite sets, linear
classifiers, torch modules, post-processed predictors, proxy cells, sparse linear sets with
their norms and projections, and the ERM object the row-private backends solve.

May import: the utilities, the privacy core, the language and the rows (privfair.data);
never a backend (tests/test_layers.py).
"""
