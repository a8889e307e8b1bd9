"""The DP-SGDA loop of ``sgda`` ([L] Algorithm 1 as corrected in docs/sgda.md) and its torch
helpers: the device, the model adapter, Poisson sampling and the W-player's step."""

from __future__ import annotations

import math
import os

import numpy as np

from . import ermi as E

def train(torch, adapter, dev, r, P, o, c_np, S, p_tilde, private, fair, zs, src, draws,
          progress=False):
    """The DP-SGDA loop: the tail-averaged θ of every stage (as decisions), the W radius D
    and the W-block bound C_W.

    ``zs`` = (z, z_θ, z_W); ``draws`` (private runs) the plan's schedule opened on the run's
    accountant: each step's noise is one draw of its release ``"steps"`` (N(0, z²) per
    coordinate, divided by z into unit noise here); ``src`` samples the Poisson batches."""
    from privfair.util.progress import bar
    from privfair.privacy.randomness import GeneratorSource

    data, path = r.data, P["lambdas"]
    n_rows = float(r.n)
    theta = adapter.theta0(torch, dev)
    adapter.tau = o["temperature"]      # ψ reads F_τ = softmax(z/τ); public, a-free
    gen = src.generator if isinstance(src, GeneratorSource) else np.random.default_rng(
        np.frombuffer(os.urandom(32), dtype=np.uint32))
    # the rows of each batch: one index_select of a design built once (#19), or — for a linear
    # model whose float32 design would exceed DESIGN_CAP_BYTES on the CPU — gathered per batch
    # from the rows themselves (no copy of X at all)
    gather = batch_rows(adapter, data, torch, dev)
    yt = torch.tensor(data.y, dtype=torch.long, device=dev)
    at = torch.tensor(data.group, dtype=torch.long, device=dev)
    ct = torch.tensor(c_np, dtype=torch.long, device=dev)
    pt = torch.as_tensor(p_tilde, dtype=torch.float32, device=dev)
    # slice weights: [L]'s conditional ERMI weighs slice y by p(y) ("proportional"); the
    # default "balanced" weighs every slice equally (w_c = 1/(S·p(y=c)), y is public), so the
    # gaps of rare labels are not discounted.  Scaling a slice leaves its W-maximiser alone.
    ny = np.bincount(c_np, minlength=S).astype(float)
    wsl = np.ones(S) if (S == 1 or o["slice_weights"] == "proportional") else \
        n_rows / (S * np.maximum(ny, 1.0))
    wt = torch.as_tensor(wsl, dtype=torch.float32, device=dev)
    psq = pt.sqrt() / wt[:, None]                  # k = 2W/psq = 2 w_c W/√p̃
    G, L, n, q = r.G, r.L, r.n, P["sampling_rate"]
    W = torch.zeros(S, G, L, device=dev)
    D = o.get("w_radius") or E.w_radius(p_tilde, L)
    # per-slot bounds: row i's private W-piece 2F_i/psq[c_i, a_i] sits in slot (c_i, a_i)
    # only, with ‖·‖₂ ≤ Bw[c_i, a_i] = 2/psq[c_i, a_i] (public: p̃ and the slice weights);
    # dividing slot (c, r) by Bw[c, r] gives every row a unit-norm contribution, so the noise
    # of each slot is calibrated to its own bound (a public diagonal rescaling of one
    # Gaussian mechanism) rather than to the worst slot's C_W = max Bw
    Bw = 2.0 / psq                                                   # (S, G)
    CW = float(Bw.max())
    mexp = q * n
    T, k = P["T"], len(path)
    bounds = [round(T * (s + 1) / k) for s in range(k)]
    z, zt, zw = zs
    checkpoints, avg, na, stage = [], None, 0, 0
    # a bar on long runs only (a 1M-row GPU run, a neural network), showing the stage's λ
    steps = bar(range(T), "sgda", progress, min_steps=100)
    for t in steps:
        lam = path[stage]
        start = bounds[stage - 1] if stage else 0
        if t == start:
            # refreshed at once: a stage change is rare, and a stage shorter than tqdm's
            # refresh interval would otherwise never show its λ
            steps.set_postfix(lam=f"{lam:g}", refresh=True)
        # public pieces on B'_t (no A): loss + ψ's a-free part; W's a-free part
        idx = _poisson(gen, n, q, dev, torch)
        Xb, cb = gather(idx), ct.index_select(0, idx)                   # one gather per batch
        k_ref, kbar, kmax = E.private_coefficients(W, psq)
        Wsq = (W ** 2).sum(dim=1) * wt[:, None]                         # (S, L)
        g_pub, F2 = adapter.public_grad(torch, theta, Xb, yt.index_select(0, idx), None, 0.0)
        if fair and lam:
            # ψ's a-free part, clipped by the same a-free factor as the private part, so the
            # fairness gradient is Σ f_i J_iᵀ k[c_i, a_i]: a reweighting, never a distortion
            v = (k_ref - Wsq)[cb]                                      # (b, L)
            g_psi, F2, _ = adapter.private_sum(torch, theta, Xb, v, o["clip"])
            g_pub = g_pub + lam * g_psi
        elif adapter.tau != 1.0:
            F2 = adapter.ermi_probs(torch, theta, Xb)                  # W reads F_τ
        Fs = torch.zeros(S, L, device=dev).index_add_(0, cb, F2)
        gW = -2.0 * W * (Fs * wt[:, None])[:, None, :]
        if fair:
            # private pieces on B_t: the only place a_i is read
            idx = _poisson(gen, n, q, dev, torch)
            cb, ab = ct.index_select(0, idx), at.index_select(0, idx)
            s_th, F, _ = adapter.private_sum(torch, theta, gather(idx),
                                             kbar[cb, ab], o["clip"])
            noise = None
            if private:
                Ct = o["clip"] * kmax
                noise = draws.gaussian_noise("steps", adapter.P + S * G * L,
                                             namespace="torch", device=dev) / z
                s_th = s_th + (zt * Ct) * noise[:adapter.P].view_as(s_th)
                noise = zw * noise[adapter.P:].view(S, G, L)
            s_w = w_release(torch, F, cb, ab, Fs, psq, noise, o["w_noise"])
            step = g_pub + lam * s_th
            W = w_step(W, gW, s_w, Fs, wt, mexp, o["lr_w"], o["w_step"], D)
        else:
            step = g_pub
        theta = adapter.project(torch, theta - o["lr"] / (1.0 + lam) * step / mexp)
        if not o["average"]:            # the stage's last iterate (was: the mean of all of them)
            avg, na = theta.clone(), 1
        elif t >= (start + bounds[stage]) // 2:      # the mean over the stage's second half
            avg = theta.clone() if na == 0 else avg + (theta - avg) / (na + 1)
            na += 1
        if t + 1 == bounds[stage]:
            checkpoints.append(adapter.to_decision(avg))
            avg, na, stage = None, 0, stage + 1
    return checkpoints, D, CW


