"""The ERMI regularizer of [L] (Lowy, Gupta & Razaviyayn, ICLR 2023) and the per-row gradient
pieces the ``sgda`` backend releases, for linear models (closed forms) and any torch module
(``torch.func``).

Notation.  Rows i have features x_i, label y_i, sensitive attribute a_i ∈ [G] and a *slice*
c_i: c_i = 0 for demographic parity (S = 1 slice), c_i = y_i for equalized odds (S = L slices,
the conditional ERMI of [L] App. B).  F(x; θ) ∈ Δ_L are the model's class probabilities,
p̃[c, r] > 0 the (released or public) probability of group r in slice c, W ∈ R^{S×G×L}.

[L] Thm C.1 (Lowy et al. 2022a), per row::

    ψ_i(θ, W) = −Σ_{r,j} W[c_i,r,j]² F_j(x_i) + 2 Σ_j W[c_i,a_i,j] F_j(x_i) / √p̃[c_i,a_i] − 1

(the paper's −Tr(W E[ŷŷᵀ|x] Wᵀ) + 2 Tr(W E[ŷsᵀ|x,s] P_s^{-1/2}) − 1, written out).  Its mean is
strongly concave in W (while every p̂(ŷ = j | c) > 0) and its maximum is the (conditional) ERMI

    max_W (1/n) Σ_i ψ_i = Σ_c (n_c/n) [Σ_{j,r} p̂(j, r | c)² / (p̂(j | c) p̃(r | c)) − 1],

attained at W*[c,r,j] = p̂(j, r | c) / (√p̃(r|c) p̂(j|c)) (p̂ the empirical frequencies of the
soft predictions; with p̃ = p̂ this is [L]'s (ERMI) / (5)).

Which pieces read a_i (the private attribute under protect="sensitive"):

* ∇_W ψ_i = −2 W[c_i] ⊙ F_i (every r)            — public given θ, W
          + 2 F_i / √p̃[c_i,a_i] at slot (c_i, a_i) — private; ‖·‖₂ ≤ 2/√min p̃ since ‖F‖₂ ≤ 1
* ∇_θ ψ_i = J_iᵀ (v_i + k_ref[c_i]), v_i = −Σ_r W[c_i,r,:]²   — public (a-free)
          + J_iᵀ k̄[c_i,a_i]                                 — private
  with J_i = ∂F(x_i)/∂θ (L × P), k = 2W/√p̃, k_ref[c] the midrange of k[c, r, :] over r
  (public) and k̄ = k − k_ref.  Since Σ_j F_j = 1, 1ᵀJ_i = 0, so k̄ may be centred per slot
  (minus its mean over labels) without changing J_iᵀk̄.

Both θ-pieces are clipped *a-independently*: J_i is scaled to Frobenius norm ≤ ζ (the factor
f_i depends on x_i and θ only), so the private contribution J̃_iᵀ k̄[c_i,a_i] has norm
≤ ζ·max_{c,r}‖k̄[c,r]‖ whatever a_i is, groups are never clipped differently, and the sum of the
two pieces is the gradient of Σ_i f_i ψ_i — a reweighting by public factors, not a bias
towards the reference k_ref.
"""

from __future__ import annotations

import math

import numpy as np

NOTIONS = ("demographic_parity", "equalized_odds")


# ----------------------------------------------------------------------------- the math (numpy)
def slices(notion: str, y, n_labels: int):
    """(c (n,), S): the slice of every row and the number of slices."""
    y = np.asarray(y, dtype=np.int64)
    if notion == "demographic_parity":
        return np.zeros_like(y), 1
    return y.copy(), int(n_labels)


def group_probabilities(counts, notion: str) -> np.ndarray:
    """p̃ (S, G) from group-label counts (G, L) (released or exact): p̃(r) for demographic parity,
    p̃(r | y) for equalized odds.  Counts are floored at one row (post-processing)."""
    C = np.maximum(np.asarray(counts, dtype=float), 1.0)
    if notion == "demographic_parity":
        g = C.sum(axis=1)
        return (g / g.sum())[None, :]
    return (C / C.sum(axis=0, keepdims=True)).T


def _freqs(F, a, c, S, G):
    F = np.asarray(F, dtype=float)
    n, L = F.shape
    joint = np.zeros((S, G, L))
    np.add.at(joint, (np.asarray(c), np.asarray(a)), F)
    marg = joint.sum(axis=1)                                   # (S, L): Σ_{i in c} F_ij
    nc = np.bincount(np.asarray(c), minlength=S).astype(float)
    return joint, marg, nc, n


