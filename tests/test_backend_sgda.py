"""DP-SGDA on ERMI ([L] Algorithm 1): the ERMI min-max pieces against direct computation, the
per-player private pieces against autograd, multi-class multi-group training, the knob rule, the
certificate, refusals, and the neighbouring-dataset tester with a negative control."""

import math
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is an optional extra")

import privfair as pf  # noqa: E402
from privfair.backends.sgda import ermi as E  # noqa: E402
from privfair.backends import get  # noqa: E402
from privfair.errors import BackendRefusedError, InvalidInputError  # noqa: E402
from privfair.privacy import Accountant, reduced_noise  # noqa: E402
from privfair.privacy.randomness import as_source  # noqa: E402
from privfair.privacy.testing import check_dp  # noqa: E402
from _synthetic import binary as _binary  # noqa: E402

SGDA = "sgda"


@pytest.fixture(autouse=True)
def _one_thread():
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(prev)


# ------------------------------------------------------------------------------ ERMI math
def _soft(rng, n, L):
    Z = rng.normal(size=(n, L))
    return np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)


def _ermi_by_hand(F, a, y, notion, G):
    """Σ_{j,r} p(j,r)²/(p(j)p(r)) − 1 (per label slice for equalized odds, weighted by p(y))."""
    n, L = F.shape
    out = 0.0
    for s in ([None] if notion == "demographic_parity" else range(L)):
        rows = np.ones(n, bool) if s is None else (y == s)
        Fs, as_ = F[rows], a[rows]
        val = -1.0
        for j in range(L):
            pj = Fs[:, j].mean()
            for r in range(G):
                pr = (as_ == r).mean()
                pjr = (Fs[:, j] * (as_ == r)).mean()
                val += pjr ** 2 / (pj * pr)
        out += rows.mean() * val
    return out


@pytest.mark.parametrize("notion", E.NOTIONS)
def test_ermi_is_the_maximum_of_mean_psi_at_w_star(notion):
    rng = np.random.default_rng(0)
    n, L, G = 300, 3, 4
    F, a, y = _soft(rng, n, L), rng.integers(0, G, n), rng.integers(0, L, n)
    c, S = E.slices(notion, y, L)
    counts = np.zeros((G, L))
    np.add.at(counts, (a, y), 1)
    p = E.group_probabilities(counts, notion)                    # exact p̃ = p̂
    direct = E.ermi(F, a, c, p)
    assert direct == pytest.approx(_ermi_by_hand(F, a, y, notion, G), rel=1e-10)
    Ws = E.w_star(F, a, c, p)
    assert E.psi_rows(Ws, F, a, c, p).mean() == pytest.approx(direct, rel=1e-10)
    assert np.linalg.norm(Ws) <= E.w_radius(p, L)                # the projection keeps W*
    for _ in range(5):                                             # strongly concave: W* is the max
        Wp = Ws + 0.1 * rng.normal(size=Ws.shape)
        assert E.psi_rows(Wp, F, a, c, p).mean() < direct
    # the two sides of independence: ERMI vanishes when F does not depend on a
    F_indep = np.tile(F[:1], (n, 1))
    assert E.ermi(F_indep, a, c, p) == pytest.approx(0.0, abs=1e-12)


def _psi_torch(W, F, a, c, p):
    quad = -(W[c] ** 2 * F[:, None, :]).sum(dim=(1, 2))
    lin = 2.0 * (W[c, a] * F).sum(dim=1) / p[c, a].sqrt()
    return quad + lin - 1.0


def _adapters():
    torch.manual_seed(0)
    mlp = pf.TorchModel(lambda: torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(),
                                                    torch.nn.Linear(5, 3)), 4, 3)
    one = pf.TorchModel(lambda: torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(),
                                                    torch.nn.Linear(3, 1)), 4, 2)
    return [("linear-binary", E.LinearAdapter(4, 1), 2), ("linear-softmax", E.LinearAdapter(4, 3), 3),
            ("mlp-softmax", E.ModuleAdapter(mlp), 3), ("mlp-one-logit", E.ModuleAdapter(one), 2)]


@pytest.mark.parametrize("name,adapter,L", _adapters(), ids=lambda v: v if isinstance(v, str) else "")
def test_public_plus_private_pieces_are_the_gradient_of_psi(name, adapter, L):
    """Unclipped, Σ_i ∇θψ_i = public piece (v + k_ref) + private piece k̄, and the W-gradient splits
    into −2W⊙F (public) and 2F/√p̃ at the row's slot (private) — checked against autograd."""
    rng = np.random.default_rng(1)
    n, G, S = 40, 3, L
    X = torch.tensor(rng.normal(size=(n, 4)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, L, n))
    a = torch.tensor(rng.integers(0, G, n))
    c = y.clone()                                                  # equalized-odds slices
    p = torch.tensor(rng.uniform(0.2, 1.0, size=(S, G)), dtype=torch.float32)
    p = p / p.sum(dim=1, keepdim=True)
    W = torch.tensor(rng.normal(size=(S, G, L)), dtype=torch.float32)
    theta = adapter.theta0(torch, "cpu")
    theta = theta + 0.3 * torch.randn(theta.shape, generator=torch.Generator().manual_seed(2))
    # autograd reference
    th = theta.clone().requires_grad_(True)
    Wg = W.clone().requires_grad_(True)
    F = adapter.differentiable_probs(torch, th, X)
    total = _psi_torch(Wg, F, a, c, p).sum()
    g_theta, g_W = torch.autograd.grad(total, (th, Wg))
    # the pieces
    k_ref, kbar, _ = E.private_coefficients(W, p.sqrt())
    v = (k_ref - (W ** 2).sum(dim=1))[c]
    g_ce, _ = adapter.public_grad(torch, theta, X, y, v, 0.0)
    g_pub, F2 = adapter.public_grad(torch, theta, X, y, v, 1.0)
    s_th, F3, clipped = adapter.private_sum(torch, theta, X, kbar[c, a], 1e6)
    assert clipped == 0.0
    assert torch.allclose(g_pub - g_ce + s_th, g_theta, atol=2e-4, rtol=1e-3)
    Fs = torch.zeros(S, L).index_add_(0, c, F2)
    s_w = torch.zeros(S * G, L).index_add_(0, c * G + a, 2.0 * F3 / p.sqrt()[c, a][:, None])
    assert torch.allclose(-2.0 * W * Fs[:, None, :] + s_w.view(S, G, L), g_W, atol=1e-4)


def test_private_theta_piece_is_bounded_for_every_group():
    """Each row's clipped contribution J̃ᵢᵀk̄[c,r] has norm ≤ ζ·max‖k̄‖ whatever its group r, and
    the clip factor does not depend on r."""
    rng = np.random.default_rng(3)
    ad = E.LinearAdapter(3, 4)
    theta = torch.tensor(rng.normal(size=(4, 4)) * 0.1, dtype=torch.float32)
    X = torch.tensor(rng.normal(size=(1, 3)) * 10, dtype=torch.float32)
    W = torch.tensor(rng.normal(size=(1, 5, 4)), dtype=torch.float32)
    p = torch.full((1, 5), 0.2)
    _, kbar, kmax = E.private_coefficients(W, p.sqrt())
    zeta = 0.3
    for r in range(5):
        s, _, frac = ad.private_sum(torch, theta, X, kbar[0, r][None], zeta)
        assert float(s.norm()) <= zeta * kmax * (1 + 1e-5)
        assert frac == 1.0                                           # the big row is clipped, for every r


