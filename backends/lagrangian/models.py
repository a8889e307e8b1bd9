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
  On a Dask dataset (rows on the workers, #19) the adapter holds no per-row array: a step is
  :func:`batch_pass` run on each partition's Poisson sample (``solver.PassBatches``), with the
  public constants of :class:`RowTerms` — the same per-row arithmetic as :meth:`LinearAdapter.step`;
  under a surrogate the pass clips its rows to the public feature bound on the worker
  (:meth:`RowTerms.clipped`, the bits of the rates' ``clip_scale``).
* :class:`TorchAdapter` — ``pf.TorchModel`` (any module; softmax, or sigmoid of one logit);
  per-example gradients with ``torch.func`` (vmap of grad), on CPU or CUDA.  On a Dask dataset
  (#19) a step is :func:`torch_batch_pass` on each partition's Poisson sample, on the workers'
  CPUs, with the public :class:`TorchTerms` (the module's template; θ travels with the step) —
  the same torch operations per row as the in-memory step, each row's whole gradient clipped.
"""

from __future__ import annotations

import numpy as np

from privfair.data.passes import ArrayRows, rows_of

P_MIN = 1e-3      # floor of p_i(y_i) in the "log" objective's weight (public constant)


def sigmoid(z):
    """The logistic function, overflow-free (via tanh) for any finite ``z``."""
    return 0.5 * (1.0 + np.tanh(0.5 * z))


#: a batch is read in blocks of about this many bytes of rows (#19): each block is gathered
#: once into a buffer that stays in the cache while its margins, row terms and gradient
#: product are computed (a public constant; it changes the float summation order only)
BLOCK_BYTES = 4 << 20


class RowTerms:
    """The per-row arithmetic of :class:`LinearAdapter` with public parameters only: the
    sharpness, the masses and a block's clipped row gradients — what a Dask worker runs on its
    rows (#19, :func:`batch_pass`).  It holds no row and nothing computed from rows (the model's
    constants: P, κ, κ_a, the soft scale, the objective's form, a surrogate's public
    φ(B)), so it is pickled with the pass; the adapter's in-memory step calls the same methods,
    so the two paths run the same arithmetic row by row."""

    def __init__(self, P, sharpness, angle_sharpness, scale_mode, log_objective,
                 cost_sensitive, surrogate=None, phi_at_bound=None, feature_bound=None):
        self.P, self.k, self.angle_k = int(P), float(sharpness), float(angle_sharpness)
        self.scale_mode, self.surrogate = scale_mode, surrogate
        self.log_objective, self.cost_sensitive = bool(log_objective), bool(cost_sensitive)
        self.phi_at_bound = phi_at_bound
        #: a surrogate's public row-norm bound R: a pass clips its chunk's rows to it
        #: (:meth:`clipped`) where the in-memory adapter reads the rates' clip scales
        self.feature_bound = None if feature_bound is None else float(feature_bound)

    def clipped(self, X):
        """The rows ``X`` as the terms read them: x̃_i = x_i·min(1, R/‖x_i‖) under a surrogate
        (a new array; :func:`privfair.statistics.soft.chunk_clip_scales`, the arithmetic of the
        rates' ``clip_scale``, so the same bits as the in-memory design), ``X`` itself
        without one.  A row's scale is a function of the row alone and public R: a pass
        computes it where the row is (#19)."""
        if self.surrogate is None:
            return X
        from privfair.statistics.soft import chunk_clip_scales

        return X * chunk_clip_scales(X, self.feature_bound)[:, None]

    def norms(self, X):
        """‖[x̃_i, 1]‖₂ of the feature rows ``X``: √(Σ_j x̃_ij² + 1)."""
        return np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)

    def norm_scale(self, theta) -> float:
        """n(θ): ‖θ‖₂ for ``soft_scale`` "capped" (floored at 1e-12), max(1, ‖θ‖₂) for
        "angle", 1 for "fixed" — a function of θ, so of earlier releases only."""
        if self.scale_mode == "fixed":
            return 1.0
        nt = float(np.linalg.norm(theta))
        return max(1e-12, nt) if self.scale_mode == "capped" else max(1.0, nt)

    def kappa_of_norms(self, theta, xn):
        """(effective sharpness, mask of the rows where it reads θ's direction, or None) for
        rows of norms ``xn``: κ ("fixed"), min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) ("capped"), or
        κ·√P/(n(θ)·‖x̃_i‖) ("angle"); the module docstring says why.  It does not read the
        margins, so a batch's is computed once, before its blocks."""
        mode = self.scale_mode
        if mode == "fixed":
            return self.k, None
        n = self.norm_scale(theta)
        ka = self.angle_k if mode == "capped" else self.k
        k = ka * np.sqrt(self.P) / (n * xn)
        if mode == "angle":
            return k, (np.ones(xn.shape[0], bool) if n > 1.0 else None)
        act = k < self.k
        return np.where(act, k, self.k), (act if act.any() else None)

    def masses(self, z, k, y):
        """(mass on ŷ = 1, its derivative in z at a fixed n(θ)) of rows of margins ``z``:
        σ(k·z) (k a number or one per row), or the surrogate's masses (labels ``y``)."""
        if self.surrogate is None:
            s = sigmoid(k * z)
            return s, k * s * (1.0 - s)
        from privfair.statistics.stats import SURROGATES

        sign = np.where(y == 1, -1.0, 1.0)
        val, der = SURROGATES[self.surrogate](sign * z)
        val = val / self.phi_at_bound
        der = np.where(val < 1.0, der / self.phi_at_bound, 0.0)
        val = np.minimum(val, 1.0)
        return np.where(sign > 0, val, 1.0 - val), der

    def block(self, X, y, theta, kap, ract, nrm, df, dg, xn, clip):
        """One block of a batch: (masses s (k,), the block's gradient parts or None).

        ``X`` (k, d) the rows' x̃, ``y`` their labels, ``kap`` their sharpness (a number or
        (k,)), ``ract`` the mask of their angular rows (None: no radial part), ``nrm`` = n(θ),
        ``df``, ``dg`` the coefficient differences u[1] − u[0] of the objective and of the
        constraints (None: masses only), ``xn`` the rows' norms (for clipping), ``clip`` C or
        None.  The gradient parts are (Σ dz_i·x̃_i, Σ dz_i, Σ r_i or None, clipped rows):
        the row's gradient is dz_i·[x̃_i, 1] − r_i·θ/‖θ‖ (:meth:`LinearAdapter.step`)."""
        z = X @ theta[:-1]
        z += theta[-1]
        s, der = self.masses(z, kap, y)
        if df is None:
            return s, None
        # the row's gradient is dz_i·x̃_i − r_i·θ/‖θ‖: r_i = c_i·z_i/‖θ‖ is the radial
        # part of the sharpened term c_i·x̃_i on the rows whose κ_i reads θ's direction
        # (soft_scale "capped" / "angle"), c_i = ∂ψ_i/∂z_i at a fixed ‖θ‖
        if self.cost_sensitive:
            # the whole row term as a cost-sensitive cross-entropy: label 1[d < 0],
            # weight |d|, d = ∂ψ/∂p(1) — the reductions approach's best response
            s1 = sigmoid(z)
            dd = df + dg
            dz = dd * np.where(dd > 0, s1, 1.0 - s1)
            c = None
        elif self.log_objective:
            s1 = sigmoid(z)
            der1 = s1 * (1.0 - s1)
            py = np.where(y == 1, s1, 1.0 - s1)
            c = dg * der
            dz = df * der1 / np.maximum(py, P_MIN) + c
        else:
            c = (df + dg) * der
            dz = c
        rad = None
        if ract is not None:
            u = z / nrm                          # z/‖θ‖ = x̃·θ̂
            rad = np.where(ract, c * u, 0.0)
        clipped = 0
        if clip is not None:
            if rad is not None:
                # ‖dz·x̃ − rad·θ̂‖² = dz²‖x̃‖² − 2·dz·rad·(x̃·θ̂) + rad²
                norms = np.sqrt(np.maximum(dz * dz * xn * xn - 2.0 * dz * rad * u
                                           + rad * rad, 0.0))
            else:
                norms = np.abs(dz) * xn
            f = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
            clipped = int(np.count_nonzero(norms > clip))
            dz = dz * f
            if rad is not None:
                rad = rad * f
        return s, (X.T @ dz, float(dz.sum()), None if rad is None else float(rad.sum()),
                   clipped)


class LinearAdapter:
    """``pf.LinearClassifier`` (binary) in numpy; see the module docstring.

    Memory (#19).  The rows are read through the data's row source (``data.rows()``,
    :mod:`privfair.data.passes`): a Poisson batch is gathered (``rows.gather``) block by block
    into one block-sized buffer, and a pass over every row (:meth:`label_totals`) reads one
    chunk at a time.  Neither X (nor, for a dataset taken by index, its gathered copy
    ``data.X``), nor [X, 1], nor the clipped features of a surrogate (``rates._Xc``) is ever
    built whole: the extra memory is a block, a chunk and a few batch-sized vectors, whatever n.

    One read of a batch (#19, :meth:`step`).  A step needs the batch's soft predictions (the
    histogram) and its clipped gradient sum; every per-row quantity depends on its row alone
    (the margin z_i = x̃_i·w + b, the masses, the coefficients, the clipping factor), so the
    batch is processed in blocks of ~:data:`BLOCK_BYTES`: a block's rows are gathered once,
    and its margins, masses, row terms and its share of Σ_i dz_i·x̃_i are computed while the
    block is in the cache.  Before: the batch was gathered into one batch-sized buffer, copied
    into a design [x̃, 1] and read twice more from memory (Z·θ, Zᵀ·dz) — three to four times
    the memory traffic.  The intercept is not a column: z = x̃·w + b and the gradient's last
    coordinate is Σ dz_i (the same numbers up to float rounding).  The rows' norms ‖[x̃_i, 1]‖
    (for clipping and the capped sharpness) are computed once, in one pass (:meth:`_row_norms`)."""

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
        #: the per-row arithmetic, public parameters only (what a Dask worker runs)
        sur = self.surrogate is not None
        self.terms = RowTerms(self.P, self.k, self.angle_k, self.scale_mode, self.log_objective,
                              self.cost_sensitive, self.surrogate,
                              rates.phi_at_bound if sur else None,
                              rates.feature_bound if sur else None)
        self.rows = rows_of(rates.data)
        self.d = self.rows.n_features
        #: where the rows stay on Dask workers (``data.rows_on_workers``) no per-row array is
        #: held here: a step is a pass over a Poisson sample (``solver.PassBatches``)
        self.on_workers = bool(getattr(rates.data, "rows_on_workers", False))
        # a surrogate's rows are x̃_i = x_i·s_i (s_i = min(1, R/‖x_i‖), rates.clip_scale): in
        # memory the n-vector s is kept and x̃ formed per block / chunk; on Dask workers each
        # pass computes its chunk's s_i from the rows (RowTerms.clipped, the same bits)
        self.scale = (np.asarray(rates.clip_scale, dtype=float)
                      if sur and not self.on_workers else None)
        self.y = None if self.on_workers else np.asarray(rates.data.y)
        self.theta0 = np.zeros(self.P)
        self.block_rows = max(64, BLOCK_BYTES // (8 * max(1, self.d)))
        self._buf = None                 # the block buffer, reused (design)
        self._all_norms = None           # ‖[x̃_i, 1]‖ of every row (_row_norms)

    # ------------------------------------------------------------------ rows
    def design(self, idx) -> np.ndarray:
        """x̃_i of the rows ``idx``: a (len(idx), d) array — a view of a buffer that the next
        call overwrites.  The intercept is not a column (z = x̃·w + b); every method that
        reads a design reads its first d columns, so [x̃, 1] is read the same way."""
        idx_a = np.asarray(idx)
        k = idx_a.shape[0]
        if isinstance(self.rows, ArrayRows):
            if self._buf is None or self._buf.shape[0] < k:
                # one block-sized buffer reused from block to block and step to step (a new
                # array per block would be fresh pages from the kernel at large blocks)
                self._buf = np.empty((max(k, self.block_rows), self.d))
            X = self.rows.gather(idx_a, out=self._buf[:k])
        else:
            X = self.rows.gather(idx_a)
        if self.scale is not None:
            X = np.multiply(X, self.scale[idx_a][:, None], out=X)
        return X

    def _x(self, Z):
        """The features x̃ of design rows ``Z``: its first d columns, C-contiguous (a design
        [x̃, 1] given by a caller is copied, so that its products are the same arithmetic as
        those of the adapter's own contiguous rows)."""
        return Z if Z.shape[1] == self.d else np.ascontiguousarray(Z[:, :self.d])

    def _margins(self, theta, Z):
        """z_i = x̃_i·w + b of the design rows ``Z`` (θ = (w, b))."""
        theta = np.asarray(theta, dtype=float)
        z = self._x(Z) @ theta[:-1]
        z += theta[-1]
        return z

    def _norms(self, Z):
        """‖[x̃_i, 1]‖₂ of the design rows ``Z``: √(Σ_j x̃_ij² + 1)."""
        return self.terms.norms(self._x(Z))

    def _row_norms(self):
        """‖[x̃_i, 1]‖₂ of every row (an n-vector: 8 bytes a row), computed once, chunk by
        chunk.  Why (#19): a row's norm depends on the row alone; recomputing it for every
        step's batch read each batch once more (T = 500 steps at rate 1/62.5: 8 reads of X's
        size); here one pass, read off per batch — the same arithmetic as :meth:`_norms` of
        the row, so a batch's norms equal those of an all-rows pass."""
        if self._all_norms is None:
            out = np.empty(self.rows.n)
            s = 0
            for X, _ in self._chunks():
                for b in range(0, X.shape[0], 1024):      # temporaries of 1,024 rows
                    e = min(X.shape[0], b + 1024)
                    out[s + b:s + e] = self._norms(X[b:e])
                s += X.shape[0]
            self._all_norms = out
        return self._all_norms

    def _chunks(self):
        """(x̃, labels) of consecutive chunks of every row: the row source's chunk view itself
        (no copy) without a surrogate, the scaled rows in a new chunk-sized array with one."""
        for c in self.rows.chunks():
            k = len(c)
            X = c.X
            if self.scale is not None:
                X = X * self.scale[c.start:c.start + k][:, None]
            yield X, self.y[c.start:c.start + k]

    # ------------------------------------------------------------ sharpness
    def norm_scale(self, theta) -> float:
        """n(θ) (:meth:`RowTerms.norm_scale`)."""
        return self.terms.norm_scale(theta)

    def _kappa_of_norms(self, theta, xn):
        """(effective sharpness, mask of its angular rows or None): :meth:`RowTerms.kappa_of_norms`."""
        return self.terms.kappa_of_norms(theta, xn)

    def kappa(self, theta, Z=None):
        """The effective sharpness at θ: κ for "fixed", else a vector over the rows of the
        design ``Z``."""
        if self.scale_mode == "fixed":
            return self.k
        return self._kappa_of_norms(theta, self._norms(Z))[0]

    # ---------------------------------------------------------------- masses
    def _masses(self, z, k, y):
        """(mass on ŷ = 1, its derivative in z): :meth:`RowTerms.masses`."""
        return self.terms.masses(z, k, y)

    def _mass(self, theta, idx, k=None, Z=None, y=None):
        """(mass on ŷ = 1, its derivative) of the rows ``idx`` (or of the design rows ``Z``
        with labels ``y``): σ(k·z) (k the effective sharpness by default), or the
        surrogate's."""
        if Z is None:
            Z = self.design(idx)
            y = self.y[np.asarray(idx)]
        z = self._margins(theta, Z)
        if k is None:
            k = self._kappa_of_norms(theta, self._norms(Z))[0] \
                if self.scale_mode != "fixed" else self.k
        return self._masses(z, k, y)

    def probs(self, theta, idx) -> np.ndarray:
        """(len(idx), 2) prediction masses of the rows ``idx``; ``idx=None``: every row,
        computed chunk by chunk (an (n, 2) result, no n×P temporary)."""
        if idx is None:
            out = [self._mass(theta, None, Z=X, y=y)[0] for X, y in self._chunks()]
            s = np.concatenate(out) if out else np.zeros(0)
        else:
            s = self.step(theta, idx)[0][:, 1]
        return np.stack([1.0 - s, s], axis=1)

    def label_totals(self, theta, L) -> np.ndarray:
        """Σ_i e_{y_i} ⊗ p_i(θ) over every row, (L, L): a pass over the chunks."""
        C = np.zeros((L, L))
        for X, y in self._chunks():
            s, _ = self._mass(theta, None, Z=X, y=y)
            np.add.at(C, y, np.stack([1.0 - s, s], axis=1))
        return C

    # ------------------------------------------------------------ gradients
    def grad_sum(self, theta, idx, Uf, Ug, clip=None):
        """(Σ_i clip(∇ψ_i), number of clipped rows) over the rows ``idx``."""
        _, g, clipped = self.step(theta, idx, Uf, Ug, clip)
        return g, clipped

    def step(self, theta, idx, Uf=None, Ug=None, clip=None):
        """One read of the batch ``idx``: (its prediction masses (len(idx), 2), Σ_i
        clip_C(∇ψ_i) (None without ``Uf``), the number of clipped rows).  The rows are
        gathered block by block and each block is used while it is in the cache (class
        docstring); every row's term is that of :meth:`grad_sum`'s formula, row by row."""
        theta = np.asarray(theta, dtype=float)
        idx = np.asarray(idx)
        k = idx.shape[0]
        s_all = np.empty(k)
        want = Uf is not None
        if k == 0:
            return np.zeros((0, 2)), (np.zeros(self.P) if want else None), 0
        y = self.y[idx]
        nrm = self.norm_scale(theta)
        # what does not depend on the margins, once per batch: the rows' norms (for the
        # sharpness and for clipping), the effective sharpness and its angular rows, the
        # coefficient differences
        need_xn = self.scale_mode != "fixed" or (want and clip is not None)
        xn = self._row_norms()[idx] if need_xn else None
        kap, act = (self.k, None) if self.scale_mode == "fixed" else \
            self._kappa_of_norms(theta, xn)
        if want:
            df = Uf[:, 1] - Uf[:, 0]
            dg = Ug[:, 1] - Ug[:, 0]
            # the radial part exists for the sharpened term (not for "cost_log"'s
            # cross-entropy, which reads the unsharpened margin)
            ract = None if self.cost_sensitive else act
            w_sum, b_sum, rad_sum, clipped = np.zeros(self.d), 0.0, 0.0, 0
        bs = self.block_rows
        terms = self.terms
        for a in range(0, k, bs):
            e = min(k, a + bs)
            X = self._x(self.design(idx[a:e]))
            kb = kap if np.ndim(kap) == 0 else kap[a:e]
            if not want:
                s_all[a:e] = terms.block(X, y[a:e], theta, kb, None, nrm, None, None, None,
                                         None)[0]
                continue
            s, (w_b, b_b, rad_b, clipped_b) = terms.block(
                X, y[a:e], theta, kb, None if ract is None else ract[a:e], nrm, df[a:e],
                dg[a:e], None if xn is None else xn[a:e], clip)
            s_all[a:e] = s
            clipped += clipped_b
            w_sum += w_b
            b_sum += b_b
            if rad_b is not None:
                rad_sum += rad_b
        P = np.stack([1.0 - s_all, s_all], axis=1)
        if not want:
            return P, None, 0
        out = np.append(w_sum, b_sum)
        if ract is not None:
            out = out - (rad_sum / nrm) * theta
        return P, out, clipped

    def project(self, theta):
        """Every step: the ball for surrogate rates (ℓ depends on the scale), else nothing."""
        return self.ds.project(theta) if self.surrogate is not None else theta

    def release(self, theta) -> np.ndarray:
        """θ scaled into the user's ball: the same rule 1[x·w + b > 0] (positive scaling)."""
        return self.ds.project(np.asarray(theta, dtype=float))


class SoftmaxTerms:
    """The per-row arithmetic of :class:`SoftmaxAdapter` with public parameters only (the
    number of labels and features, the sharpness, the band, the row term's form): what a Dask
    worker runs on its sampled rows (:func:`softmax_batch_pass`) and what the in-memory adapter
    runs on a gathered batch — one home.  It holds no row and nothing computed from rows."""

    def __init__(self, L, d, sharpness, capped, angle_sharpness, log_objective, cost_sensitive):
        self.L, self.d = int(L), int(d)
        self.k, self.capped, self.angle_k = float(sharpness), bool(capped), float(angle_sharpness)
        self.log_objective, self.cost_sensitive = bool(log_objective), bool(cost_sensitive)

    def logits(self, theta, X):
        W = np.asarray(theta, dtype=float).reshape(self.L, self.d + 1)
        return X @ W[:, :-1].T + W[:, -1]

    @staticmethod
    def softmax(S):
        S = S - S.max(axis=1, keepdims=True)
        E = np.exp(S)
        return E / E.sum(axis=1, keepdims=True)

    @staticmethod
    def norms(X):
        """‖x̃_i‖ = ‖(x_i, 1)‖ of every row."""
        return np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)

    def kappa(self, theta, xn):
        """(κ_i per row, the mask of rows whose κ_i reads ‖θ‖, ‖θ‖): κ ("fixed"), or
        min(κ, κ_a·√(d+1)/(‖θ‖·‖x̃_i‖)) ("capped")."""
        nt = max(1e-12, float(np.linalg.norm(theta)))
        if not self.capped:
            return np.full(xn.shape[0], self.k), np.zeros(xn.shape[0], bool), nt
        ang = self.angle_k * np.sqrt(self.d + 1.0) / (nt * xn)
        act = ang < self.k
        return np.where(act, ang, self.k), act, nt

    def probs(self, theta, X, xn=None):
        """(rows, L) sharpened prediction masses."""
        kap, _, _ = self.kappa(theta, self.norms(X) if xn is None else xn)
        return self.softmax(kap[:, None] * self.logits(theta, X))

    def block(self, theta, X, y, Uf=None, Ug=None, clip=None, xn=None):
        """One read of the rows (X, y): (their sharpened prediction masses (rows, L), Σ_i
        clip_C(∇ψ_i) as a flat vector of length P (None without ``Uf``), the number of clipped
        rows) — :class:`SoftmaxAdapter`'s statement."""
        k = X.shape[0]
        P = self.L * (self.d + 1)
        want = Uf is not None
        if k == 0:
            return np.zeros((0, self.L)), (np.zeros(P) if want else None), 0
        theta = np.asarray(theta, dtype=float)
        xn = self.norms(X) if xn is None else xn
        S = self.logits(theta, X)
        kap, act, nt = self.kappa(theta, xn)
        p = self.softmax(kap[:, None] * S)
        if not want:
            return p, None, 0
        Uf, Ug = np.asarray(Uf, dtype=float), np.asarray(Ug, dtype=float)

        def g(q, a):
            return q * (a - np.sum(a * q, axis=1, keepdims=True))

        if self.cost_sensitive:
            # "cost_log": the whole row term as −Σ_k w_k log q_k(s), q = softmax(s), with
            # w = max(c) − c ≥ 0 for the row's costs c = u_f + u_g of predicting each label —
            # minimised where q ∝ w, so the argmax is the cheapest label (for two labels the
            # binary rule's |d|·CE towards the cheaper one; for the error alone the
            # cross-entropy).  Its gradient in s is (Σ_k w_k)·q − w; no band, no radial part.
            cost = Uf + Ug
            w = cost.max(axis=1, keepdims=True) - cost
            delta = w.sum(axis=1, keepdims=True) * self.softmax(S) - w
            r = np.zeros(k)
            act = np.zeros(k, dtype=bool)
        else:
            gc = g(p, Ug)                              # the constraints' part, per κ·s
            if self.log_objective:
                q = self.softmax(S)
                # the positive public weight 1/max(q_i(y_i), p_min), outside the gradient (sg)
                wt = 1.0 / np.maximum(q[np.arange(k), y], P_MIN)
                delta = g(q, Uf * wt[:, None]) + kap[:, None] * gc
            else:
                gc = gc + g(p, Uf)
                delta = kap[:, None] * gc
            r = np.where(act, kap * np.sum(S * gc, axis=1), 0.0)
        clipped = 0
        if clip is not None:
            ds_ = np.sum(delta * S, axis=1)
            norms = np.sqrt(np.maximum(np.sum(delta * delta, axis=1) * xn * xn
                                       - 2.0 * r * ds_ / nt ** 2 + r * r / nt ** 2, 0.0))
            over = norms > clip
            clipped = int(np.count_nonzero(over))
            f = np.where(over, clip / np.where(over, norms, 1.0), 1.0)
            delta, r = delta * f[:, None], r * f
        grad = np.concatenate([delta.T @ X, delta.sum(axis=0)[:, None]], axis=1).ravel()
        if act.any():
            grad = grad - (float(r.sum()) / nt ** 2) * theta
        return p, grad, clipped


class SoftmaxAdapter:
    """``pf.SoftmaxClassifier`` (L ≥ 2 labels) in numpy; see the module docstring.

    With s_i = W x̃_i the logits (x̃ = (x, 1)), the constraints read the sharpened prediction
    p_i = softmax(κ_i·s_i) — κ_i = κ (``soft_scale="fixed"``) or, under "capped", min(κ,
    κ_a·√(d+1)/(‖θ‖·‖x̃_i‖)) (the binary rule's band, √P per logit as for a ``TorchModel``) —
    and the "log" objective the unsharpened q_i = softmax(s_i), as the binary rule and the
    ``TorchModel`` do: ψ_i = u_f·q_i/sg[max(q_i(y_i), p_min)] + u_g·p_i (or (u_f + u_g)·p_i,
    "linear"; or the cost-sensitive −Σ_k w_k log q_k, "cost_log").  With g(p, a) =
    p ⊙ (a − (a·p)·1) (the gradient of a·softmax in its logits),

        ∇ψ_i = δ_i ⊗ x̃_i − r_i·θ/‖θ‖²,   δ_i = g(q_i, u_f/sg[·]) + κ_i·g(p_i, u_g),
                                          r_i = κ_i·(s_i·g(p_i, u_g)) on the rows whose κ_i
                                          reads ‖θ‖ (else 0)

    (the radial term is ∂κ_i/∂θ = −κ_i·θ/‖θ‖²).  Its norm² is ‖δ_i‖²‖x̃_i‖² − 2r_i(δ_i·s_i)/‖θ‖²
    + r_i²/‖θ‖², so per-example clipping is a factor c_i on (δ_i, r_i) and the batch's clipped
    sum is Σ c_i δ_i ⊗ x̃_i − (Σ c_i r_i)·θ/‖θ‖²: one (L × m)·(m × (d + 1)) product.  Every
    factor reads row i, θ and the coefficients (functions of earlier releases) only: the privacy
    proof of ``solver`` applies unchanged (per-row norm ≤ C; the histogram's p_i on the
    simplex).  The arithmetic is :class:`SoftmaxTerms`'; on a Dask dataset it runs on the
    workers (:func:`softmax_batch_pass`: only sums come back), in memory on gathered batches."""

    batch_blas = True      # the solver runs its steps with BLAS on one thread (solver.train)

    def __init__(self, rates, log_objective=True, sharpness=1.0, soft_scale="fixed",
                 angle_sharpness=10.0, cost_sensitive=False):
        ds = rates.decisions
        self.ds, self.rates = ds, rates
        self.P, self.L, self.d = ds.P, ds.n_classes, ds.n_features
        self.cost_sensitive = bool(cost_sensitive)
        self.terms = SoftmaxTerms(self.L, self.d, sharpness, soft_scale == "capped",
                                  angle_sharpness, log_objective, cost_sensitive)
        self.theta0 = np.zeros(self.P)
        #: a Dask dataset's rows stay on its workers: a step is a pass over a Poisson sample
        #: (``solver.PassBatches``); in memory the solver gathers the batches (rows None)
        self.on_workers = bool(getattr(rates.data, "rows_on_workers", False))
        if self.on_workers:
            self.rows = rows_of(rates.data)
            self.X = self.y = self.xn = None
        else:
            self.rows = None
            self.X = np.asarray(rates.data.X, dtype=float)
            self.y = np.asarray(rates.data.y)
            # ‖x̃_i‖ of every row, once (the band and the clipping factor read it)
            self.xn = self.terms.norms(self.X)

    def step(self, theta, idx, Uf=None, Ug=None, clip=None):
        """One read of the batch ``idx``: (its sharpened prediction masses (len(idx), L), Σ_i
        clip_C(∇ψ_i) as a flat vector of length P (None without ``Uf``), the number of clipped
        rows)."""
        idx = np.asarray(idx)
        return self.terms.block(theta, self.X[idx], self.y[idx], Uf, Ug, clip,
                                xn=self.xn[idx])

    def grad_sum(self, theta, idx, Uf, Ug, clip=None):
        """(Σ_i clip(∇ψ_i), number of clipped rows) over the rows ``idx``."""
        _, g_, clipped = self.step(theta, idx, Uf, Ug, clip)
        return g_, clipped

    def probs(self, theta, idx) -> np.ndarray:
        """(len(idx), L) sharpened prediction masses of the rows ``idx`` (None: every row)."""
        if idx is None:
            return self.terms.probs(theta, self.X, self.xn)
        idx = np.asarray(idx)
        return self.terms.probs(theta, self.X[idx], self.xn[idx])

    def label_totals(self, theta, L) -> np.ndarray:
        """Σ_i e_{y_i} ⊗ p_i(θ) over every row, (L, L)."""
        C = np.zeros((L, L))
        np.add.at(C, self.y, self.probs(theta, None))
        return C

    def project(self, theta):
        """Nothing during training (as the binary rule's without a surrogate)."""
        return theta

    def release(self, theta) -> np.ndarray:
        """θ scaled into the user's ball: the same rule argmax_k (positive scaling)."""
        return self.ds.project(np.asarray(theta, dtype=float))


def softmax_batch_pass(chunk, terms, theta, tf, tg, by_group, G, L, clip):
    """A pass function: one chunk of a step's Poisson batch for a ``pf.SoftmaxClassifier``,
    read on a Dask worker — :meth:`SoftmaxTerms.block` on the chunk's rows.  Returns the
    partial sums (C (G, L, L) the batch histogram (G = 1 without ``by_group``), Σ_i clip_C(∇ψ_i)
    (P,), the number of clipped rows), None for a chunk without rows; they merge by addition.
    θ and the coefficient tables are functions of earlier releases; no row, index or per-row
    value leaves the worker."""
    from .histogram import batch_counts

    y = np.asarray(chunk.y)
    if y.shape[0] == 0:
        return None
    X = np.asarray(chunk.X, dtype=float)
    grp = np.asarray(chunk.group) if by_group else np.zeros(y.shape[0], np.int64)
    cell = grp * L + y if by_group else y
    p, g, clipped = terms.block(theta, X, y, coefficient_rows(tf, cell),
                                coefficient_rows(tg, cell), clip)
    return (batch_counts(grp, y, p, G if by_group else 1, L), g, clipped)


def softmax_label_totals_pass(chunk, terms, theta, L):
    """A pass function: Σ_i e_(y_i) ⊗ p_i(θ) over one chunk, (L, L), for a
    ``pf.SoftmaxClassifier`` (the arithmetic of :meth:`SoftmaxAdapter.label_totals`)."""
    y = np.asarray(chunk.y)
    C = np.zeros((L, L))
    if y.shape[0]:
        np.add.at(C, y, terms.probs(theta, np.asarray(chunk.X, dtype=float)))
    return C


def coefficient_rows(table, cell):
    """The rows ``table[c]`` of a coefficient table (G, L, L) or (L, L) flattened to its
    last axis, for the codes ``cell`` (g·L + y, or y): one ``np.take`` along axis 0 instead of
    fancy indexing by two index arrays (the same numbers as c[g, y], ~15× faster on a batch)."""
    t = np.asarray(table)
    return np.take(t.reshape(-1, t.shape[-1]), cell, axis=0)


def batch_pass(chunk, terms, theta, tf, tg, by_group, G, L, clip):
    """A pass function (:mod:`privfair.data.passes`): one chunk of a step's Poisson batch,
    read where the rows are (on a Dask worker, #19) — the same per-row arithmetic as
    :meth:`LinearAdapter.step` (:meth:`RowTerms.block`).

    ``terms`` a :class:`RowTerms` (public constants), θ the current iterate, ``tf``, ``tg``
    the coefficient tables of the objective and of the constraints — (G, L, L) read by the
    row's cell g·L + y (``by_group``) or (L, L) read by its label — all functions of earlier
    releases; ``clip`` C or None.  Returns the partial sums (C (G, L, L) the batch histogram
    Σ p_i ⊗ e_(g_i, y_i) (G = 1 and every row in group 0 without ``by_group``), Σ dz_i·x̃_i
    (d,), Σ dz_i, Σ r_i (the radial parts; 0.0 without), the number of clipped rows): they merge
    by addition, and the client forms the gradient [Σ dz·x̃, Σ dz] − (Σ r/n(θ))·θ
    (:func:`assemble_gradient`).  No row, index or per-row value leaves the worker."""
    X = terms.clipped(np.asarray(chunk.X, dtype=float))      # a surrogate's x̃, on the worker
    y = np.asarray(chunk.y)
    theta = np.asarray(theta, dtype=float)
    grp = np.asarray(chunk.group) if by_group else np.zeros(y.shape[0], np.int64)
    cell = grp * L + y if by_group else y
    xn = terms.norms(X) if (terms.scale_mode != "fixed" or clip is not None) else None
    kap, act = (terms.k, None) if terms.scale_mode == "fixed" else \
        terms.kappa_of_norms(theta, xn)
    Uf, Ug = coefficient_rows(tf, cell), coefficient_rows(tg, cell)
    s, (w, b, rad, clipped) = terms.block(
        X, y, theta, kap, None if terms.cost_sensitive else act, terms.norm_scale(theta),
        Uf[:, 1] - Uf[:, 0], Ug[:, 1] - Ug[:, 0], xn, clip)
    from .histogram import batch_counts

    C = batch_counts(grp, y, np.stack([1.0 - s, s], axis=1), G if by_group else 1, L)
    return (C, w, b, 0.0 if rad is None else rad, clipped)


def assemble_gradient(terms, theta, w, b, rad) -> np.ndarray:
    """The batch's gradient sum from :func:`batch_pass`'s merged parts: [Σ dz·x̃, Σ dz] −
    (Σ r/n(θ))·θ (the radial parts are linear in θ/‖θ‖, so they merge as one number)."""
    out = np.append(np.asarray(w, dtype=float), float(b))
    if rad:
        out = out - (float(rad) / terms.norm_scale(theta)) * np.asarray(theta, dtype=float)
    return out


def pass_functions(terms):
    """(the step's batch pass, the all-rows label-totals pass) for an adapter's ``terms``:
    :func:`batch_pass` / :func:`label_totals_pass` for a :class:`RowTerms` (the numpy rule),
    :func:`torch_batch_pass` / :func:`torch_label_totals_pass` for a :class:`TorchTerms`."""
    if isinstance(terms, TorchTerms):
        return torch_batch_pass, torch_label_totals_pass
    if isinstance(terms, SoftmaxTerms):
        return softmax_batch_pass, softmax_label_totals_pass
    return batch_pass, label_totals_pass


def merged_step(terms, theta, part):
    """(C, the batch's clipped gradient sum) from a merged partial of the batch pass of
    ``terms``' kind (:func:`pass_functions`): :func:`batch_pass`'s parts assembled with
    :func:`assemble_gradient`, or :func:`torch_batch_pass`'s gradient sum as it is."""
    if isinstance(terms, (TorchTerms, SoftmaxTerms)):
        C, g, _ = part
        return np.asarray(C, dtype=float), np.asarray(g, dtype=float)
    C, w, b, rad, _ = part
    return np.asarray(C, dtype=float), assemble_gradient(terms, theta, w, b, rad)


def label_totals_pass(chunk, terms, theta, L):
    """A pass function: Σ_i e_(y_i) ⊗ p_i(θ) over one chunk, (L, L) — the group-free totals of
    ``protect="sensitive"`` with ``group_free_totals="exact"`` read where the rows are (the
    arithmetic of :meth:`LinearAdapter.label_totals`)."""
    X = terms.clipped(np.asarray(chunk.X, dtype=float))
    y = np.asarray(chunk.y)
    theta = np.asarray(theta, dtype=float)
    k = terms.k if terms.scale_mode == "fixed" else \
        terms.kappa_of_norms(theta, terms.norms(X))[0]
    z = X @ theta[:-1]
    z += theta[-1]
    s, _ = terms.masses(z, k, y)
    C = np.zeros((L, L))
    np.add.at(C, y, np.stack([1.0 - s, s], axis=1))
    return C


class TorchTerms:
    """The per-row arithmetic of :class:`TorchAdapter` with public parameters only: the module
    (its template; the current θ is passed in), how its output becomes masses, the sharpness
    and the objective's form — what a Dask worker runs on its sampled rows (#19,
    :func:`torch_batch_pass`).  It holds no row and nothing computed from rows, so it is pickled
    with the pass; the in-memory adapter calls the same methods, so the two paths run the same
    torch operations row by row (the in-memory numbers are unchanged)."""

    def __init__(self, module, binary_logit, root_p, sharpness, capped, angle_sharpness,
                 log_objective, device="cpu"):
        self.module = module
        self.names = [nm for nm, _ in module.named_parameters()]
        self.shapes = [p.shape for _, p in module.named_parameters()]
        self.sizes = [int(p.numel()) for _, p in module.named_parameters()]
        self.binary_logit, self.root_p = bool(binary_logit), float(root_p)
        self.k, self.capped, self.angle_k = float(sharpness), bool(capped), float(angle_sharpness)
        self.log_objective, self.device = bool(log_objective), device

    def params(self, theta):
        """θ (float64 vector) as the module's named float32 parameters on the device."""
        import torch

        t = torch.as_tensor(np.asarray(theta), dtype=torch_float(torch), device=self.device)
        out, k = {}, 0
        for nm, shp, sz in zip(self.names, self.shapes, self.sizes):
            out[nm] = t[k:k + sz].reshape(shp)
            k += sz
        return out

    def kappa(self, params, X):
        """The constraints' sharpness for the rows X (n, d): κ, or under "capped" the (n, 1)
        tensor min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) — differentiable in θ (the radial part of the
        row gradient comes from autograd)."""
        if not self.capped:
            return self.k
        import torch

        nt = torch.sqrt(sum((v * v).sum() for v in params.values())).clamp(min=1e-12)
        xn = torch.sqrt((X * X).sum(dim=1, keepdim=True) + 1.0)
        return torch.clamp(self.angle_k * self.root_p / (nt * xn), max=self.k)

    def probs(self, module, params, X):
        """The sharpened masses (n, L) of the rows X, float32 (the caller holds no_grad)."""
        import torch

        from privfair.models.torch_model import probs_from_logits

        z = torch.func.functional_call(module, params, (X,))
        return probs_from_logits(self.kappa(params, X) * z, self.binary_logit)

    def row_gradients(self, module, params, X, y, Uf, Ug, clip):
        """(the rows' per-example gradients of ψ_i, each clipped to ``clip`` (None: not
        clipped), an (n, P) float32 tensor; the number of clipped rows).  ``Uf``, ``Ug`` the
        rows' coefficient vectors (numpy, (n, L)), ``y`` their labels (a long tensor)."""
        import torch

        from privfair.models.torch_model import probs_from_logits as probs

        uf = torch.as_tensor(Uf, dtype=torch.float32, device=self.device)
        ug = torch.as_tensor(Ug, dtype=torch.float32, device=self.device)
        binary, log_obj, kappa = self.binary_logit, self.log_objective, self.kappa

        def row_term(p_, x, yy, a, b):
            z = torch.func.functional_call(module, p_, (x[None, :],))
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
        flat = torch.cat([grads[nm].reshape(X.shape[0], -1) for nm in self.names], dim=1)
        clipped = 0
        if clip is not None:
            norms = flat.norm(dim=1)
            clipped = int((norms > clip).sum())
            flat = flat * torch.clamp(clip / torch.clamp(norms, min=1e-30), max=1.0)[:, None]
        return flat, clipped


class TorchAdapter:
    """``pf.TorchModel`` with per-example gradients (torch.func); see the module docstring.

    On a Dask dataset (rows on the workers, #19) the adapter holds no row: ``rows`` is the
    dataset's row source and ``terms`` (:class:`TorchTerms`, CPU) travels with each step's pass
    (:func:`torch_batch_pass`, ``solver.PassBatches``); in memory X is one float32 tensor on the
    device and a step gathers its batch from it (``solver.GatheredBatches``)."""

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
        if getattr(rates.data, "rows_on_workers", False) and self.dev.type != "cpu":
            # public (the dataset's kind, the device asked): refused before anything is spent
            from privfair.errors import InvalidInputError

            raise InvalidInputError(
                "device", str(device), "a pf.TorchModel on a Dask dataset computes its "
                "per-example gradients on the Dask workers' CPUs; pass device='cpu', or "
                "data.to_dataset() to train in memory on the GPU")
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
        #: the per-row arithmetic, public parameters only (what a Dask worker runs)
        self.terms = TorchTerms(self.module, self.binary_logit, self._root_p, self.k,
                                self.capped, self.angle_k, log_objective, device=self.dev)
        from privfair.data.passes import rows_of

        self.theta0 = ds.initial_parameters()
        if getattr(rates.data, "rows_on_workers", False):
            # a Dask dataset (#19): no per-row array here; every step is a pass on the workers
            # (CPU), which run the same TorchTerms arithmetic on their sampled rows
            self.rows = rows_of(rates.data)
            self.X = self.y = None
            return
        # X as one float32 tensor on the device (0.5·X of float64; the per-step batches are
        # gathered from it), filled chunk by chunk from the row source: the float64 X of a
        # dataset taken by index is never gathered whole (#19); the same values as a cast of X
        rows = rows_of(rates.data)
        self.rows = None            # solver.GatheredBatches: batches gathered from self.X
        self.X = torch.empty((rows.n, rows.n_features), dtype=torch.float32, device=self.dev)
        # np.array(..., dtype) copies: a Dataset's arrays are read-only, and torch warns (a
        # UserWarning, which the planner turns into a charged failure) on sharing them
        for c in rows.chunks():
            self.X[c.start:c.start + len(c)] = torch.from_numpy(
                np.array(c.X, dtype=np.float32)).to(self.dev)
        self.y = torch.from_numpy(np.array(rates.data.y, dtype=np.int64)).to(self.dev)

    def _params(self, theta):
        return self.terms.params(theta)

    def _kappa(self, params, X):
        """The constraints' sharpness for the rows X: :meth:`TorchTerms.kappa`."""
        return self.terms.kappa(params, X)

    def probs(self, theta, idx) -> np.ndarray:
        torch = self.torch
        X = self.X if idx is None else self.X[torch.as_tensor(idx, device=self.dev)]
        with torch.no_grad():
            params = self._params(theta)
            return self.terms.probs(self.module, params, X).double().cpu().numpy()

    def step(self, theta, idx, Uf=None, Ug=None, clip=None):
        """(:meth:`probs`, :meth:`grad_sum` (None without ``Uf``), clipped rows) of the batch
        ``idx``: the numpy adapter's one-read step, here the two reads."""
        P = self.probs(theta, idx)
        if Uf is None:
            return P, None, 0
        g, clipped = self.grad_sum(theta, idx, Uf, Ug, clip)
        return P, g, clipped

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
                p = self.terms.probs(self.module, params, Xc).double()
                C.index_add_(0, self.y[s:s + chunk_rows], p)
        return C.cpu().numpy()

    def grad_sum(self, theta, idx, Uf, Ug, clip=None):
        torch = self.torch
        if len(idx) == 0:
            return np.zeros(self.P), 0
        params = self._params(theta)
        ii = torch.as_tensor(idx, device=self.dev)
        flat, clipped = self.terms.row_gradients(self.module, params, self.X[ii], self.y[ii],
                                                 Uf, Ug, clip)
        return flat.sum(dim=0).double().cpu().numpy(), clipped

    def project(self, theta):
        return theta

    def release(self, theta) -> np.ndarray:
        return np.asarray(theta, dtype=float)


def _worker_module(terms):
    """A private copy of ``terms``' module for one pass call: ``torch.func.functional_call``
    swaps a module's parameters in place while it runs, so two tasks on the threads of one
    worker must not share one module."""
    import copy

    return copy.deepcopy(terms.module)


def torch_batch_pass(chunk, terms, theta, tf, tg, by_group, G, L, clip):
    """A pass function: one chunk of a step's Poisson batch for a ``pf.TorchModel``, read on a
    Dask worker (#19) — the arithmetic of :meth:`TorchAdapter.step` (:class:`TorchTerms`, CPU):
    the rows' features cast to float32 as the in-memory X is, their sharpened masses, their
    per-example gradients of ψ_i each clipped as a whole to ``clip``.

    Returns the partial sums (C (G, L, L) the batch histogram (G = 1 without ``by_group``),
    Σ_i clip_C(∇ψ_i) (P,) float64, the number of clipped rows), None for a chunk without
    rows; they merge by addition.  θ
    and the coefficient tables are functions of earlier releases; no row, index or per-row
    value leaves the worker."""
    import torch

    from .histogram import batch_counts

    y_np = np.asarray(chunk.y)
    if y_np.shape[0] == 0:          # no sampled row here (vmap cannot map over none): empty
        return None
    grp = np.asarray(chunk.group) if by_group else np.zeros(y_np.shape[0], np.int64)
    cell = grp * L + y_np if by_group else y_np
    X = torch.from_numpy(np.array(chunk.X, dtype=np.float32))     # copies: see TorchAdapter
    y = torch.from_numpy(np.array(y_np, dtype=np.int64))
    module = _worker_module(terms)
    params = terms.params(theta)
    with torch.no_grad():
        P = terms.probs(module, params, X).double().cpu().numpy()
    flat, clipped = terms.row_gradients(module, params, X, y, coefficient_rows(tf, cell),
                                        coefficient_rows(tg, cell), clip)
    C = batch_counts(grp, y_np, P, G if by_group else 1, L)
    return (C, flat.sum(dim=0).double().cpu().numpy(), clipped)


def torch_label_totals_pass(chunk, terms, theta, L):
    """A pass function: Σ_i e_(y_i) ⊗ p_i(θ) over one chunk, (L, L), for a ``pf.TorchModel``
    (the arithmetic of :meth:`TorchAdapter.label_totals`)."""
    import torch

    y = np.asarray(chunk.y)
    C = np.zeros((L, L))
    if y.shape[0] == 0:
        return C
    X = torch.from_numpy(np.array(chunk.X, dtype=np.float32))     # copies: see TorchAdapter
    module = _worker_module(terms)
    with torch.no_grad():
        p = terms.probs(module, terms.params(theta), X).double().cpu().numpy()
    np.add.at(C, y, p)
    return C


def torch_float(torch):
    return torch.float32