def ermi(F, a, c, p, S=None, G=None) -> float:
    """The (conditional) ERMI of soft predictions F (n, L) against a, computed directly:
    Σ_c (n_c/n)[Σ_{j,r} p̂(j,r|c)² / (p̂(j|c) p̃(r|c)) − 1]."""
    p = np.asarray(p, dtype=float)
    S, G = p.shape if S is None else (S, G)
    joint, marg, nc, n = _freqs(F, a, c, S, G)
    total = 0.0
    for s in range(S):
        if nc[s] == 0:
            continue
        pj = marg[s] / nc[s]
        pjr = joint[s] / nc[s]
        ok = pj > 0
        val = float((pjr[:, ok] ** 2 / (pj[ok][None, :] * p[s][:, None])).sum()) - 1.0
        total += nc[s] / n * val
    return total


def psi_rows(W, F, a, c, p) -> np.ndarray:
    """ψ_i(θ, W) for every row (see the module docstring)."""
    W, F, p = (np.asarray(v, dtype=float) for v in (W, F, p))
    a, c = np.asarray(a), np.asarray(c)
    quad = -(W[c] ** 2 * F[:, None, :]).sum(axis=(1, 2))
    lin = 2.0 * (W[c, a] * F).sum(axis=1) / np.sqrt(p[c, a])
    return quad + lin - 1.0


def w_star(F, a, c, p) -> np.ndarray:
    """The maximiser W* of the mean of ψ (zero in slices or labels with no mass)."""
    p = np.asarray(p, dtype=float)
    S, G = p.shape
    joint, marg, nc, _ = _freqs(F, a, c, S, G)
    with np.errstate(divide="ignore", invalid="ignore"):
        W = joint / (np.sqrt(p)[:, :, None] * marg[:, None, :])
    return np.nan_to_num(W, nan=0.0, posinf=0.0, neginf=0.0)


def w_radius(p, n_labels: int) -> float:
    """A radius D of the Frobenius ball W is projected on that contains W* (with p̃ = p̂):
    ‖W*[c]‖²_F = Σ_j Σ_r p(r|j,c)²/p̃(r|c) ≤ L / min p̃, so ‖W*‖_F ≤ √(S·L / min p̃)."""
    p = np.asarray(p, dtype=float)
    return math.sqrt(p.shape[0] * n_labels / float(p.min()))


# ------------------------------------------------------------------ gradient pieces (torch)
def private_coefficients(W, p_sqrt):
    """Split k = 2W/√p̃ into a public reference and a private deviation.

    Returns (k_ref (S, L), kbar (S, G, L), max_{c,r} ‖kbar[c,r]‖): k_ref[c] is the midrange of
    k[c, r, :] over the groups r (public: it reads W and p̃ only), kbar = k − k_ref centred over
    labels.  J_iᵀk[c_i,a_i] = J_iᵀk_ref[c_i] (a-free: goes with the public gradient) +
    J_iᵀkbar[c_i,a_i] (private), and the private bound is the largest deviation from the
    reference — for two groups half the distance between them."""
    k = 2.0 * W / p_sqrt[:, :, None]
    k_ref = 0.5 * (k.max(dim=1).values + k.min(dim=1).values)
    kbar = k - k_ref[:, None, :]
    kbar = kbar - kbar.mean(dim=2, keepdim=True)
    return k_ref, kbar, float(kbar.norm(dim=2).max())