# ------------------------------------------------------------------------ multi-class, 5 groups
def _multigroup(n, seed):
    """5 groups, 4 classes: the label distribution and the features depend on the group."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 5, n)
    x = rng.normal(size=(n, 6)) + 1.0 * np.eye(5, 6)[g]        # group g shifts feature g
    y = np.argmax(2.0 * x[:, :4] + rng.gumbel(size=(n, 4)), axis=1)
    return pf.Dataset(x, y, sensitive=np.array(list("ABCDE"))[g], labels=[0, 1, 2, 3],
                      group_names=list("ABCDE"))


def _multiclass_dp(P, group):
    """[L] eq. (10) for the randomized classifier of [L] §3 (ŷ = j with probability F_j(x)):
    max over classes and pairs of groups of |P(ŷ = j | g) − P(ŷ = j | g')|."""
    R = np.array([P[group == gi].mean(axis=0) for gi in np.unique(group)])
    return float((R.max(axis=0) - R.min(axis=0)).max())


def test_five_groups_four_classes_reduces_dp_violation():
    data = _multigroup(3000, 0)
    model = pf.TorchModel(lambda: torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(),
                                                      torch.nn.Linear(8, 4)), 6, 4)
    prob = pf.Problem(pf.minimize(pf.rates(model, data).error()))
    kw = dict(backend=SGDA, fairness="demographic_parity", epochs=12, lr=0.5, seed=0)
    privacy = pf.DP(3.0, 1e-5, protect="sensitive")
    base = prob.solve(privacy, lam=0.0, **kw)
    v0 = _multiclass_dp(model.probabilities(base.decision, data.X), data.group)
    err0 = np.mean(model.predict(base.decision, data.X) != data.y)
    # the private runs' error varies with the noise (measured over 8 seeds: 0.35-0.47, against
    # 0.29 without the regularizer): judge the median of three runs, not one draw
    fair = [prob.solve(privacy, lam=8.0, **dict(kw, seed=s)) for s in range(3)]
    v1 = np.median([_multiclass_dp(model.probabilities(f.decision, data.X), data.group)
                    for f in fair])
    err1 = np.median([np.mean(model.predict(f.decision, data.X) != data.y) for f in fair])
    assert v0 > 0.3                                                  # unfair without the regularizer
    assert v1 < 0.4 * v0                                             # ERMI cuts the violation
    assert err0 < 0.35 and err1 < err0 + 0.15                        # at a moderate error cost
    assert base.certificate.epsilon == 0.0                           # λ = 0 reads no group: nothing spent
    assert all(0 < f.certificate.epsilon <= 3.0 for f in fair)


# ------------------------------------------------------------------------------ binary data
def _dp_problem(data, level=0.05, shape="abs"):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=20.0), data)
    gap = r.selection["a"] - r.selection["b"]
    g = {"abs": pf.abs(gap), "lse": pf.lse(pf.abs(gap), eta=400)}[shape]
    return pf.Problem(pf.minimize(r.error()), [g <= level])


def test_knob_rule_picks_the_first_feasible_checkpoint_exactly_at_eps_inf():
    data = _binary(3000, 0)
    prob = _dp_problem(data, level=0.05)
    res = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=SGDA, seed=0, epochs=10)
    r = prob.rates
    g = [float(prob.g[0].value(r.evaluate(d))) for d in res.info["checkpoints"]]
    assert g[0] > 0                                                   # λ = 0 is unfair here
    first = next(i for i, v in enumerate(g) if v <= 0)
    assert res.info["chosen_index"] == first
    assert res.info["chosen_lambda"] == res.info["lambdas"][first] > 0
    assert np.allclose(res.decision, res.info["checkpoints"][first])


def test_lse_constraint_is_accepted_and_equalized_odds_is_detected():
    data = _binary(2000, 1)
    plan = _dp_problem(data, shape="lse").plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA).chosen
    assert plan.params["fairness"] == "demographic_parity"
    r = pf.rates(pf.LinearClassifier(2, radius=20.0), data)
    eo = pf.Problem(pf.minimize(r.error()), [pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]),
                                                        pf.abs(r.tpr["a"] - r.tpr["b"])) <= 0.05])
    p = eo.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA).chosen
    assert p.params["fairness"] == "equalized_odds"
    assert math.isinf(p.predicted_excess_risk)
    text = p.explain()          # equalized odds: the mixture rule (permute-and-flip)
    assert "knob" in text and "permute-and-flip" in text and "stationarity" in text
    assert "knob" in plan.explain() and "AboveThreshold" in plan.explain()


def test_refusals_name_the_reason():
    data = _binary(400, 2)
    r = pf.rates(pf.LinearClassifier(2, radius=20.0), data)
    gap = pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05
    cases = [
        (pf.Problem(pf.minimize(r.error()), [gap]), pf.DP(1.0, 1e-6, protect="row"), "sensitive"),
        (pf.Problem(pf.minimize(r.fp["a"]), [gap]), pf.DP(1.0, 1e-6, protect="sensitive"), "error"),
        (pf.Problem(pf.minimize(r.error()), [pf.abs(r.fp["a"] - r.fp["b"]) <= 0.05]),
         pf.DP(1.0, 1e-6, protect="sensitive"), "joint"),
        (pf.Problem(pf.minimize(r.error()), [gap]), pf.DP(1.0, protect="sensitive"), "δ > 0"),
    ]
    for prob, privacy, why in cases:
        plans = prob.plan(privacy, backend=SGDA)
        assert plans.chosen is None and why in plans.refused[SGDA]
    thr = pf.rates(pf.Thresholds([0.0, 1.0]), data)
    plans = pf.Problem(pf.minimize(thr.error())).plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA)
    assert "LinearClassifier or pf.TorchModel" in plans.refused[SGDA]


def test_torch_model_validation():
    class BN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.bn = torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)

        def forward(self, x):
            return self.bn(self.lin(x))

    with pytest.raises(InvalidInputError, match="buffers"):
        pf.TorchModel(BN(), 3, 2)
    with pytest.raises(InvalidInputError, match="logits"):
        pf.TorchModel(torch.nn.Linear(3, 5), 3, 4)
    C = pf.TorchModel(torch.nn.Linear(3, 1), 3, 2)
    assert C.binary_logit and C.P == 4
    theta = np.array([1.0, 0.0, 0.0, -0.5])
    assert C.predict(theta, np.array([[1.0, 0, 0], [0.0, 0, 0]])).tolist() == [1, 0]
    with pytest.raises(InvalidInputError):
        C.predict(np.zeros(3), np.zeros((1, 3)))


