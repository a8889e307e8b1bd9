"""The command line's argument types (each a one-line argparse error naming the value and
the fix), the privacy flags every solving command shares, and the privacy they ask for.

ε and δ are checked by the privacy core itself (:class:`privfair.DP`, the one place they are
validated), so the command line accepts exactly what the library does.
"""

from __future__ import annotations

import argparse
import math
import sys

from ..errors import InvalidPrivacyError
from ..privacy.spec import DP


def epsilon_arg(text):
    """``--epsilon``: a number, then the privacy core's own check (:class:`privfair.DP`, the one
    place ε is validated), so the command line accepts exactly what the library does."""
    return _privacy_number(text, "ε", "pass a positive number or 'inf'",
                           lambda v: DP(v, 0.0).epsilon)


def delta_arg(text):
    """``--delta``: a number, then the privacy core's own check (as for ``--epsilon``)."""
    return _privacy_number(text, "δ", "pass a number in [0, 1)", lambda v: DP(1.0, v).delta)


def _privacy_number(text, symbol, fix, check):
    """``float(text)`` validated by ``check`` (which raises InvalidPrivacyError), or argparse's
    one-line error naming the flag's value and the privacy core's fix."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid {symbol} {text!r}: {fix}") from None
    try:
        return check(value)
    except InvalidPrivacyError as err:
        raise argparse.ArgumentTypeError(f"invalid {symbol} {text!r}: {err.fix}") from None


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: pass a positive number")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: pass a positive number")
    return value


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: pass a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: pass a positive integer")
    return value


#: the smallest ``demo --subsample`` (δ = 1/n² needs n ≥ 2; a fair fit needs rows in every cell)
MIN_SUBSAMPLE = 100


def fraction(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return v


def subsample_arg(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid row count {text!r}: pass an integer "
                                         f"≥ {MIN_SUBSAMPLE}")
    if value < MIN_SUBSAMPLE:
        raise argparse.ArgumentTypeError(f"invalid row count {text!r}: pass an integer "
                                         f"≥ {MIN_SUBSAMPLE}")
    return value


def seed_arg(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: pass a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: pass a non-negative integer")
    return value


def show_progress(args) -> bool:
    """Progress bars go to stderr, only when it is a terminal and --no-progress is not given."""
    return not getattr(args, "no_progress", False) and sys.stderr.isatty()


def add_privacy_flags(p, epsilon_required):
    if epsilon_required:
        p.add_argument("--epsilon", type=epsilon_arg, required=True,
                       help="privacy budget ε (> 0; 'inf' gives a non-private reference run)")
    else:
        p.add_argument("--epsilon", type=epsilon_arg, default=1.0, help="privacy budget ε (default 1)")
    p.add_argument("--delta", type=delta_arg, default=None,
                   help="δ (default 1/n² for n training rows; 0 for pure DP)")
    p.add_argument("--protect", choices=["row", "sensitive"], default="row",
                   help="neighbouring relation: one whole row replaced (default: standard DP) or "
                        "only one row's sensitive attribute changed")
    p.add_argument("--alpha", type=positive_float, default=0.05,
                   help="target accuracy α: sets the penalty G and iteration counts (default 0.05)")


def privacy_of(args, problem):
    """The :class:`~privfair.DP` the flags ask for: δ defaults to 1/n² for n training rows (0 at
    ε = ∞, a non-private run)."""
    n = problem.rates.data.n
    if math.isinf(args.epsilon):
        delta = 0.0 if args.delta is None else args.delta
    else:
        delta = 1.0 / n ** 2 if args.delta is None else args.delta
    return DP(args.epsilon, delta, protect=args.protect)
