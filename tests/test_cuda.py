"""``device="cuda"``: every backend that takes it runs the same algorithm on a GPU as on the CPU,
and a machine without one refuses before anything is spent.

The GPU tests run where ``torch.cuda.is_available()`` (a lent GPU machine; CI has none) and are
skipped elsewhere with that reason; sgda's own CUDA comparison is in test_backend_sgda.py.  The
refusal test runs everywhere but on a GPU machine.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privfair as pf
from privfair.errors import InvalidInputError

torch = pytest.importorskip("torch", reason="device='cuda' needs the optional torch extra")
NO_CUDA = not torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(NO_CUDA, reason="needs a CUDA GPU (none here); the CPU path is tested")


def _two_groups(n, seed, d=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    X = rng.normal(size=(n, d)) + 0.8 * a[:, None] * (np.arange(d) < 1)
    y = (X[:, 0] + rng.normal(scale=0.8, size=n) > 0.5).astype(int)
    return pf.Dataset(X, y, sensitive=np.where(a == 1, "b", "a"), group_names=["a", "b"])


def _threshold_problem(data, grid=12):
    r = pf.rates(pf.Thresholds(np.linspace(-1.5, 2.0, grid), score=0), data, group_mass_bound=0.1)
    gap = pf.lse(r.selection["a"] - r.selection["b"], r.selection["b"] - r.selection["a"], eta=20)
    return pf.Problem(pf.minimize(r.error()), [gap <= 0.1])


def _torch_problem(data, level=0.05):
    def model():
        torch.manual_seed(0)
        return torch.nn.Linear(data.X.shape[1], 2)

    r = pf.rates(pf.TorchModel(model, n_features=data.X.shape[1], n_classes=2), data)
    return pf.Problem(pf.minimize(r.error()),
                      [pf.abs(r.selection["a"] - r.selection["b"]) <= level])


def _solve(prob, privacy, backend, **opts):
    with warnings.catch_warnings():       # the held-out check's status warnings: not under test
        warnings.simplefilter("ignore")
        return prob.solve(privacy, backend=backend, progress=False, **opts)


@pytest.mark.skipif(not NO_CUDA, reason="a GPU is present: the GPU tests below run instead")
@pytest.mark.parametrize("backend,make", [("lagrangian_sgda", "torch"), ("sgda", "torch"),
                                          ("exponential", "thresholds"),
                                          ("frank_wolfe", "thresholds")])
def test_cuda_without_a_gpu_is_a_typed_error_that_spends_nothing(backend, make):
    """Decided from the machine (public) before any estimate or draw, whichever backend: it
    once reached lagrangian_sgda's TorchModel adapter after the reservation was charged."""
    data = _two_groups(400, 0)
    prob = _torch_problem(data) if make == "torch" else _threshold_problem(data)
    budget = pf.BudgetFilter(1.0, 1e-5)
    with pytest.raises(InvalidInputError, match="CUDA is not available"):
        prob.solve(pf.DP(1.0, 1e-5, protect="sensitive"), backend=backend, device="cuda", seed=0, budget=budget,
                   progress=False)
    assert budget.spent == (0.0, 0.0)


@needs_gpu
@pytest.mark.parametrize("backend", ["exponential", "frank_wolfe"])
def test_loss_vector_backends_on_cuda_release_what_numpy_releases(backend):
    """The score products run in torch on the GPU; the draws stay on the host source, so a
    seeded run releases the same decisions as the numpy run (float64 on both devices)."""
    prob = _threshold_problem(_two_groups(1000, 1, d=1))
    opts = dict(alpha=0.1, T=20) if backend == "frank_wolfe" else {}
    a = _solve(prob, pf.DP(1.0, 1e-6, protect="sensitive"), backend, seed=3, **opts)
    b = _solve(prob, pf.DP(1.0, 1e-6, protect="sensitive"), backend, seed=3, device="cuda", **opts)
    assert a.decisions == b.decisions and np.allclose(a.weights, b.weights)
    assert b.certificate.epsilon == pytest.approx(a.certificate.epsilon, rel=1e-12)


@needs_gpu
def test_lagrangian_torch_model_on_cuda_matches_the_cpu_path():
    """lagrangian_sgda with a pf.TorchModel on the GPU: the same Poisson batches (host
    generator), the same float32 arithmetic up to summation order — without noise the released
    checkpoints agree closely and the held-in metrics match; privately the certificate and the
    list of releases are the CPU run's.  The noise-free pair skips the held-out check
    (``holdout=0``): the trained checkpoints are what is compared, and the check may play them
    mixed with a constant rule (a ``ConstantDecision``, not an array)."""
    data = _two_groups(3000, 2)
    prob = _torch_problem(data)
    free = pf.DP(math.inf, protect="sensitive")
    cpu = _solve(prob, free, "lagrangian_sgda", seed=0, epochs=2, holdout=0)
    gpu = _solve(prob, free, "lagrangian_sgda", seed=0, epochs=2, holdout=0, device="cuda")
    for g, c in zip(gpu.decisions, cpu.decisions, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(c), rtol=1e-2, atol=1e-2)
    mc, mg = cpu.metrics(data), gpu.metrics(data)
    assert abs(mc["error"] - mg["error"]) < 0.01
    privacy = pf.DP(1.0, 1e-5, protect="row")
    cpu = _solve(prob, privacy, "lagrangian_sgda", seed=1, epochs=2)
    gpu = _solve(prob, privacy, "lagrangian_sgda", seed=1, epochs=2, device="cuda")
    assert gpu.certificate.epsilon == pytest.approx(cpu.certificate.epsilon, rel=1e-12)
    assert [e.mechanism for e in gpu.certificate.releases] == \
        [e.mechanism for e in cpu.certificate.releases]
    assert abs(gpu.metrics(data)["error"] - cpu.metrics(data)["error"]) < 0.05

