"""Test configuration: property-based tests are derandomized so every run checks the same cases
(fixed seeds everywhere; a failure is reproducible)."""

from hypothesis import settings

settings.register_profile("privfair", derandomize=True, deadline=None)
settings.load_profile("privfair")
