"""Per-example gradients of the Lagrangian's row terms, for the two differentiable decision sets.

Statement.  For a row i with prediction mass p_i(θ) on the L labels and coefficient vectors
u_f, u_g ∈ R^L (``histogram.row_coefficients`` of ∇f and of Σ_j λ_j ∇g_j at ℓ̂), the row's
primal term is

    ψ_i(θ) = u_f·p_i(θ) / sg[max(p_i(y_i), p_min)]  +  u_g·p_i(θ)          ("log" objective)
    ψ_i(θ) = (u_f + u_g)·p_i(θ)                                            ("linear")
    ψ_i(θ) = |d_i|·CE(σ(z_i), 1[d_i < 0]),  d_i = (u_f + u_g)[1] − (u_f + u_g)[0]   ("cost_log")

(sg: no gradient through it; "cost_log": binary ``LinearClassifier`` only, z_i = x̃_i·θ;
p_i(θ) is the constraints' sharpened soft prediction, below).  The "log" form rescales the objective's row gradient by the
public positive weight 1/p_i(y_i); for the error (u_f = 1 − e_{y_i}) it is exactly the
cross-entropy gradient ∇(−log p_i(y_i)) — the usual trainable surrogate of the 0-1 loss, whose
gradient does not vanish on confidently wrong rows — and for any f it is a positive per-row
reweighting of ∇(u_f·p_i).  Down to p_i(y_i) = p_min (:data:`P_MIN`, 10⁻³) only: below it the
weight stays 1/p_min and the gradient decays like p_i(y_i) (measured, Adult EO ≤ 0.02, row: at
ε = 1 the released rules are the same to 4 digits with p_min = 10⁻³⁰⁰, seeds 0–2; at ε = ∞,
where nothing is clipped, the floor let a run stall on the all-negative rule with λ = 0, and
without it the run oscillates instead — docs/lagrangian.md, *Equalized odds*).  The constraints
keep the exact gradient of the soft rates.

"cost_log" treats the *whole* row term the way the reductions approach (Agarwal et al. 2018)
treats a cost-sensitive best response: the row's Lagrangian cost of predicting 1 rather than 0
is d_i, so it becomes a cross-entropy towards the cheaper label with weight |d_i|; its gradient
in z is d_i·σ(z_i) (d_i > 0) or d_i·(1 − σ(z_i)) (d_i < 0), the same sign as the linear form's
but not vanishing on confidently predicted rows.  For the error alone (d_i = 1 − 2y_i) it is
the "log" form.  It reads x_i, y_i, θ and the coefficients (functions of earlier releases)
only, and is clipped like the others: the privacy proof is unchanged.

The constraints' soft prediction (``soft_scale``; ``LinearClassifier`` without a surrogate).
p_i(1) = σ(κ_i·z_i) with

    "capped" (default)  κ_i = min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖))
                        (κ = ``sharpness``, 5; κ_a = ``angle_sharpness``, 10)
    "fixed"             κ_i = κ                                  (before #18)
    "angle"             κ_i = κ·√P/(max(1, ‖θ‖)·‖x̃_i‖)

√P·z_i/(‖θ‖·‖x̃_i‖) = √P·cos(θ, x̃_i) depends on θ's direction only, as the released rule
1[z > 0] does: σ(κ_a·√P·cos) is (up to the logistic-for-probit swap) the chance that the rule
of a randomly perturbed θ + (‖θ‖/κ_a)·ξ, ξ ~ N(0, I/P), predicts 1 on x_i.  Why the cap (#18,
docs/lagrangian.md "The constraints' soft prediction"): with a fixed κ the band of rows where
σ'(κz) is not negligible narrows as ‖θ‖ grows; under per-row clipping each row brings at most C,
so once the cross-entropy of the misclassified rows outnumbers the constraint's band rows, θ
grows further, the band narrows more, and λ climbs to λ_max without effect (bench/gpu.py's
synthetic problem: parity gap 0.21 asked 0.02, at ε = 1 and ε = 8 alike).  "capped" keeps the
fixed κ where it is the softer of the two and the angular band where the fixed one would be
narrower, so the band never collapses with ‖θ‖.  Where a row reads θ's direction the gradient
has the radial part of ∂(z/‖θ‖)/∂θ = (x̃ − (z/‖θ‖)·θ/‖θ‖)/‖θ‖ (``grad_sum``).  Surrogate rates
read their own masses.  ``TorchModel`` follows the same "auto" rule (since 2026-11-26); under "capped" ‖θ‖ is
the norm of every parameter, √P is √(P per logit) and autograd supplies the radial part (for a
linear module the band of the linear rule; for a deeper network only "never sharper than κ").
The backend's default ``soft_scale="auto"`` is "capped" for a ``LinearClassifier`` under
``protect="row"`` and "fixed" otherwise (docs/lagrangian.md).

Precondition (privacy).  Each adapter returns Σ_i clip_C(∇ψ_i), each term of ℓ2 norm ≤ C
(plain per-example clipping, min(1, C/‖∇ψ_i‖), the norm of the whole row vector, radial part
included); the scale 1/p_i(y_i) and every κ_i read x_i, y_i, θ (‖θ‖ included: a function of
earlier releases) and public constants only — the row term is still a function of the row
alone given the past, which is all the proof in ``solver`` uses.
Under ``protect="sensitive"`` the solver passes coefficient *differences* u − u_ref(y) for the
private part (their per-row term still clipped to C) and the group-free u_ref(y) for the public
part, which reads x, y, θ only and is computed on an independent batch (``solver``).

* :class:`LinearAdapter` — ``pf.LinearClassifier`` in numpy (no torch).  Without a surrogate the
  released rule is 1[x·w + b > 0], which depends on the direction of θ only: training runs on
  p(1) = σ(x·w + b) with θ free, and the released θ is scaled into the user's ball (the same
  rule).  With ``pf.rates(..., surrogate=...)`` ℓ is defined by the surrogate masses of
  :mod:`privfair.statistics.stats` on the clipped features, and θ is projected on the ball every step.
* :class:`TorchAdapter` — ``pf.TorchModel`` (any module; softmax, or sigmoid of one logit);
  per-example gradients with ``torch.func`` (vmap of grad), on CPU or CUDA.
"""