def test_importing_privfair_does_not_import_torch():
    code = ("import sys\n"
            "import privfair as pf, privfair.backends as b\n"
            "assert 'sgda' in b.BACKENDS and hasattr(pf, 'TorchModel')\n"
            "assert 'torch' not in sys.modules\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# ------------------------------------------------------------------------------ privacy
def test_certificate_is_the_accountant_total_and_within_the_request():
    data = _binary(3000, 3)
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    res = _dp_problem(data).solve(privacy, backend=SGDA, seed=0, epochs=4)
    cert = res.certificate
    kinds = [ev.mechanism for ev in cert.releases]
    assert kinds == ["laplace", "subsampled_gaussian", "pure"]        # counts, steps, λ choice
    assert cert.releases[1].count == res.plan.params["T"]
    assert cert.releases[1].neighbouring == "replace" and cert.idealized_numerics
    acc = Accountant(delta=privacy.delta)
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon, rel=1e-9)
    assert cert.epsilon <= privacy.epsilon and cert.delta <= privacy.delta
    noise = res.info["noise"]
    assert noise["z"] > 0 and noise["paper_sigma_w_mean_grad"] > 0


def test_progress_bar_on_long_runs_only(capsys):
    """A bar (to stderr) showing the stage's λ when the run has ≥ 100 steps and progress is
    "always" (or True on a terminal); nothing with progress=False, on short runs, or with
    progress=True when stderr is not a terminal — capsys's is not (a log gets no bar)."""
    prob = _dp_problem(_binary(2000, 0))
    opts = dict(seed=0, epochs=4, batch_size=64, lambdas=[0, 4])      # T ≥ 100
    res = prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, progress="always", **opts)
    err = capsys.readouterr().err
    T = res.plan.params["T"]
    assert T >= 100 and "sgda" in err and f"/{T}" in err and "lam=4" in err
    import warnings

    from privfair.errors import ResultStatusWarning

    with warnings.catch_warnings():
        # the held-out check's status warning names this file (…test_backend_sgda.py), not a bar
        warnings.simplefilter("ignore", ResultStatusWarning)
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, progress=False, **opts)
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, progress="always",
                   **dict(opts, epochs=1))                                      # T = 32
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, progress=True, **opts)
    assert "sgda" not in capsys.readouterr().err


def test_refusal_spends_nothing_and_the_test_knob_is_gone():
    data = _binary(400, 4)
    budget = pf.BudgetFilter(2.0, 1e-6)
    prob = _dp_problem(data)
    with pytest.raises(BackendRefusedError):
        prob.solve(pf.DP(1.0, 1e-6, protect="row"), backend=SGDA, budget=budget)
    assert budget.spent == (0.0, 0.0)
    # the audit's reduced-noise control is a wrapper (privfair.privacy.reduced_noise), not an
    # option of the backend: the old test-only knob is an unknown option, refused before spending
    with pytest.raises(InvalidInputError, match="_noise_multiplier"):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, budget=budget, _noise_multiplier=0.1, epochs=1)
    assert budget.spent == (0.0, 0.0)


def test_every_noise_is_drawn_through_the_plans_schedule():
    """The plan fixes the releases (counts, steps, selection); the run records exactly those
    events, in draw order, and the certificate's claim does not change under reduced_noise."""
    data = _binary(400, 4)
    prob = _dp_problem(data)
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    plan = prob.plan(privacy, backend=SGDA, epochs=1).chosen
    assert list(plan.schedule.releases) == ["counts", "steps", "select"]
    res = prob.solve(privacy, backend=SGDA, seed=0, epochs=1, progress=False)
    assert [ev.mechanism for ev in res.certificate.releases] == [
        ev.mechanism for ev in plan.schedule.events()]
    assert res.certificate.releases[1].scale == pytest.approx(plan.params["z"])
    with reduced_noise(0.1):
        half = prob.solve(privacy, backend=SGDA, seed=0, epochs=1, progress=False)
    assert half.certificate.epsilon == pytest.approx(res.certificate.epsilon)
    assert not np.allclose(half.decisions[0], res.decisions[0])


def test_cuda_device_is_a_typed_error_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip(reason="a GPU is present; bench/dp_fermi_adult.py --gpu measures it")
    prob = _dp_problem(_binary(200, 5))
    with pytest.raises(InvalidInputError, match="CUDA"):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, device="cuda", seed=0, epochs=1)


NO_CUDA = not torch.cuda.is_available()


@pytest.mark.skipif(NO_CUDA, reason="needs a CUDA GPU (none here); the CPU path is tested")
def test_cuda_path_matches_the_cpu_path():
    """device="cuda" runs the same algorithm: without noise (ε = ∞; the Poisson samples come
    from the same host generator) the decisions agree up to float32 arithmetic, and a private
    run records the same certificate and fits as well as the CPU run."""
    data = _binary(3000, 7)
    prob = _dp_problem(data, level=0.05)
    cpu = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=SGDA, seed=0, epochs=3, progress=False)
    gpu = prob.solve(pf.DP(math.inf, protect="sensitive"), backend=SGDA, seed=0, epochs=3, device="cuda",
                     progress=False)
    for g, c in zip(gpu.info["checkpoints"], cpu.info["checkpoints"], strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(c), rtol=1e-3, atol=1e-3)
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    cpu = prob.solve(privacy, backend=SGDA, seed=1, epochs=3, progress=False)
    gpu = prob.solve(privacy, backend=SGDA, seed=1, epochs=3, device="cuda", progress=False)
    assert gpu.certificate.epsilon == pytest.approx(cpu.certificate.epsilon, rel=1e-12)
    assert [e.mechanism for e in gpu.certificate.releases] == \
        [e.mechanism for e in cpu.certificate.releases]
    assert abs(gpu.metrics(data)["error"] - cpu.metrics(data)["error"]) < 0.05