class LinearAdapter:
    """Logits z = Θ x̂ with x̂ = (x, 1); Θ ∈ R^{K×(d+1)}, K = 1 (one logit, binary) or L.

    ``layout="wb"``: the decision is Θ flattened row-major (for K = 1 that is (w, b), the
    LinearClassifier's vector); ``layout="linear"``: torch.nn.Linear's (weight, bias) order.
    Every gradient is in closed form (no per-row autograd)."""

    def __init__(self, d, K, theta0=None, radius=None, layout="wb"):
        self.d, self.K, self.radius, self.layout = int(d), int(K), radius, layout
        self.P = self.K * (self.d + 1)
        self._theta0 = theta0
        self.tau = 1.0          # ERMI temperature: ψ reads F_τ = softmax(z/τ) (the CE reads F)

    def theta0(self, torch, device):
        if self._theta0 is None:
            return torch.zeros(self.K, self.d + 1, device=device)
        return self.from_decision(torch, self._theta0, device)

    def from_decision(self, torch, v, device):
        v = torch.as_tensor(np.asarray(v, dtype=np.float64), dtype=torch.float32, device=device)
        if self.layout == "wb":
            return v.reshape(self.K, self.d + 1).clone()
        Wt, b = v[: self.K * self.d].reshape(self.K, self.d), v[self.K * self.d:]
        return torch.cat([Wt, b[:, None]], dim=1)

    def to_decision(self, theta) -> np.ndarray:
        t = theta.detach().double().cpu().numpy()
        if self.layout == "wb":
            return t.reshape(-1)
        return np.concatenate([t[:, :-1].reshape(-1), t[:, -1]])

    def design(self, torch, X, device=None, dtype=None):
        """The design x̂ = (x, 1) of every row, built once: an n×(d+1) tensor the training loop
        gathers batches from with ``index_select`` (#19: gathering rows of X and concatenating
        an intercept column per step cost ~5.5× a gather from a design built once).  ``X`` a
        numpy array or a tensor (converted chunk by chunk, no full-size temporary), or a row
        source of :mod:`privfair.data.passes` (``Dataset.rows()``: its chunks are written in
        place, so the training part of the held-out split is never gathered into a copy of X —
        at 10⁷ × 101 rows that copy was 6.5 GB)."""
        dtype = dtype or torch.float32
        if hasattr(X, "chunks"):
            parts = ((c.start, c.X) for c in X.chunks())
            n = X.n
            device = device if device is not None else "cpu"
        else:
            step = max(1, (8 << 20) // (4 * (self.d + 1)))
            n = X.shape[0]
            parts = ((s, X[s:s + step]) for s in range(0, n, step))
            device = device if device is not None else getattr(X, "device", "cpu")
        out = torch.empty(n, self.d + 1, dtype=dtype, device=device)
        for s, part in parts:
            part = part if torch.is_tensor(part) else torch.from_numpy(np.ascontiguousarray(part))
            out[s:s + part.shape[0], :self.d] = part.to(dtype=dtype, device=device)
        out[:, self.d] = 1.0
        return out

    def _xhat(self, torch, X):
        """x̂ = (x, 1) of the rows X; rows of :meth:`design` (d + 1 columns) already are."""
        if X.shape[1] == self.d + 1:
            return X
        return torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype, device=X.device)], dim=1)

    def _probs(self, torch, z):
        if self.K == 1:
            s = torch.sigmoid(z[:, 0])
            return torch.stack([1.0 - s, s], dim=1)
        return torch.softmax(z, dim=1)

    def probs(self, torch, theta, X):
        return self._probs(torch, self._xhat(torch, X) @ theta.T)

    def ermi_probs(self, torch, theta, X):
        """F_τ(x) = softmax(z/τ): the probabilities ψ reads (τ = 1: F)."""
        return self._probs(torch, self._xhat(torch, X) @ theta.T / self.tau)

    def differentiable_probs(self, torch, theta, X, tau=1.0):
        """F_τ(x) = softmax(z/τ) at the temperature ``tau``, differentiable in θ (autograd: the
        reference the closed-form gradients are checked against)."""
        return self._probs(torch, self._xhat(torch, X) @ theta.T / tau)

    def public_grad(self, torch, theta, X, y, v, lam):
        """∇_θ Σ_i [CE(x_i, y_i) + λ v_i·F(x_i)] and F on the rows (closed form)."""
        Xh = self._xhat(torch, X)
        z = Xh @ theta.T
        F = self._probs(torch, z)
        if self.K == 1:
            s = F[:, 1]
            gz = s - y.to(s.dtype)
            if lam:
                gz = gz + lam * (v[:, 1] - v[:, 0]) * s * (1.0 - s)
            gz = gz[:, None]
        else:
            gz = F - torch.nn.functional.one_hot(y, self.K).to(F.dtype)
            if lam:
                Fv = (F * v).sum(dim=1, keepdim=True)
                gz = gz + lam * (F * v - F * Fv)
        return gz.T @ Xh, F

    def private_sum(self, torch, theta, X, kbar_rows, zeta):
        """Σ_i J̃_iᵀ k̄_i with J_i = ∂F_τ(x_i)/∂θ scaled to ‖J_i‖_F ≤ ζ, F_τ, and the fraction of
        rows clipped (F_τ = softmax(z/τ), so J_i = (diag F_τ − F_τF_τᵀ) x̂_iᵀ / τ)."""
        Xh = self._xhat(torch, X)
        F = self.ermi_probs(torch, theta, X)
        xn = Xh.norm(dim=1) / self.tau
        if self.K == 1:
            s = F[:, 1]
            sd = s * (1.0 - s)
            jn = math.sqrt(2.0) * sd * xn                           # ‖J_i‖_F
            f = torch.clamp(zeta / jn.clamp_min(1e-30), max=1.0)
            gz = ((kbar_rows[:, 1] - kbar_rows[:, 0]) * sd * f / self.tau)[:, None]
        else:
            A2 = (F ** 2).sum(1) - 2 * (F ** 3).sum(1) + (F ** 2).sum(1) ** 2   # ‖diag F − FFᵀ‖²_F
            jn = A2.clamp_min(0).sqrt() * xn
            f = torch.clamp(zeta / jn.clamp_min(1e-30), max=1.0)
            Fk = (F * kbar_rows).sum(dim=1, keepdim=True)
            gz = (F * kbar_rows - F * Fk) * (f / self.tau)[:, None]
        return gz.T @ Xh, F, float((f < 1.0).float().mean()) if len(f) else 0.0

    def project(self, torch, theta):
        if self.radius is None:
            return theta
        nrm = float(theta.norm())
        return theta if nrm <= self.radius else theta * (self.radius / nrm)