#: the largest float32 design (x, 1) built once on the CPU, in bytes.  Above it a linear
#: model's batches are gathered from X per step: at 10⁷ × 101 rows the design alone was 4.1 GB
#: beside X's 8.1 GB, and issue #19 asks a fit to stay within X + 2 GB
DESIGN_CAP_BYTES = 1 << 30


def batch_rows(adapter, data, torch, dev):
    """``gather(idx)``: the rows ``idx`` (a long tensor) as the adapter's batch design —
    ``index_select`` of a design built once (the fast path: a gather from a design built once
    is ~5.5× cheaper than gathering rows of X and concatenating an intercept column, #19), or,
    for a linear model on the CPU whose design would exceed :data:`DESIGN_CAP_BYTES`, the rows
    gathered from the dataset's row source into a batch (x, 1) per call."""
    linear = isinstance(adapter, E.LinearAdapter)
    if linear and dev.type == "cpu" and data.n * (adapter.d + 1) * 4 > DESIGN_CAP_BYTES:
        rows = data.rows()

        def gather(idx):
            xb = rows.gather(idx.numpy())
            out = torch.empty(xb.shape[0], adapter.d + 1, dtype=torch.float32)
            out[:, :adapter.d] = torch.from_numpy(xb)
            out[:, adapter.d] = 1.0
            return out
        return gather
    # a linear design is written from the row source's chunks (no copy of X); a torch module
    # reads X itself
    X = adapter.design(torch, data.rows() if linear else data.X, device=dev)
    return lambda idx: X.index_select(0, idx)


def torch_device(torch, device):
    """The torch device of a solve's ``device`` option (typed error when CUDA is missing)."""
    from privfair.errors import InvalidInputError

    if device in ("cpu", "torch"):
        return torch.device("cpu")
    if device == "cuda":
        if not torch.cuda.is_available():
            raise InvalidInputError("device", device, "CUDA is not available; use device='cpu'")
        return torch.device("cuda")
    raise InvalidInputError("device", device, "choose 'cpu', 'torch' or 'cuda'")


def adapter_for(ds, torch, dev):
    """The ERMI model adapter of the decision set ``ds`` (LinearClassifier or TorchModel)."""
    from privfair.models.decisions import LinearClassifier

    if isinstance(ds, LinearClassifier):
        return E.LinearAdapter(ds.n_features, 1, radius=ds.radius, layout="wb")
    tmpl = ds.template
    if isinstance(tmpl, torch.nn.Linear) and tmpl.bias is not None:
        a = E.LinearAdapter(ds.n_features, tmpl.out_features, theta0=ds.initial_parameters(),
                            layout="linear")
        if ds.binary_logit != (tmpl.out_features == 1):
            return E.ModuleAdapter(ds)
        return a
    return E.ModuleAdapter(ds)