def _neighbours(n_per_group=100):
    """Group a: x = (1, 0), y = 1; group b: x = (−1, 0), y = 0 — predictions differ by group, so
    the fairness gradient is large.  Row 0 alone has a second feature, x = (1, 1): only its own
    terms move w₂, so the released w₂ isolates it.  D' moves row 0 from a to b."""
    x = np.zeros((2 * n_per_group, 2))
    x[:n_per_group, 0], x[n_per_group:, 0], x[0, 1] = 1.0, -1.0, 1.0
    y = np.array([1] * n_per_group + [0] * n_per_group)
    a = np.array(["a"] * n_per_group + ["b"] * n_per_group)
    D = pf.Dataset(x, y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(0, group="b")


def _tiny_problem(data):
    lin = torch.nn.Linear(2, 1)
    with torch.no_grad():                       # row 0: σ'(z) = 0.2, ‖J‖_F = 0.2·√2·√3 ≈ ζ = 0.5
        lin.weight.copy_(torch.tensor([[1.0, 0.0]]))
        lin.bias.fill_(0.0)
    return pf.Problem(pf.minimize(pf.rates(pf.TorchModel(lin, 2, 2), data).error()))


#: q = 1 (batch = n: no sampling randomness, so the noise is all that varies), public p̃ (no count
#: release), one λ (no selection): the output is the last iterate of T = 4 noisy steps
TINY = dict(fairness="demographic_parity", group_probabilities={"a": 0.5, "b": 0.5}, lam=2.0,
            epochs=4, clip=0.5, batch_size=200, theta_share=0.7, average=False)


def _outputs(data, privacy, n_runs, seed, mult=None):
    b = get(SGDA)
    prob = _tiny_problem(data)
    plan = b.plan(prob, prob.analyze(privacy), privacy, dict(TINY))
    src = as_source(seed)
    out = np.empty(n_runs)
    with reduced_noise(1.0 if mult is None else mult):
        for i in range(n_runs):
            out[i] = b.run(plan, rng=src, accountant=None).decisions[0][1]    # the released w₂
    return out


def test_neighbour_tester_passes_and_a_tenth_of_the_noise_is_refuted():
    D, Dp = _neighbours()
    privacy = pf.DP(3.0, 1e-3, protect="sensitive")
    cert = _tiny_problem(D).solve(privacy, backend=SGDA, seed=0, **TINY).certificate
    assert len(cert.releases) == 1 and cert.epsilon <= 3.0
    eps, delta = cert.epsilon, cert.delta
    n = 1000
    honest = check_dp(_outputs(D, privacy, n, 1), _outputs(Dp, privacy, n, 2), eps, delta, bins=10)
    assert honest.passed
    cheat = check_dp(_outputs(D, privacy, n, 3, 0.1), _outputs(Dp, privacy, n, 4, 0.1), eps, delta,
                     bins=10)
    assert not cheat.passed


# ------------------------------------------------------------------ equalized odds (this issue)
def test_conditional_ermi_is_papers_eq5_on_an_enumerated_distribution():
    """[L] App. B eq. (5) on a tiny distribution written out cell by cell: rows (y, a, P(ŷ=1))
    with multiplicities; p(ŷ, s | y) is the per-label joint law of the randomized prediction."""
    cells = [(0, 0, 0.1, 3), (0, 1, 0.3, 1), (0, 0, 0.6, 2), (1, 0, 0.7, 2), (1, 1, 0.9, 1),
             (1, 1, 0.4, 3)]
    y = np.repeat([c[0] for c in cells], [c[3] for c in cells])
    a = np.repeat([c[1] for c in cells], [c[3] for c in cells])
    p1 = np.repeat([c[2] for c in cells], [c[3] for c in cells])
    F = np.column_stack([1 - p1, p1])
    eq5 = 0.0
    for lab in (0, 1):
        ny = sum(c[3] for c in cells if c[0] == lab)
        val = -1.0
        for j in (0, 1):
            pj = sum(c[3] * (c[2] if j else 1 - c[2]) for c in cells if c[0] == lab) / ny
            for s in (0, 1):
                ps = sum(c[3] for c in cells if c[0] == lab and c[1] == s) / ny
                pjs = sum(c[3] * (c[2] if j else 1 - c[2]) for c in cells
                          if c[0] == lab and c[1] == s) / ny
                val += pjs ** 2 / (pj * ps)
        eq5 += ny / len(y) * val
    counts = np.zeros((2, 2))
    np.add.at(counts, (a, y), 1)
    c, S = E.slices("equalized_odds", y, 2)
    p = E.group_probabilities(counts, "equalized_odds")       # p̃(r | y), exact
    assert E.ermi(F, a, c, p) == pytest.approx(eq5, rel=1e-12)
    Ws = E.w_star(F, a, c, p)
    assert E.psi_rows(Ws, F, a, c, p).mean() == pytest.approx(eq5, rel=1e-12)
    # equal per-label rates across groups (equalized odds of the randomized rule) ⇒ 0
    F_eo = np.column_stack([1 - np.where(y == 1, 0.7, 0.2), np.where(y == 1, 0.7, 0.2)])
    assert E.ermi(F_eo, a, c, p) == pytest.approx(0.0, abs=1e-12)


def test_newton_w_step_is_an_average_of_batch_maximisers():
    """With the public curvature scaling, lr_w = 1 lands exactly on the batch's W* (whatever W
    was), and lr_w = η gives (1 − η)W + ηW* — the averaging the docs state."""
    from privfair.backends.sgda.sgda import w_step

    rng = np.random.default_rng(5)
    n, L, G = 400, 2, 3
    F, a, y = _soft(rng, n, L), rng.integers(0, G, n), rng.integers(0, L, n)
    c, S = E.slices("equalized_odds", y, L)
    counts = np.zeros((G, L))
    np.add.at(counts, (a, y), 1)
    p = E.group_probabilities(counts, "equalized_odds")
    wsl = n / (S * np.bincount(c, minlength=S))                  # balanced slice weights
    Wst = E.w_star(F, a, c, p)
    Ft, ct, at = (torch.tensor(v) for v in (F, c, a))
    wt = torch.tensor(wsl)
    psq = torch.tensor(np.sqrt(p)) / wt[:, None]
    W0 = torch.tensor(rng.normal(size=(S, G, L)))
    Fs = torch.zeros(S, L, dtype=torch.float64).index_add_(0, ct, Ft)
    gW = -2.0 * W0 * (Fs * wt[:, None])[:, None, :]
    s_w = torch.zeros(S * G, L, dtype=torch.float64).index_add_(
        0, ct * G + at, 2.0 * Ft / psq[ct, at][:, None]).view(S, G, L)
    one = w_step(W0, gW, s_w, Fs, wt, float(n), 1.0, "newton", 1e9)
    assert np.allclose(one.numpy(), Wst, atol=1e-10)
    half = w_step(W0, gW, s_w, Fs, wt, float(n), 0.3, "newton", 1e9)
    assert np.allclose(half.numpy(), 0.7 * W0.numpy() + 0.3 * Wst, atol=1e-10)


def _eo_problem(data, level=0.05):
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=20.0), data)
    return pf.Problem(pf.minimize(r.error()), [pf.maximum(pf.abs(r.fpr["a"] - r.fpr["b"]),
                                                          pf.abs(r.tpr["a"] - r.tpr["b"]))
                                               <= level])


def test_equalized_odds_defaults_apply_and_options_override_them():
    from privfair.backends.sgda.sgda import eo_defaults

    data = _binary(600, 7)
    b = get(SGDA)
    for prob, want in ((_eo_problem(data), eo_defaults(1.0)), (_dp_problem(data), {})):
        plan = b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), {})
        for k, v in want.items():
            assert plan.run_options[k] == v
        if not want:
            assert plan.run_options["w_step"] == "plain" and plan.run_options["epochs"] == 40
            assert plan.run_options["select"] == "first" and plan.run_options["lr"] == 1.0
    prob = _eo_problem(data)
    plan = b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), {"epochs": 7})
    assert plan.run_options["epochs"] == 7 and plan.run_options["w_step"] == "newton"
    with pytest.raises(InvalidInputError):
        b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), {"w_noise": "bogus"})


def test_formula_is_thm34_rate_with_an_unspecified_constant():
    from privfair.analysis.theorems import evaluate

    data = _binary(600, 8)
    prob = _eo_problem(data)
    privacy = pf.DP(2.0, 1e-6, protect="sensitive")
    plan = get(SGDA).plan(prob, prob.analyze(privacy), privacy, {})
    eq, values = get(SGDA).formula(plan)
    std = {"epsilon": 2.0, "delta": 1e-6, "n": data.n}
    assert evaluate(eq, values, **std) == plan.predicted_excess_risk == math.inf
    assert evaluate(eq, dict(values, C_L=1.0), **std) == pytest.approx(
        plan.params["stationarity_rate"], rel=1e-12)
    assert plan.params["stationarity_rate"] == pytest.approx(
        math.sqrt(max(3, 2 * 2 * 2) * math.log(1e6)) / (2.0 * data.n), rel=1e-12)
    inf_plan = get(SGDA).plan(prob, prob.analyze(pf.DP(math.inf, protect="sensitive")), pf.DP(math.inf, protect="sensitive"), {})
    assert get(SGDA).formula(inf_plan) is None



