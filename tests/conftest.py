"""Test configuration: property-based tests are derandomized so every run checks the same cases
(fixed seeds everywhere; a failure is reproducible)."""

import pytest
from hypothesis import settings

settings.register_profile("privfair", derandomize=True, deadline=None)
settings.load_profile("privfair")


@pytest.fixture(scope="module")
def client():
    """A Dask client on a 2-worker in-process LocalCluster, started by the tests that use it
    (tests/test_dask*.py; those modules skip without the optional `dask` extra)."""
    distributed = pytest.importorskip("distributed", reason="the Dask engine is the optional "
                                      "extra privfair[dask]")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