def _poisson(gen, n, q, dev, torch):
    """A Poisson sample: each row independently with probability q (binomial size, then a
    uniform subset of that size — the same distribution)."""
    k = int(gen.binomial(n, q))
    idx = gen.choice(n, size=k, replace=False, shuffle=False) if k else np.zeros(0, dtype=np.int64)
    return torch.as_tensor(idx, dtype=torch.long, device=dev)


def w_release(torch, F, cb, ab, Fs, psq, noise, mode):
    """S_W (S, G, L): the W-player's private sum Σ_{i∈B_t} 2F_i/√p̃[c_i, a_i] at slot (c_i, a_i)
    (p̃ with the slice weights, ``psq`` (S, G)), released with ``noise`` = z_W·N(0, I) (None: exact).

    ``"centered"``: row i's piece F_i ⊗ (e_{a_i} − 1/G) in slice c_i, i.e. the sums A[c, r] =
    Σ_{i∈B_t: (c_i, a_i) = (c, r)} F_i centred over the groups, D = A − mean_r A — norm ≤ √(1 − 1/G)
    (‖F‖ ≤ 1).  The noise is z_W·√(1 − 1/G)·ΠN with Π the centring (an isotropic Gaussian in the
    (G − 1)-dim subspace the release lives in), so the scaled per-row norm is 1/z_W as in the
    accountant's event.  The group total Σ_r A[c, r] is a-free but reads B_t (releasing it would
    tell whether a row was sampled and void the amplification), so it is estimated from the
    independent public batch B'_t (``Fs``): Â = D̃ + Fs/G.  Per slot the noise is z_W(1 − 1/G)
    in A's units — half of ``"per_slot"``'s z_W for two groups: moving one row between two
    groups is antipodal in the centred coordinates, while the per-slot release pays the
    replace relation's 2× for what is an orthogonal move.
    ``"per_slot"``: slot (c, r) divided by its bound B_W = 2/psq (a public diagonal rescaling),
    noise z_W·B_W[c, r] in S_W's units (z_W in A's).  ``"uniform"``: z_W·max B_W everywhere."""
    S, G = psq.shape
    L = F.shape[1]
    if mode == "centered":
        A = torch.zeros(S * G, L, dtype=F.dtype, device=F.device).index_add_(
            0, cb * G + ab, F).view(S, G, L)
        D = A - A.mean(dim=1, keepdim=True)
        if noise is not None:
            D = D + math.sqrt(1.0 - 1.0 / G) * (noise - noise.mean(dim=1, keepdim=True))
        return 2.0 * (D + Fs[:, None, :] / G) / psq[:, :, None]
    s_w = torch.zeros(S * G, L, dtype=F.dtype, device=F.device).index_add_(
        0, cb * G + ab, 2.0 * F / psq[cb, ab][:, None]).view(S, G, L)
    if noise is None:
        return s_w
    bound = 2.0 / psq if mode == "per_slot" else torch.full_like(psq, float((2.0 / psq).max()))
    return s_w + bound[:, :, None] * noise


def w_noise_factor(mode, G):
    """The W-block noise per slot, in units of z_W·B_W[c, r] (``w_release``)."""
    return 1.0 - 1.0 / G if mode == "centered" else 1.0


def w_step(W, gW, s_w, Fs, wt, mexp, lr_w, mode, D):
    """The W-player's ascent step on the released gradient gW + s_w (sums over the batches).

    ``"plain"``: W + lr_w (gW + s_w)/(qn).  ``"newton"``: ψ's mean is a separable quadratic in
    W with diagonal curvature h[c, j] = 2 w_c Σ_{i∈B'_t, c_i=c} F_ij/(qn), public (it reads no
    a_i), so dividing by it is post-processing; the step is then W ← (1 − lr_w) W + lr_w Ŵ_t,
    an exponential average of the per-step maximisers Ŵ_t (lr_w = 1: exactly the batch's W*),
    i.e. every coordinate averages the noise over ~1/lr_w steps whatever its curvature."""
    if mode == "newton":
        h = (2.0 * Fs * wt[:, None] / mexp).clamp_min(1.0 / mexp)[:, None, :]
        return _project_w(W + lr_w * (gW + s_w) / mexp / h, D)
    return _project_w(W + lr_w * (gW + s_w) / mexp, D)


def _project_w(W, D):
    nrm = float(W.norm())
    return W if nrm <= D else W * (D / nrm)