# ------------------------------------------------- equalized odds: tuned path and the new knob
def _eo_neighbours(n_per_cell=60):
    """Two groups × two labels; group a: x = (1, 0), group b: x = (−1, 0), so the model's
    predictions differ by group inside each label slice (the conditional ERMI's W is far from
    uniform and k̄ is large).  Row 0 (group a, y = 1) alone has x₂ = 1: only its own terms move
    w₂.  D' moves row 0 to group b (same slice y = 1)."""
    n = 4 * n_per_cell
    x = np.zeros((n, 2))
    a = np.array(["a"] * (2 * n_per_cell) + ["b"] * (2 * n_per_cell))
    y = np.array(([1] * n_per_cell + [0] * n_per_cell) * 2)
    x[:, 0] = np.where(a == "a", 1.0, -1.0)
    x[0, 1] = 1.0
    D = pf.Dataset(x, y, sensitive=a, group_names=["a", "b"])
    return D, D.with_row(0, group="b")


#: q = 1, public p̃(r | y), one λ, W's step the batch maximiser (lr_w = 1), so from step 2 on
#: the θ-player's private piece is as large as its bound: the released w₂ moves with a₀
TINY_EO = dict(fairness="equalized_odds", lam=4.0, epochs=4, clip=0.5, batch_size=240,
               theta_share=0.7, average=False, w_step="newton", lr_w=1.0, lr=1.0,
               group_probabilities={(g, lab): 0.5 for g in "ab" for lab in (0, 1)})


def _eo_outputs(data, privacy, n_runs, seed, mult=None):
    b = get(SGDA)
    prob = _tiny_problem(data)
    plan = b.plan(prob, prob.analyze(privacy), privacy, dict(TINY_EO))
    src = as_source(seed)
    with reduced_noise(1.0 if mult is None else mult):
        return np.array([b.run(plan, rng=src, accountant=None).decisions[0][1]
                         for _ in range(n_runs)])


def test_equalized_odds_neighbour_tester_passes_and_a_tenth_of_the_noise_is_refuted():
    D, Dp = _eo_neighbours()
    privacy = pf.DP(3.0, 1e-3, protect="sensitive")
    cert = _tiny_problem(D).solve(privacy, backend=SGDA, seed=0, **TINY_EO).certificate
    assert len(cert.releases) == 1 and cert.epsilon <= 3.0
    eps, delta = cert.epsilon, cert.delta
    n = 1000
    honest = check_dp(_eo_outputs(D, privacy, n, 1), _eo_outputs(Dp, privacy, n, 2), eps, delta,
                      bins=10)
    assert honest.passed
    cheat = check_dp(_eo_outputs(D, privacy, n, 3, 0.1), _eo_outputs(Dp, privacy, n, 4, 0.1),
                     eps, delta, bins=10)
    assert not cheat.passed


@pytest.mark.parametrize("name,adapter,L", _adapters(), ids=lambda v: v if isinstance(v, str) else "")
def test_temperature_pieces_are_the_gradient_of_psi_at_sharpened_probabilities(name, adapter, L):
    """With temperature τ the ERMI reads F_τ = softmax(z/τ): the a-free piece (v + k_ref) and the
    private piece k̄ — both through private_sum, as the backend calls them — sum to autograd's
    ∇θ Σψ(W, F_τ), and ermi_probs is F_τ (τ = 1 gives back F)."""
    rng = np.random.default_rng(5)
    n, G, S, tau = 30, 2, L, 0.4
    X = torch.tensor(rng.normal(size=(n, 4)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, L, n))
    a = torch.tensor(rng.integers(0, G, n))
    p = torch.full((S, G), 1.0 / G)
    W = torch.tensor(rng.normal(size=(S, G, L)), dtype=torch.float32)
    theta = adapter.theta0(torch, "cpu")
    theta = theta + 0.3 * torch.randn(theta.shape, generator=torch.Generator().manual_seed(6))
    F1 = adapter.probs(torch, theta, X)
    adapter.tau = tau
    try:
        th = theta.clone().requires_grad_(True)
        Ft = adapter.differentiable_probs(torch, th, X, tau)
        (g_theta,) = torch.autograd.grad(_psi_torch(W, Ft, a, y, p).sum(), th)
        k_ref, kbar, _ = E.private_coefficients(W, p.sqrt())
        v = (k_ref - (W ** 2).sum(dim=1))[y]
        g_free, F_free, _ = adapter.private_sum(torch, theta, X, v, 1e6)
        g_priv, _, _ = adapter.private_sum(torch, theta, X, kbar[y, a], 1e6)
        assert torch.allclose(g_free + g_priv, g_theta, atol=2e-4, rtol=1e-3)
        assert torch.allclose(F_free, Ft.detach(), atol=1e-6)
        assert torch.allclose(adapter.ermi_probs(torch, theta, X), Ft.detach(), atol=1e-6)
        assert not torch.allclose(Ft.detach(), F1, atol=1e-3)       # τ really sharpens
    finally:
        adapter.tau = 1.0


def _penalized_setup():
    from privfair.backends.sgda import select as SEL

    data = _binary(2000, 8)
    prob = _eo_problem(data, level=0.03)
    rng = np.random.default_rng(9)
    ckpts = [np.array([1.0, 0.0, 0.0])] + [rng.normal(size=3) for _ in range(4)]
    errors = [float(np.mean(prob.rates.decisions.predict(d, data.X) != data.y)) for d in ckpts]
    released = data.counts().astype(float)
    o = {"select": "penalized", "select_penalty": 2.0, "margin": 0.01}
    P = {"epsilon_select": 0.05, "epsilon_count": 1.0}
    return SEL, prob, ckpts, errors, released, o, P


def _select_draws(P, o, src):
    """A fresh door to the selection release (one draw), as the plan's schedule gives it."""
    from privfair.backends.sgda import schedule as SCH
    from privfair.privacy import Schedule, Scheduled

    ev = SCH.select_event(P["epsilon_select"], o["select"], 5, o["select_penalty"])
    return Schedule([Scheduled("select", ev)], P["epsilon_select"], 0.0).open(None, src)


