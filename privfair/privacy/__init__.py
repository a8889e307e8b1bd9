"""privfair's privacy core: specifications, mechanisms, accounting, budgets and certificates.

See docs/privacy.md for the neighbouring relations, the theorems behind every mechanism and
composition rule, the floating-point stance and how to read a certificate.
"""

from .accountant import Accountant, Total
from .budget import BudgetFilter, Reservation
from .calibration import Calibration, calibrate_advanced, calibrate_gaussian, calibrate_optimal
from .certificate import Certificate
from .composition import RULES, advanced_composition, optimal_delta
from .events import (THEOREMS, Event, Release, approximate_event, exponential_event,
                     gaussian_event, laplace_event, permute_and_flip_event, pure_event,
                     subsampled_gaussian_event)
from .gaussian import calibrate_gaussian_sigma, gaussian_delta, gaussian_epsilon
from .mechanisms import (exponential_mechanism, exponential_mechanism_index,
                         exponential_mechanism_probabilities, gaussian_mechanism, gaussian_noise_vector, laplace_mechanism,
                         laplace_scale, permute_and_flip, permute_and_flip_probabilities,
                         report_noisy_max, score_grid)
from .release import (Draws, Schedule, Scheduled, calibrate, noise_multiplier,
                      reduced_noise)
from .randomness import GeneratorSource, RandomSource, SystemSource, as_source
from .spec import DP, RELATIONS
from ._validate import check_delta, check_epsilon
from . import testing  # noqa: E402  (the reusable statistical testers)

__all__ = [
    "DP", "RELATIONS", "check_epsilon", "check_delta",
    # mechanisms
    "laplace_mechanism", "gaussian_mechanism", "exponential_mechanism", "permute_and_flip",
    "report_noisy_max", "gaussian_noise_vector", "exponential_mechanism_probabilities",
    "exponential_mechanism_index",
    "permute_and_flip_probabilities", "laplace_scale", "score_grid",
    # events
    "Event", "Release", "THEOREMS", "laplace_event", "gaussian_event", "exponential_event",
    "permute_and_flip_event", "subsampled_gaussian_event", "pure_event", "approximate_event",
    # accounting and calibration
    "Accountant", "Total", "RULES", "advanced_composition", "optimal_delta",
    "Calibration", "calibrate_advanced", "calibrate_optimal", "calibrate_gaussian",
    "calibrate_gaussian_sigma", "gaussian_delta", "gaussian_epsilon",
    # budget and certificate
    "BudgetFilter", "Reservation", "Certificate",
    # the release plumbing
    "calibrate", "Schedule", "Scheduled", "Draws", "reduced_noise", "noise_multiplier",
    # randomness
    "RandomSource", "SystemSource", "GeneratorSource", "as_source",
    "testing",
]