from __future__ import annotations

import numpy as np

from privfair.data.passes import ArrayRows, rows_of

P_MIN = 1e-3      # floor of p_i(y_i) in the "log" objective's weight (public constant)


def sigmoid(z):
    """The logistic function, overflow-free (via tanh) for any finite ``z``."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class LinearAdapter:
    """``pf.LinearClassifier`` (binary) in numpy; see the module docstring.

    Memory (#19).  The rows are read through the data's row source (``data.rows()``,
    :mod:`privfair.data.passes`): a Poisson batch is gathered (``rows.gather``) into one batch-sized
    design [x̃_i, 1], and a pass over every row (:meth:`label_totals`) reads one chunk at a time.
    Neither X (nor, for a dataset taken by index, its gathered copy ``data.X``), nor [X, 1],
    nor the clipped features of a surrogate (``rates._Xc``) is ever built whole: the extra
    memory is a batch and a chunk, whatever n.  A batch's design holds the same numbers as the
    rows of the old full [X̃, 1], so every product is the same arithmetic (same results, bit for
    bit).

    Per step the solver reads one batch several times at one θ (``probs``, then ``grad_sum``,
    whose objective and constraint terms each read the masses): what depends on the batch only
    (its rows' norms ‖x̃_i‖) and on the batch and θ (the margins Z·θ, the effective sharpness,
    the masses) is computed once per batch and θ and reused (:meth:`_memo`) — the same numbers,
    one product Z·θ and one row-norm pass per batch instead of up to four each (#19: at 10⁶
    rows they were half of the step's time)."""

    batch_blas = True      # the solver runs its steps with BLAS on one thread (solver.train)

    def __init__(self, rates, log_objective=True, sharpness=1.0, cost_sensitive=False,
                 soft_scale="fixed", angle_sharpness=10.0):
        ds = rates.decisions
        self.k = float(sharpness)
        self.ds, self.rates = ds, rates
        self.P = ds.P
        self.surrogate = rates.surrogate
        self.log_objective = log_objective and self.surrogate is None
        self.cost_sensitive = cost_sensitive and self.surrogate is None
        # how the sharpened prediction reads the margin (module docstring): "capped"
        # min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖))·z, "fixed" κ·z, "angle" κ·√P·z/(n(θ)·‖x̃_i‖); a
        # surrogate's masses are its own
        self.angle_k = float(angle_sharpness)
        if soft_scale not in ("capped", "fixed", "angle"):
            from privfair.errors import InvalidInputError

            raise InvalidInputError("soft_scale", soft_scale, "pass 'capped', 'fixed' or 'angle'")
        self.scale_mode = soft_scale if self.surrogate is None else "fixed"
        self.rows = rows_of(rates.data)
        self.d = self.rows.n_features
        # a surrogate's rows are x̃_i = x_i·s_i (s_i = min(1, R/‖x_i‖), rates.clip_scale): the
        # n-vector s is kept, x̃ is formed per batch / chunk
        self.scale = (np.asarray(rates.clip_scale, dtype=float) if self.surrogate is not None
                      else None)
        self.y = np.asarray(rates.data.y)
        self.theta0 = np.zeros(self.P)
        self._batch = (None, None)       # (idx, its design): probs and grad_sum read one batch
        self._bufs = None                # (design, gathered rows) buffers, reused (design)
        self._cache = {}                 # the batch's row norms, and values at one θ (_memo)

    def _fill(self, Z, X, scale):
        """Z[:, :d] = x̃ (X times the rows' clipping scale, if any), Z[:, d] = 1."""
        if scale is None:
            Z[:, :-1] = X
        else:
            np.multiply(X, scale[:, None], out=Z[:, :-1])
        Z[:, -1] = 1.0
        return Z

    def design(self, idx) -> np.ndarray:
        """[x̃_i, 1] for the rows ``idx``: a (len(idx), P) array (the last batch's is kept, so
        that the probabilities and the gradient of one step gather it once) — a view of a
        buffer that the next batch overwrites."""
        if self._batch[0] is idx:
            return self._batch[1]
        idx_a = np.asarray(idx)
        k = idx_a.shape[0]
        if self._bufs is None or self._bufs[0].shape[0] < k:
            # the design and the gathered rows in buffers reused from step to step (a Poisson
            # batch's size varies: 10 % slack), not two new batch-sized arrays a step — at
            # 10⁷ rows those are 130 MB each, fresh pages from the kernel every step
            cap = int(k * 1.1) + 16
            self._bufs = (np.empty((cap, self.d + 1)),
                          np.empty((cap, self.d)) if isinstance(self.rows, ArrayRows) else None)
            self._bufs[0][:, -1] = 1.0       # the intercept column, written once: a batch
            #                                  fills the features only (one strided pass less)
        Zb, Gb = self._bufs
        X = (self.rows.gather(idx_a, out=Gb[:k]) if Gb is not None
             else self.rows.gather(idx_a))
        Z = Zb[:k]
        if self.scale is None:
            Z[:, :-1] = X
        else:
            np.multiply(X, self.scale[idx_a][:, None], out=Z[:, :-1])
        self._batch = (idx, Z)          # holding idx keeps its identity unique
        self._cache = {}
        return Z

    def _memo(self, key, Z, theta, compute):
        """``compute()`` — a function of the design rows ``Z`` (and of θ unless ``theta`` is
        None) — kept while ``Z`` is the current batch's design (and θ has the same value), so
        that the reads of one step share it; rows that are not the batch (a chunk of an
        all-rows pass) are computed afresh.  The same computation either way: the same numbers."""
        if Z is not self._batch[1]:
            return compute()
        c = self._cache
        if theta is not None and not (c.get("theta") is not None
                                      and np.array_equal(c["theta"], theta)):
            # a new θ: drop what depends on θ, keep the row norms
            c = self._cache = {"norms": c["norms"]} if "norms" in c else {}
            c["theta"] = np.array(theta, dtype=float, copy=True)
        if key not in c:
            c[key] = compute()
        return c[key]

    def _norms(self, Z):
        """‖x̃_i‖₂ of the design rows ``Z``: for the current batch, read off every row's norm
        (:meth:`_row_norms`, one pass at the first batch); for other rows (a chunk of an
        all-rows pass) computed from ``Z``."""
        if Z is not None and Z is self._batch[1]:
            return self._memo("norms", Z, None, lambda: self._row_norms()[self._batch[0]])
        return np.linalg.norm(Z, axis=1)

    def _row_norms(self):
        """‖[x̃_i, 1]‖₂ of every row (an n-vector: 8 bytes a row), computed once, chunk by
        chunk.  Why (#19): a row's norm depends on the row alone, and recomputing it for every
        step's batch read each batch once more (T = 500 steps at rate 1/62.5: 8 reads of X's
        size, ~1 s at 10⁶ rows; one pass here instead).  The same arithmetic as the norm of the
        batch's design row (``np.linalg.norm`` of the same filled row: each row's sum of
        squares is reduced alone), so the same numbers, bit for bit."""
        if getattr(self, "_all_norms", None) is None:
            out = np.empty(self.rows.n)
            s = 0
            for Z, _ in self._chunks():
                for b in range(0, Z.shape[0], 1024):      # Z·Z temporaries of 1,024 rows
                    e = min(Z.shape[0], b + 1024)
                    out[s + b:s + e] = np.linalg.norm(Z[b:e], axis=1)
                s += Z.shape[0]
            self._all_norms = out
        return self._all_norms

    def _margins(self, theta, Z):
        """z_i = x̃_i·θ (with the intercept) of the design rows ``Z``."""
        return self._memo("z", Z, theta, lambda: Z @ theta)

    def norm_scale(self, theta) -> float:
        """n(θ): ‖θ‖₂ for ``soft_scale`` "capped" (floored at 1e-12), max(1, ‖θ‖₂) for
        "angle", 1 for "fixed" — a function of θ, so of earlier releases only."""
        if self.scale_mode == "fixed":
            return 1.0
        nt = float(np.linalg.norm(theta))
        return max(1e-12, nt) if self.scale_mode == "capped" else max(1.0, nt)

    def _kappa(self, theta, Z):
        """(effective sharpness, mask of the rows where it reads θ's direction, or None) at θ
        for the design rows ``Z``: κ ("fixed"), min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) ("capped"), or
        κ·√P/(n(θ)·‖x̃_i‖) ("angle"); the module docstring says why."""
        mode = self.scale_mode
        if mode == "fixed":
            return self.k, None
        return self._memo("kappa", Z, theta, lambda: self._kappa_rows(theta, Z))

    def _kappa_rows(self, theta, Z):
        n = self.norm_scale(theta)
        ka = self.angle_k if self.scale_mode == "capped" else self.k
        k = ka * np.sqrt(self.P) / (n * self._norms(Z))
        if self.scale_mode == "angle":
            return k, (np.ones(Z.shape[0], bool) if n > 1.0 else None)
        act = k < self.k
        return np.where(act, k, self.k), (act if act.any() else None)

    def kappa(self, theta, Z=None):
        """The effective sharpness at θ: κ for "fixed", else a vector over the rows of
        ``Z``."""
        return self._kappa(theta, Z)[0]

    def _mass(self, theta, idx, k=None, Z=None, y=None):
        """(mass on ŷ = 1, its derivative in the margin z at a fixed n(θ)) of the rows ``idx``
        (or of the design rows ``Z`` with labels ``y``): σ(k·z) (k the effective sharpness
        :meth:`kappa` by default; the objective's cross-entropy reads k = 1), or the
        surrogate's."""
        if Z is None:
            Z = self.design(idx)
        if self.surrogate is None:
            # the batch's masses at θ are read by probs and by grad_sum: computed once (for
            # the effective sharpness or a constant one)
            if k is None or isinstance(k, float):
                return self._memo(("mass", k), Z, theta, lambda: self._sigmoid_mass(theta, Z, k))
            return self._sigmoid_mass(theta, Z, k)
        z = self._margins(theta, Z)
        from privfair.statistics.stats import SURROGATES

        r = self.rates
        sign = np.where((self.y[idx] if y is None else y) == 1, -1.0, 1.0)
        val, der = SURROGATES[self.surrogate](sign * z)
        val = val / r.phi_at_bound
        der = np.where(val < 1.0, der / r.phi_at_bound, 0.0)
        val = np.minimum(val, 1.0)
        return np.where(sign > 0, val, 1.0 - val), der

    def _sigmoid_mass(self, theta, Z, k):
        z = self._margins(theta, Z)
        k = self.kappa(theta, Z) if k is None else k
        s = sigmoid(k * z)
        return s, k * s * (1.0 - s)

    def _chunks(self):
        """(design, labels) of consecutive chunks of every row, the design in one reused
        chunk-sized buffer (valid until the next chunk)."""
        buf = None
        for c in self.rows.chunks():
            k = len(c)
            if buf is None or buf.shape[0] < k:
                buf = np.empty((k, self.d + 1))
            sc = None if self.scale is None else self.scale[c.start:c.start + k]
            yield self._fill(buf[:k], c.X, sc), self.y[c.start:c.start + k]

    def probs(self, theta, idx) -> np.ndarray:
        """(len(idx), 2) prediction masses of the rows ``idx``; ``idx=None``: every row,
        computed chunk by chunk (an (n, 2) result, no n×P temporary)."""
        if idx is None:
            out = [self._mass(theta, None, Z=Z, y=y)[0] for Z, y in self._chunks()]
            s = np.concatenate(out) if out else np.zeros(0)
        else:
            s, _ = self._mass(theta, idx)
        return np.stack([1.0 - s, s], axis=1)

    def label_totals(self, theta, L) -> np.ndarray:
        """Σ_i e_{y_i} ⊗ p_i(θ) over every row, (L, L): a pass over the chunks (the same
        sums, in the same order, as ``batch_counts`` of all rows at once)."""
        C = np.zeros((L, L))
        for Z, y in self._chunks():
            s, _ = self._mass(theta, None, Z=Z, y=y)
            np.add.at(C, y, np.stack([1.0 - s, s], axis=1))
        return C

    def grad_sum(self, theta, idx, Uf, Ug, clip=None):
        """(Σ_i clip(∇ψ_i), number of clipped rows) over the rows ``idx``."""
        if len(idx) == 0:
            return np.zeros(self.P), 0
        Z = self.design(idx)
        s, der = self._mass(theta, idx)
        df = Uf[:, 1] - Uf[:, 0]
        dg = Ug[:, 1] - Ug[:, 0]
        # the row's gradient is dz_i·x̃_i − r_i·θ/‖θ‖: r_i = c_i·z_i/‖θ‖ is the radial part of
        # the sharpened term c_i·x̃_i on the rows whose κ_i reads θ's direction (soft_scale
        # "capped" / "angle"), c_i = ∂ψ_i/∂z_i at a fixed ‖θ‖
        if self.cost_sensitive:
            # the whole row term as a cost-sensitive cross-entropy: label 1[d < 0], weight |d|,
            # d = ∂ψ/∂p(1) — the reductions approach's best response, made a gradient step
            s1, _ = self._mass(theta, idx, 1.0)
            d = df + dg
            dz = d * np.where(d > 0, s1, 1.0 - s1)
            c = None
        elif self.log_objective:
            s1, der1 = self._mass(theta, idx, 1.0)
            py = np.where(self.y[idx] == 1, s1, 1.0 - s1)
            c = dg * der
            dz = df * der1 / np.maximum(py, P_MIN) + c
        else:
            c = (df + dg) * der
            dz = c
        nrm = self.norm_scale(theta)
        xn = self._norms(Z)
        act = self._kappa(theta, Z)[1] if c is not None else None
        if act is not None:
            u = self._margins(theta, Z) / nrm     # z/‖θ‖ = x̃·θ̂
            rad = np.where(act, c * u, 0.0)
            # ‖dz·x̃ − rad·θ̂‖² = dz²‖x̃‖² − 2·dz·rad·(x̃·θ̂) + rad²
            norms = np.sqrt(np.maximum(dz * dz * xn * xn - 2.0 * dz * rad * u + rad * rad,
                                       0.0))
        else:
            rad = None
            norms = np.abs(dz) * xn
        clipped = 0
        if clip is not None:
            f = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
            clipped = int(np.sum(norms > clip))
            dz = dz * f
            if rad is not None:
                rad = rad * f
        out = Z.T @ dz
        if rad is not None:
            out = out - (np.sum(rad) / nrm) * theta
        return out, clipped

    def project(self, theta):
        """Every step: the ball for surrogate rates (ℓ depends on the scale), else nothing."""
        return self.ds.project(theta) if self.surrogate is not None else theta

    def release(self, theta) -> np.ndarray:
        """θ scaled into the user's ball: the same rule 1[x·w + b > 0] (positive scaling)."""
        return self.ds.project(np.asarray(theta, dtype=float))


class TorchAdapter:
    """``pf.TorchModel`` with per-example gradients (torch.func); see the module docstring."""

    def __init__(self, rates, device="cpu", log_objective=True, sharpness=1.0,
                 soft_scale="fixed", angle_sharpness=10.0):
        import torch

        self.k = float(sharpness)
        # "capped": κ_i = min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)), ‖θ‖ over every parameter, x̃_i = (x_i, 1)
        # (the module docstring); any other value reads the fixed κ
        self.capped = soft_scale == "capped"
        self.angle_k = float(angle_sharpness)
        from privfair.models.torch_model import probs_from_logits

        self.torch, self.dev = torch, torch.device(device)
        ds = rates.decisions
        self.ds, self.P = ds, ds.P
        self.binary_logit = ds.binary_logit
        # √(P per logit): a linear module's L logit rows share ‖θ‖ (√P for one logit, as the
        # LinearClassifier's √(d + 1))
        self._root_p = (self.P / (1 if ds.binary_logit else ds.n_classes)) ** 0.5
        self._probs = probs_from_logits
        self.log_objective = log_objective
        self.module = ds.build().to(self.dev)
        self.names = [nm for nm, _ in self.module.named_parameters()]
        self.shapes = [p.shape for _, p in self.module.named_parameters()]
        self.sizes = [int(p.numel()) for _, p in self.module.named_parameters()]
        # X as one float32 tensor on the device (0.5·X of float64; the per-step batches are
        # gathered from it), filled chunk by chunk from the row source: the float64 X of a
        # dataset taken by index is never gathered whole (#19); the same values as a cast of X
        from privfair.data.passes import rows_of

        rows = rows_of(rates.data)
        self.X = torch.empty((rows.n, rows.n_features), dtype=torch.float32, device=self.dev)
        for c in rows.chunks():
            self.X[c.start:c.start + len(c)] = torch.as_tensor(
                np.asarray(c.X), dtype=torch.float32).to(self.dev)
        self.y = torch.as_tensor(np.asarray(rates.data.y), dtype=torch.long, device=self.dev)
        self.theta0 = ds.initial_parameters()

    def _params(self, theta):
        t = self.torch.as_tensor(np.asarray(theta), dtype=torch_float(self.torch), device=self.dev)
        out, k = {}, 0
        for nm, shp, sz in zip(self.names, self.shapes, self.sizes):
            out[nm] = t[k:k + sz].reshape(shp)
            k += sz
        return out

    def _kappa(self, params, X):
        """The constraints' sharpness for the rows X (n, d): κ, or under "capped" the (n, 1)
        tensor min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) — differentiable in θ (the radial part of the
        row gradient comes from autograd)."""
        if not self.capped:
            return self.k
        torch = self.torch
        nt = torch.sqrt(sum((v * v).sum() for v in params.values())).clamp(min=1e-12)
        xn = torch.sqrt((X * X).sum(dim=1, keepdim=True) + 1.0)
        return torch.clamp(self.angle_k * self._root_p / (nt * xn), max=self.k)

    def probs(self, theta, idx) -> np.ndarray:
        torch = self.torch
        X = self.X if idx is None else self.X[torch.as_tensor(idx, device=self.dev)]
        with torch.no_grad():
            params = self._params(theta)
            z = torch.func.functional_call(self.module, params, (X,))
            return self._probs(self._kappa(params, X) * z,
                               self.binary_logit).double().cpu().numpy()

    def label_totals(self, theta, L, chunk_rows=65536) -> np.ndarray:
        """Σ_i e_{y_i} ⊗ p_i(θ) over every row, (L, L), ``chunk_rows`` rows at a time (no
        n×L temporary on the device).  The sums accumulate on the device in float64 and cross
        to the host once per pass: a per-chunk copy and the labels' copy cost a device sync
        each, which made this pass (once a step under ``protect="sensitive"``) as slow on an
        H100 as on 16 CPU cores (bench/gpu.py)."""
        torch = self.torch
        C = torch.zeros((L, L), dtype=torch.float64, device=self.dev)
        n = int(self.X.shape[0])
        with torch.no_grad():
            params = self._params(theta)
            for s in range(0, n, chunk_rows):
                Xc = self.X[s:s + chunk_rows]
                z = torch.func.functional_call(self.module, params, (Xc,))
                p = self._probs(self._kappa(params, Xc) * z, self.binary_logit).double()
                C.index_add_(0, self.y[s:s + chunk_rows], p)
        return C.cpu().numpy()

    def grad_sum(self, theta, idx, Uf, Ug, clip=None):
        torch = self.torch
        if len(idx) == 0:
            return np.zeros(self.P), 0
        params = self._params(theta)
        ii = torch.as_tensor(idx, device=self.dev)
        X, y = self.X[ii], self.y[ii]
        uf = torch.as_tensor(Uf, dtype=torch.float32, device=self.dev)
        ug = torch.as_tensor(Ug, dtype=torch.float32, device=self.dev)
        mod, binary, probs, log_obj, kappa = self.module, self.binary_logit, self._probs, \
            self.log_objective, self._kappa

        def row_term(p_, x, yy, a, b):
            z = torch.func.functional_call(mod, p_, (x[None, :],))
            pk = probs(kappa(p_, x[None, :]) * z, binary)[0]
            if log_obj:     # the objective's cross-entropy reads the unsharpened p
                p1 = probs(z, binary)[0]
                py = (p1 * yy).sum()          # yy one-hot: no data-dependent indexing in vmap
                obj = (a * p1).sum() / torch.clamp(py, min=P_MIN).detach()
            else:
                obj = (a * pk).sum()
            return obj + (b * pk).sum()

        onehot = torch.nn.functional.one_hot(y, uf.shape[1]).to(uf.dtype)
        grads = torch.func.vmap(torch.func.grad(row_term), in_dims=(None, 0, 0, 0, 0))(
            params, X, onehot, uf, ug)
        flat = torch.cat([grads[nm].reshape(len(idx), -1) for nm in self.names], dim=1)
        clipped = 0
        if clip is not None:
            norms = flat.norm(dim=1)
            clipped = int((norms > clip).sum())
            flat = flat * torch.clamp(clip / torch.clamp(norms, min=1e-30), max=1.0)[:, None]
        return flat.sum(dim=0).double().cpu().numpy(), clipped

    def project(self, theta):
        return theta

    def release(self, theta) -> np.ndarray:
        return np.asarray(theta, dtype=float)


def torch_float(torch):
    return torch.float32