def test_penalized_selection_is_permute_and_flip_on_error_plus_penalty():
    """The private rule's output law is exactly permute-and-flip's on
    u_s = −(err_s + P·max(0, g_s + margin)) with Δu = P·Δg (err is public under protect=
    'sensitive'); at ε = ∞ it is the argmin of the same score."""
    from privfair.privacy import permute_and_flip_probabilities
    from privfair.privacy.testing import goodness_of_fit

    SEL, prob, ckpts, errors, released, o, P = _penalized_setup()
    r = prob.rates
    q = SEL.mass_bounds(r, released, P["epsilon_count"])
    g = SEL.constraint_values(prob, ckpts, q)
    score = -(np.asarray(errors) + 2.0 * np.maximum(g + 0.01, 0.0))
    dg = SEL.sensitivity(prob.g[0], r, q)
    want = permute_and_flip_probabilities(score, 2.0 * dg, P["epsilon_select"])
    assert want.max() < 0.9 and (want > 0.02).sum() >= 2              # a non-trivial law
    src = as_source(11)
    draws = np.array([SEL.choose(prob, ckpts, errors, o, P, released, True,
                                     _select_draws(P, o, src))[0][0][0]
                      for _ in range(3000)])
    assert goodness_of_fit(draws, probabilities=want) > 1e-3
    wrong = permute_and_flip_probabilities(score, dg, P["epsilon_select"])   # Δu without P
    assert goodness_of_fit(draws, probabilities=wrong) < 1e-6          # the test has power
    exact, info = SEL.choose(prob, ckpts, errors, o, P, released, False, None)
    assert exact == ((int(np.argmax(score)), 1.0),) and info["selection"] == "exact"


def _mixture_scores_by_evaluate_mixture(SEL, prob, ckpts, errors, q, penalty, margin):
    """The mixture rule's scores, recomputed through Rates.evaluate_mixture (another code path)."""
    cands = SEL.candidates(len(ckpts), "mixture")
    out = []
    for c in cands:
        ell = prob.rates.evaluate_mixture([ckpts[i] for i, _ in c], [w for _, w in c],
                                          group_mass_bound=q)
        err = sum(w * errors[i] for i, w in c)
        out.append(-(err + penalty * max(0.0, float(prob.g[0].value(ell)) + margin)))
    return cands, np.array(out)


def test_mixture_selection_is_permute_and_flip_over_checkpoints_and_their_mixtures():
    """select="mixture": the candidates are the checkpoints and every two-checkpoint mixture on
    the public grid; the law is permute-and-flip's on the mixtures' scores with Δu = P·Δg."""
    from privfair.privacy import permute_and_flip_probabilities
    from privfair.privacy.testing import goodness_of_fit

    SEL, prob, ckpts, errors, released, o, P = _penalized_setup()
    o = dict(o, select="mixture")
    q = SEL.mass_bounds(prob.rates, released, P["epsilon_count"])
    cands, score = _mixture_scores_by_evaluate_mixture(SEL, prob, ckpts, errors, q, 2.0, 0.01)
    assert len(cands) == 5 + 10 * len(SEL.MIX_GRID)
    dg = SEL.sensitivity(prob.g[0], prob.rates, q)
    want = permute_and_flip_probabilities(score, 2.0 * dg, P["epsilon_select"])
    assert want.max() < 0.5 and (want > 0.01).sum() >= 5              # a non-trivial law
    src = as_source(12)
    code = {c: k for k, c in enumerate(cands)}
    draws = np.array([code[SEL.choose(prob, ckpts, errors, o, P, released, True,
                                     _select_draws(P, o, src))[0]]
                      for _ in range(4000)])
    assert goodness_of_fit(draws, probabilities=want) > 1e-3
    wrong = permute_and_flip_probabilities(score, dg, P["epsilon_select"])   # Δu without P
    assert goodness_of_fit(draws, probabilities=wrong) < 1e-6          # the test has power
    exact, _ = SEL.choose(prob, ckpts, errors, o, P, released, False, None)
    assert exact == cands[int(np.argmax(score))]


def test_mixture_scores_move_by_at_most_the_claimed_sensitivity_between_neighbours():
    """Exact check of Δu = P·Δg for every mixture candidate: move each row of the smallest
    (group, label) cell to the other group (protect='sensitive'), with the released counts —
    hence the clamped denominators — held fixed (they are a post-processed release)."""
    SEL, prob, ckpts, errors, released, o, P = _penalized_setup()
    data = prob.rates.data
    q = SEL.mass_bounds(prob.rates, released, P["epsilon_count"])
    dg = SEL.sensitivity(prob.g[0], prob.rates, q)
    _, base = _mixture_scores_by_evaluate_mixture(SEL, prob, ckpts, errors, q, 2.0, 0.01)
    worst = 0.0
    for i in range(0, data.n, 97):
        other = data.groups[1 - int(data.group[i])]
        prob2 = _eo_problem(data.with_row(i, group=other), level=0.03)
        _, moved = _mixture_scores_by_evaluate_mixture(SEL, prob2, ckpts, errors, q, 2.0, 0.01)
        worst = max(worst, float(np.abs(moved - base).max()))
    assert 0 < worst <= 2.0 * dg * (1 + 1e-9)


def test_equalized_odds_defaults_follow_the_public_budget_and_certificate_is_the_total():
    from privfair.backends.sgda.sgda import EO_DEFAULTS, EO_DEFAULTS_LOW, EO_LOW_EPSILON

    data = _binary(3000, 10)
    b = get(SGDA)
    prob = _eo_problem(data, level=0.03)
    for eps, want in ((EO_LOW_EPSILON / 2, EO_DEFAULTS_LOW), (EO_LOW_EPSILON, EO_DEFAULTS)):
        plan = b.plan(prob, prob.analyze(pf.DP(eps, 1e-6, protect="sensitive")), pf.DP(eps, 1e-6, protect="sensitive"), {})
        assert {k: plan.run_options[k] for k in want} == want
    plan = b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), {"select": "first"})
    assert plan.run_options["select"] == "first" and plan.run_options["lr"] == 10.0
    with pytest.raises(InvalidInputError):
        b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), {"select": "best"})
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    res = prob.solve(privacy, backend=SGDA, seed=0, epochs=2)
    cert = res.certificate
    assert [ev.mechanism for ev in cert.releases] == ["laplace", "subsampled_gaussian", "pure"]
    assert "permute-and-flip" in cert.releases[2].theorem
    assert res.info["selection"] == "permute-and-flip"
    acc = Accountant(delta=privacy.delta)
    acc.extend(cert.releases)
    assert acc.total().epsilon == pytest.approx(cert.epsilon, rel=1e-9)
    assert cert.epsilon <= privacy.epsilon and cert.delta <= privacy.delta


# ------------------------------------------------------------------------------ options
_BAD_OPTIONS = [
    ("epochs", float("nan")), ("epochs", float("inf")), ("epochs", 0), ("epochs", -1),
    ("epochs", True), ("epochs", "10"),
    ("batch_size", float("nan")), ("batch_size", float("inf")), ("batch_size", 0.5),
    ("batch_size", 0), ("batch_size", 100.5), ("batch_size", True), ("batch_size", "64"),
    ("lam", "abc"), ("lam", "8"), ("lam", True), ("lam", -1.0), ("lam", float("nan")),
    ("lam", float("inf")), ("lam", [1.0, 2.0]), ("lam", {1: 2}),
    ("lambdas", "abc"), ("lambdas", [[0, 1], [2, 3]]), ("lambdas", {1: 2}), ("lambdas", []),
    ("lambdas", {0.0, 1.0}), ("lambdas", [0, True]), ("lambdas", [0, -1]),
    ("lambdas", [0, float("nan")]), ("lambdas", np.zeros((2, 2))), ("lambdas", b"01"),
    ("average", "no"), ("average", 1), ("average", None),
    ("temperature", 0), ("temperature", float("nan")), ("temperature", "1"),
    ("lr", float("inf")), ("lr", True), ("lr", 0), ("lr_w", -1.0), ("clip", float("nan")),
    ("clip", 0), ("theta_share", 1.0), ("theta_share", 0), ("count_share", 0.9),
    ("select_share", float("nan")), ("select_penalty", 0), ("select_penalty", "3"),
    ("margin", -0.1), ("margin", float("nan")), ("margin", "none"), ("margin", True),
    ("select", "best"), ("select", None), ("select", ["first"]),
    ("w_step", "adam"), ("w_step", 1), ("w_noise", "bogus"), ("slice_weights", "even"),
    ("fairness", "parity"), ("fairness", ["demographic_parity"]),
    ("w_radius", 0), ("w_radius", float("inf")), ("w_radius", "1"),
    ("group_probabilities", [0.5, 0.5]), ("group_probabilities", "a"),
    ("group_probabilities", {"a": "x", "b": 0.5}), ("group_probabilities", {"a": 0.5}),
    ("group_probabilities", {"a": 0.5, "b": True}), ("group_probabilities", {"a": 0.5, "b": 0}),
    ("group_probabilities", {"a": 0.5, "b": 0.5, "c": 0.1}),
]


