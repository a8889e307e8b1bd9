"""The privacy core's checks of ε and δ, for code outside it (the estimator's hyper-parameters).

One home for the rules and their messages: :mod:`privfair.privacy._validate`, which the core's
own modules import; this module is its public face, so that :mod:`privfair.sklearn` need not
read a private module (tests/test_layers.py).  Each check returns the value as a float or raises
:class:`~privfair.errors.InvalidPrivacyError` naming the field, the value and the fix.
"""

from ._validate import check_delta, check_epsilon

__all__ = ["check_epsilon", "check_delta"]