class ModuleAdapter:
    """Any torch module through ``torch.func`` (functional_call, vmap, jacrev).  θ is the flat
    float32 parameter vector; per-row Jacobians are computed in chunks of bounded memory."""

    #: elements of one chunk of per-row Jacobians (rows × L × P)
    CHUNK = 1 << 24

    def __init__(self, model):
        self.model = model                      # a privfair.TorchModel
        self.P = model.P
        self.L = model.n_classes
        self.tau = 1.0          # ERMI temperature: ψ reads F_τ (logits / τ); the CE reads F

    def setup(self, torch, device):
        self.module = self.model.build().to(device)
        self.names = [n for n, _ in self.module.named_parameters()]
        self.shapes = [p.shape for _, p in self.module.named_parameters()]
        self.sizes = [p.numel() for _, p in self.module.named_parameters()]

    def theta0(self, torch, device):
        self.setup(torch, device)
        return torch.as_tensor(self.model.initial_parameters(), dtype=torch.float32, device=device)

    def to_decision(self, theta) -> np.ndarray:
        return theta.detach().double().cpu().numpy()

    def design(self, torch, X, device=None, dtype=None):
        """The rows the module reads: X itself as a tensor (the module adds what it needs)."""
        if torch.is_tensor(X):
            return X.to(dtype=dtype or X.dtype, device=device or X.device)
        return torch.tensor(X, dtype=dtype or torch.float32, device=device)

    def _params(self, theta):
        out, k = {}, 0
        for name, shape, size in zip(self.names, self.shapes, self.sizes):
            out[name] = theta[k:k + size].view(shape)
            k += size
        return out

    def _probs(self, torch, params, X, tau=1.0):
        from privfair.models.torch_model import probs_from_logits

        z = torch.func.functional_call(self.module, params, (X,))
        return probs_from_logits(z / tau if tau != 1.0 else z, self.model.binary_logit)

    def probs(self, torch, theta, X):
        with torch.no_grad():
            return self._probs(torch, self._params(theta), X)

    def ermi_probs(self, torch, theta, X):
        with torch.no_grad():
            return self._probs(torch, self._params(theta), X, self.tau)

    def differentiable_probs(self, torch, theta, X, tau=1.0):
        """F_τ(x) at the temperature ``tau``, differentiable in θ (autograd: the reference the
        per-row Jacobian sums are checked against)."""
        return self._probs(torch, self._params(theta), X, tau)

    def public_grad(self, torch, theta, X, y, v, lam):
        th = theta.detach().requires_grad_(True)
        F = self._probs(torch, self._params(th), X)
        ce = torch.nn.functional.nll_loss(torch.log(F.clamp_min(1e-30)), y, reduction="sum")
        obj = ce + lam * (F * v).sum() if lam else ce      # (the backend passes lam = 0)
        (g,) = torch.autograd.grad(obj, th)
        return g.detach(), F.detach()

    def private_sum(self, torch, theta, X, kbar_rows, zeta):
        params = {k: p.detach() for k, p in self._params(theta).items()}

        def one(p, x):
            return self._probs(torch, p, x[None], self.tau)[0]

        jac_fn = torch.func.vmap(torch.func.jacrev(one), in_dims=(None, 0))
        step = max(1, self.CHUNK // max(1, self.L * self.P))
        total = torch.zeros(self.P, device=theta.device)
        clipped, Fs = 0, []
        for s in range(0, X.shape[0], step):
            xb, kb = X[s:s + step], kbar_rows[s:s + step]
            jac = jac_fn(params, xb)
            J = torch.cat([jac[name].reshape(xb.shape[0], self.L, -1) for name in self.names], 2)
            jn = J.flatten(1).norm(dim=1)
            f = torch.clamp(zeta / jn.clamp_min(1e-30), max=1.0)
            total += torch.einsum("blp,bl->p", J, kb * f[:, None])
            clipped += int((f < 1.0).sum())
            with torch.no_grad():
                Fs.append(self._probs(torch, params, xb, self.tau))
        F = torch.cat(Fs) if Fs else torch.zeros(0, self.L, device=theta.device)
        return total, F, clipped / max(1, X.shape[0])

    def project(self, torch, theta):
        return theta