@pytest.mark.parametrize("field,value", _BAD_OPTIONS,
                         ids=[f"{k}={v!r}"[:40] for k, v in _BAD_OPTIONS])
def test_bad_options_are_typed_errors_naming_the_option(field, value):
    data = _binary(400, 11)
    prob = _dp_problem(data)
    b = get(SGDA)
    options = {field: value}
    if field == "group_probabilities":
        options["lam"] = 2.0          # a fixed λ: public p̃ needs no group-mass bound then
    with pytest.raises(InvalidInputError) as err:
        b.plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), options)
    assert err.value.field == field
    # and through solve(): the same typed error, nothing spent
    budget = pf.BudgetFilter(2.0, 1e-6)
    with pytest.raises(InvalidInputError):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, budget=budget, **options)
    assert budget.spent == (0.0, 0.0)


def test_count_and_select_shares_leave_budget_for_the_steps():
    data = _binary(400, 11)
    prob = _dp_problem(data)
    with pytest.raises(InvalidInputError, match="below 1"):
        get(SGDA).plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"),
                       {"count_share": 0.5, "select_share": 0.5})


_GOOD_OPTIONS = [
    ({"epochs": 2.5}, "epochs", 2.5), ({"epochs": np.int64(3)}, "epochs", 3.0),
    ({"batch_size": 100.0}, "batch_size", 100), ({"batch_size": np.int64(64)}, "batch_size", 64),
    ({"lam": 2}, "path", (2.0,)), ({"lam": np.float32(0.5)}, "path", (0.5,)),
    ({"lam": np.array(4.0)}, "path", (4.0,)), ({"lambdas": 3}, "path", (3.0,)),
    ({"lambdas": [0, 1, 4]}, "path", (0.0, 1.0, 4.0)),
    ({"lambdas": np.array([0.0, 2.0])}, "path", (0.0, 2.0)),
    ({"lambdas": (0.0, 8.0)}, "path", (0.0, 8.0)),
    ({"average": False}, "average", False), ({"average": np.bool_(True)}, "average", True),
    ({"margin": 0}, "margin", 0.0), ({"margin": "auto"}, "margin", "auto"),
    ({"margin": 0.02}, "margin", 0.02), ({"temperature": 0.5}, "temperature", 0.5),
    ({"w_radius": 3}, "w_radius", 3.0), ({"select": "penalized"}, "select", "penalized"),
    ({"w_step": "newton", "lr_w": 0.5}, "w_step", "newton"),
    ({"slice_weights": "proportional"}, "slice_weights", "proportional"),
    ({"fairness": "demographic_parity"}, "fairness", "demographic_parity"),
    ({"group_probabilities": {"a": 0.6, "b": 0.4}, "lam": 1.0}, "group_probabilities",
     {"a": 0.6, "b": 0.4}),
]


@pytest.mark.parametrize("options,key,want", _GOOD_OPTIONS,
                         ids=[repr(o)[:40] for o, _, _ in _GOOD_OPTIONS])
def test_good_options_are_accepted(options, key, want):
    data = _binary(400, 11)
    prob = _dp_problem(data)
    plan = get(SGDA).plan(prob, prob.analyze(pf.DP(1.0, 1e-6, protect="sensitive")), pf.DP(1.0, 1e-6, protect="sensitive"), options)
    assert plan.run_options[key] == want
    assert type(plan.run_options[key]) is type(want)


def test_option_names_list_every_option_sgda_reads():
    import pathlib
    import re

    from privfair.backends.sgda.sgda import SGDABackend

    names = set(SGDABackend.option_names)
    assert set(get(SGDA).option_names) == names
    src = pathlib.Path(SGDABackend.__module__.replace("privfair.", "", 1).replace(".", "/"))
    root = pathlib.Path(__file__).resolve().parents[1]
    read = set()
    for f in ("sgda.py", "options.py", "select.py", "train.py"):
        text = (root / src.parent / f).read_text()
        read |= set(re.findall(r'\bo(?:\.get\(|\[)"(\w+)"', text))
        read |= set(re.findall(r'\boptions(?:\.get\(|\[)"(\w+)"', text))
    assert read - {"path"} <= names, read - {"path"} - names
    assert not names & {"device", "seed", "progress", "budget", "alpha"}


def test_private_choice_without_group_mass_bound_is_refused_before_training(monkeypatch):
    """Public p̃ (no count release) + no declared group-mass bound + the default λ path at
    ε = 1: the choice of λ has no sensitivity — refused at plan time, before any draw."""
    from privfair.backends.sgda import train as _sgda_train

    def boom(*args, **kwargs):
        raise AssertionError("training ran before the refusal")

    monkeypatch.setattr(_sgda_train, "train", boom)
    data = _binary(400, 12)
    prob = _dp_problem(data)
    assert prob.rates.group_mass_bound is None
    p = {g: 1 / len(data.groups) for g in data.groups}
    budget = pf.BudgetFilter(2.0, 1e-6)
    with pytest.raises(BackendRefusedError, match="group-mass bound"):
        prob.solve(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, budget=budget, group_probabilities=p)
    assert budget.spent == (0.0, 0.0)
    with pytest.raises(BackendRefusedError, match="group-mass bound"):
        prob.plan(pf.DP(1.0, 1e-6, protect="sensitive"), backend=SGDA, group_probabilities=p)
    # not refused: a fixed λ (no choice), ε = ∞ (exact choice), a declared bound, released counts
    b = get(SGDA)
    ok = [(prob, pf.DP(1.0, 1e-6, protect="sensitive"), {"group_probabilities": p, "lam": 2.0}),
          (prob, pf.DP(math.inf, protect="sensitive"), {"group_probabilities": p}),
          (prob, pf.DP(1.0, 1e-6, protect="sensitive"), {})]
    r = pf.rates(pf.LinearClassifier(data.n_features, radius=20.0), data, group_mass_bound=0.1)
    bounded = pf.Problem(pf.minimize(r.error()),
                         [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.05])
    ok.append((bounded, pf.DP(1.0, 1e-6, protect="sensitive"), {"group_probabilities": p}))
    for pr, privacy, options in ok:
        b.plan(pr, pr.analyze(privacy), privacy, options)


# --------------------------------------------------------- the W-player's centred release


def _w_inputs(rng, n, G, L=2, S=2):
    F = torch.tensor(_soft(rng, n, L))
    cb, ab = torch.tensor(rng.integers(0, S, n)), torch.tensor(rng.integers(0, G, n))
    psq = torch.tensor(rng.uniform(0.2, 1.0, size=(S, G)), dtype=torch.float64)
    return F, cb, ab, psq


@pytest.mark.parametrize("G", [2, 3, 5])
def test_centred_w_release_is_the_slot_sum_and_its_row_pieces_have_the_claimed_norm(G):
    from privfair.backends.sgda.train import w_noise_factor, w_release

    rng = np.random.default_rng(G)
    S, L = 2, 2
    F, cb, ab, psq = _w_inputs(rng, 300, G)
    exact = w_release(torch, F, cb, ab, None, psq, None, "per_slot")
    # with the group totals of B_t itself in place of the public batch's, the centred release
    # without noise is exactly the per-slot sum: the centring loses nothing the totals restore
    Fs = torch.zeros(S, L, dtype=F.dtype).index_add_(0, cb, F)
    assert torch.allclose(w_release(torch, F, cb, ab, Fs, psq, None, "centered"), exact,
                          atol=1e-12)
    # one row's piece F ⊗ (e_a − 1/G) has norm √(1 − 1/G)·‖F‖ for every group a, and moving the
    # row between two groups moves the centred sums by √2·‖F‖ (orthogonal pieces)
    f = F[0]
    pieces = [torch.outer(torch.eye(G, dtype=f.dtype)[a] - 1.0 / G, f) for a in range(G)]
    for a in range(G):
        assert float(pieces[a].norm()) == pytest.approx(math.sqrt(1 - 1 / G) * float(f.norm()))
    assert float((pieces[0] - pieces[1]).norm()) == pytest.approx(math.sqrt(2) * float(f.norm()))
    # the noise: z_W·√(1 − 1/G) times the centring of N(0, I) — sums to 0 over the groups and has
    # per-slot variance z_W²(1 − 1/G)², i.e. std z_W·(1 − 1/G) = w_noise_factor in A's units
    zw, m = 3.0, 20000
    N = zw * torch.tensor(rng.normal(size=(m, S, G, L)))
    noisy = torch.stack([w_release(torch, F, cb, ab, Fs, psq, N[k], "centered")
                         for k in range(m)])
    dA = (noisy - exact) * psq[None, :, :, None] / 2.0              # back to A's units
    assert float(dA.sum(dim=2).abs().max()) < 1e-9
    std = float(dA.std(dim=0).mean())
    assert std == pytest.approx(zw * w_noise_factor("centered", G), rel=0.02)
    assert w_noise_factor("per_slot", G) == 1.0


def _w_neighbour_outputs(a0, zw, n_runs, seed, mult=1.0):
    """The centred release's coordinate (slice 0, group 0, label 1) in A's units, one row with
    F = (0, 1) in group a0, 20 other fixed rows; q = 1 (every row in the batch)."""
    from privfair.backends.sgda.train import w_release

    F = torch.tensor([[0.0, 1.0]] + [[0.6, 0.4]] * 20, dtype=torch.float64)
    cb = torch.zeros(21, dtype=torch.long)
    ab = torch.tensor([a0] + [0, 1] * 10)
    psq = torch.ones(1, 2, dtype=torch.float64)
    Fs = torch.zeros(1, 2, dtype=torch.float64).index_add_(0, cb, F)   # public: a-free
    rng = np.random.default_rng(seed)
    out = np.empty(n_runs)
    for k in range(n_runs):
        N = mult * zw * torch.tensor(rng.normal(size=(1, 2, 2)))
        out[k] = float(w_release(torch, F, cb, ab, Fs, psq, N, "centered")[0, 0, 1]) / 2.0
    return out


def test_centred_w_release_passes_the_neighbour_tester_at_the_accountants_epsilon():
    """Moving one row between the two groups, with the noise the accountant's event assumes
    (per-row norm 1/z_W, replace, q = 1): the tester accepts the accountant's ε; half the noise
    is refuted at the same ε (the negative control)."""
    from privfair.privacy import subsampled_gaussian_event

    zw, delta = 2.0, 1e-3
    acc = Accountant(delta=delta)
    acc.record(subsampled_gaussian_event(zw, 1.0, 1.0, neighbouring="replace", label="W"))
    eps = acc.total().epsilon
    n = 40000
    honest = check_dp(_w_neighbour_outputs(0, zw, n, 1), _w_neighbour_outputs(1, zw, n, 2),
                      eps, delta, bins=20)
    assert honest.passed
    cheat = check_dp(_w_neighbour_outputs(0, zw, n, 3, 0.5), _w_neighbour_outputs(1, zw, n, 4, 0.5),
                     eps, delta, bins=20)
    assert not cheat.passed


def test_average_false_releases_each_stages_last_iterate():
    """average=False is the last iterate of the stage (the tests' TINY runs and the audit
    instance rely on it); it used to be the mean of every iterate, which halves a shift that
    grows over the steps while keeping ~1/√3 of the noise."""
    from privfair.backends.sgda import ermi as E

    D, _ = _neighbours()
    prob = _tiny_problem(D)
    b = get(SGDA)
    privacy = pf.DP(1.0, 1e-3, protect="sensitive")
    plan = b.plan(prob, prob.analyze(privacy), privacy, dict(TINY, epochs=6))
    seen = []
    orig = E.LinearAdapter.project

    def project(self, torch, theta):
        out = orig(self, torch, theta)
        seen.append(out.detach().cpu().numpy().ravel().copy())
        return out
    try:
        E.LinearAdapter.project = project
        res = b.run(plan, rng=as_source(0), accountant=None, progress=False)
    finally:
        E.LinearAdapter.project = orig
    assert len(seen) == 6
    assert np.allclose(np.ravel(res.decisions[0]), seen[-1])
    assert not np.allclose(seen[-1], np.mean(seen, axis=0))


def test_batches_gathered_from_the_rows_give_the_same_fit_as_the_design(monkeypatch):
    """#19: above DESIGN_CAP_BYTES a linear model's batches are gathered from the rows per step
    (no n × (d + 1) design, no copy of X); the fit is the same, bit for bit (the same float32
    rows in the same order, the same Poisson batches), with the held-out split's training part
    read through its row source."""
    from privfair.backends.sgda import train as T

    data = _binary(3000, 0)
    prob = _dp_problem(data, level=0.05)
    privacy = pf.DP(1.0, 1e-6, protect="sensitive")
    a = prob.solve(privacy, backend=SGDA, seed=3, epochs=4)
    monkeypatch.setattr(T, "DESIGN_CAP_BYTES", 0)

    def no_design(*args, **kw):
        raise AssertionError("the design was built above the cap")
    monkeypatch.setattr(E.LinearAdapter, "design", no_design)
    b = prob.solve(privacy, backend=SGDA, seed=3, epochs=4)
    assert np.array_equal(a.decision, b.decision)
    assert a.info["train_errors"] == b.info["train_errors"]
