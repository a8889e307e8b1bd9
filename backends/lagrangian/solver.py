"""The private Lagrangian loop: one joint Poisson-subsampled Gaussian release per step.

Algorithm (Φ_λ = f + Σ_j λ_j g_j over ℓ; m = q·n; a² + b² = 1, a² the histogram's share)::

    Ĉ ← public prior (m/(G L²) per cell), λ ← 0, θ ← θ₀ (public)
    for t = 1..T:
        B_t ← Poisson sample of rate q                      (each row independently)
        ℓ̂, π̂ ← rates_from_counts(Ĉ)                        (post-processing of past releases)
        c_f, c_g ← row_coefficients(∇f(ℓ̂)), row_coefficients(Σ_j λ_j ∇g_j(ℓ̂))
        v_i = ( a·h_i / H ,  b·clip_C(∇ψ_i(θ)) / C )        for i ∈ B_t
        S_t = Σ_{i ∈ B_t} v_i + N(0, z² I)                  ← the step's one release
        Ĥ_t = (H/a)·S_t[hist],  ĝ_t = (C/b)·S_t[grad]       (+ public parts, "sensitive":
            B'_t ← Poisson sample of rate q', independent of B_t; its group-free gradient
            and totals, times q/q', are added — x, y, θ only)
        Ĉ ← bias-corrected EMA of Ĥ_t (rate ``ema``)
        θ ← Π(θ − η_θ ĝ_t / m);  λ ← Π_Λ(λ + η_λ g(ℓ̂(Ĉ)))    Λ = {λ ≥ 0, ‖λ‖₁ ≤ λ_max}
    output: the uniform mixture of K checkpoints of the second half (or the last iterate)

Theorem (privacy).  Two sets of steps run: the *row* steps (``protect="row"``, and
``protect="sensitive"`` with ``sensitive_algorithm="row"``, the default) and the *split* steps
(``protect="sensitive"``, ``sensitive_algorithm="split"``).  The row steps are DP for one row
replaced; two datasets that differ in one row's group (x, y fixed) differ in one row, so the
same event proves the sensitive relation too (the certificate names the relation asked).
Under the row steps (one row replaced) h_i = p_i ⊗ e_{(g_i, y_i)}
with H = 1 (‖h_i‖₂ ≤ ‖p_i‖₁ = 1) and ∇ψ_i the row's full Lagrangian gradient.  Under
the split steps (one row's group changes, x, y fixed) h_i = p_i ⊗ (e_{g_i} − 1/G) at
label y_i with H = √(1 − 1/G) (``histogram.centred_counts``), and ∇ψ_i is the gradient of the
row's *group-dependent* part (coefficients c − c_ref(y), c_ref(y) the π̂-weighted mean of c[·, y] over groups); the
group-free parts — Σ_g C[g, y, ŷ] (on every row, or on B'_t with ``group_free_totals="batch"``)
and the gradient of c_ref(y_i)·p_i (on B'_t), both scaled by q/q' — read x, y, θ only, B'_t
being a Poisson batch of the public rate q' (``public_rate``: a function of n and q) drawn
independently of B_t, so they are public given θ and carry no information about B_t
(amplification stays valid: B_t is drawn, used and never revealed exactly as in the row unit;
what B'_t contributes is a function of public data, θ and a sample independent of everything
private, whatever q').  B'_t's sums are computed on B'_t's own rows only (a row drawn into
both batches is read twice), never reusing a product over B_t's rows: a public output that
read B_t would reveal its membership.  In both units every v_i has ‖v_i‖₂ ≤ √(a² + b²) = 1
whatever the row, its coefficients being functions of *earlier* releases (ℓ̂, λ,
θ are computed before S_t; the row's soft prediction p_i — under ``soft_scale="capped"`` its
sharpness min(κ, κ_a·√P/(‖θ‖·‖x̃_i‖)) — reads x_i and θ only, so h_i still sums to 1 and ∇ψ_i
is still a function of row i given the past), so step t is the Poisson-subsampled Gaussian
mechanism with per-row norm 1 and noise multiplier z under substitution, and T steps
adaptively composed are exactly the event
``subsampled_gaussian_event(z, 1, q, count=T, neighbouring="replace")``: the accountant (PLD,
dominating pair qN(−1) + (1 − q)N(0) vs qN(1) + (1 − q)N(0)) proves (ε, δ), with z fitted
at plan time by :func:`privfair.privacy.release.calibrate`.  Everything else — ℓ̂, λ, θ, the
checkpoints, the mixture — is post-processing.  The histogram is thus released with Gaussian
noise inside the same subsampled release (not RaCO-DP's Laplace): the accountant has no
subsampled-Laplace event, and a per-step unsubsampled Laplace would forfeit amplification.
Under "sensitive" the histogram's noise is further projected on the centred subspace
(post-processing).

The batches.  B_t (and B'_t) are exact Poisson samples: :func:`poisson` draws the gaps between
consecutive members as i.i.d. Geometric(q), which gives every set S the probability
q^|S|(1 − q)^(n − |S|) — each row in independently with probability q, the law the accountant's
subsampled event assumes.  On a Dask dataset (:class:`PassBatches`, #19) each partition samples
its own rows, each row independently with probability q, from its own 256-bit seed drawn on the
client from the run's secure source: independent partitions, so the union is again one
Poisson(q) sample of all the rows, and the step's sums (histogram, clipped gradient) come back
merged — the same release, the same event, the same certificate.

Preconditions.  δ > 0; f and every g_j have (sub)gradients (every expression of the language
does); p_i on the simplex (softmax / sigmoid / the surrogate masses of :mod:`privfair.statistics.stats`).
No convexity is needed for privacy; for utility, see docs/lagrangian.md.
"""

from __future__ import annotations

import math

import numpy as np

from privfair.data import passes as _passes
from privfair.util.threads import blas_single_thread

from . import histogram as H
from . import models


#: the step sampler: one home, :func:`privfair.data.passes.poisson_sample` (its docstring has
#: the law); a name here so that a test can watch the batches a run draws
poisson = _passes.poisson_sample


def dual_project(v, bound, ball="l1"):
    """The Euclidean projection of v onto {λ ≥ 0, Σ_j λ_j ≤ bound} ("l1") or [0, bound]^J ("box").

    Why the ℓ1 ball: the primal step reads Σ_j λ_j ∇g_j, so it is the *total* multiplier that
    must stay comparable to the objective's O(1) push; a box lets J one-sided pieces (252 for
    eight groups and three labels) add up to J·bound, which drowns the objective (and its clipped
    per-row gradient) whatever happens to the error.  With J = 1 or 2 (one |gap|, one side
    active) the two sets agree.  (The reductions approach of Agarwal et al. 2018 bounds ‖λ‖₁ too.)"""
    v = np.maximum(np.asarray(v, dtype=float), 0.0)
    if ball == "box":
        return np.minimum(v, bound)
    if v.sum() <= bound:
        return v
    u = np.sort(v)[::-1]                 # simplex projection (Duchi et al. 2008)
    css = np.cumsum(u) - bound
    k = np.nonzero(u - css / np.arange(1, len(u) + 1) > 0)[0][-1]
    return np.maximum(v - css[k] / (k + 1), 0.0)


def _schedule_factor(kind, t, T):
    """The step-size factor at step t of T (``lr_schedule`` / ``dual_schedule``): a function of
    the public t and T only, so it changes nothing in the privacy proof.  "cosine" decays to 0
    over the run, so the last iterates settle (with a constant step the primal and dual keep
    oscillating around the constraint's boundary and the second-half checkpoints span DP gaps
    from −0.08 to +0.08 on Adult)."""
    if kind == "constant":
        return 1.0
    if kind == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * t / T))
    raise ValueError(f"unknown step-size schedule {kind!r}")     # the option table refuses it first


def _rows_of(table, cell):
    """The rows ``table[c]`` of a coefficient table by the codes ``cell``
    (:func:`models.coefficient_rows`, the one home of this read; the worker's pass reads it)."""
    return models.coefficient_rows(table, cell)


class GatheredBatches:
    """A step's batch reads where the rows are in memory: the Poisson samples B_t (and B'_t)
    drawn here (:func:`poisson`, from ``gen``), each batch's rows gathered and read once by
    ``adapter.step``.  (The numbers of every fixed-seed run before #19's Dask path.)"""

    def __init__(self, adapter, rates, gen):
        self.adapter, self.gen = adapter, gen
        self.n, self.G, self.L = rates.n, rates.G, rates.L
        self.g_all, self.y_all = np.asarray(rates.data.group), np.asarray(rates.data.y)

    def read(self, theta, q, tables, clip, q_pub=None, pub_tables=None, pub_counts=False):
        """(C (G, L, L) the histogram Σ_{B_t} p_i ⊗ e_(g_i, y_i), the clipped gradient sum over
        B_t of the coefficient tables ``tables`` = (t_f, t_g) (G, L, L), and — with
        ``pub_tables`` (L, L) — B'_t's unclipped gradient sum and (``pub_counts``) its label
        totals Σ e_(y_i) ⊗ p_i, both times q/q'; else None, None)."""
        G, L, ad = self.G, self.L, self.adapter
        idx = poisson(self.gen, self.n, q)
        gi, yi = self.g_all[idx], self.y_all[idx]
        cell = gi * L + yi
        # one read of the batch: its soft predictions (the histogram) and its clipped
        # gradient sum (the numpy adapter gathers each block of rows once, models.LinearAdapter);
        # a row's coefficients c[g_i, y_i] are read off the (G·L, L) table by its cell
        # (``_rows_of``: the same numbers as c[gi, yi], ~15× faster on a batch)
        Pb, gsum, _ = ad.step(theta, idx, _rows_of(tables[0], cell), _rows_of(tables[1], cell),
                              clip=clip)
        C = H.batch_counts(gi, yi, Pb, G, L)
        if pub_tables is None:
            return C, gsum, None, None
        idx2 = poisson(self.gen, self.n, q_pub)      # public batch B'_t, independent of B_t
        y2 = self.y_all[idx2]
        P2, pub, _ = ad.step(theta, idx2, _rows_of(pub_tables[0], y2),
                             _rows_of(pub_tables[1], y2), clip=None)
        if q_pub != q:
            # B'_t at rate q' estimates the same batch-scaled sums (unbiased at any q')
            pub, P2 = pub * (q / q_pub), P2 * (q / q_pub)
        tot = H.batch_counts(np.zeros(len(idx2), np.int64), y2, P2, 1, L)[0] \
            if pub_counts else None
        return C, gsum, pub, tot

    def label_totals(self, theta):
        """Σ_i e_(y_i) ⊗ p_i(θ) over every row, (L, L): the adapter's pass over the chunks."""
        return self.adapter.label_totals(theta, self.L)


class PassBatches:
    """A step's batch reads as passes over Poisson samples, where the rows cannot be gathered
    (a Dask dataset's rows stay on its workers, #19).

    Each read is ``rows.poisson_map_sum(models.batch_pass, rate, source, ...)``: the client
    draws one 256-bit seed per partition from the run's secure ``source``, each worker samples
    its own rows (independent seeds: the union is one Poisson(q) sample of all the rows — the
    law the accountant's subsampled event assumes), computes its sampled rows' histogram and
    clipped gradient sum with the coefficient tables (public: functions of earlier releases)
    and sends back those sums only.  A step's coefficients are fixed before its batch is
    drawn, so one pass gives both blocks of the step's release (the histogram need not be
    released before the gradient is read); under ``protect="sensitive"`` B'_t is a second,
    independent sample drawn in the same round trip (``rows.poisson_map_sums`` where the row
    source has it).  The seeds and the samples are never released.  Noise is added on the
    client, after the merge, by the same code as :class:`GatheredBatches`' (``_train``).

    Several steps' samples per read (a row source with ``poisson_prefetch``: a Dask dataset
    read from files).  A step's pass reads the whole partition to use a q-sample of it; since
    Poisson membership does not depend on θ or on the rows, one read draws the samples of the
    next K steps (every job's: B_t and B′_t), keeps them on the workers, and each step's pass
    reads its own stored sample (:meth:`privfair.data.dask_data.DaskRows.poisson_prefetch`
    proves each step's sample keeps its law: an independent Poisson(q) sample from its own
    seeds, so the same event and certificate).  K is :meth:`prefetch_steps` of public
    quantities (n, the rates, the schema's bytes per row, the workers, a memory budget) and
    at most the ``steps`` left; K = 1 keeps one read a step (persisted partitions)."""

    def __init__(self, adapter, rates, source, steps=None):
        self.models, self.terms, self.rows = models, adapter.terms, adapter.rows
        self.source, self.G, self.L = source, rates.G, rates.L
        self.P = adapter.P
        # the pass functions of the adapter's kind: the numpy rule's or a pf.TorchModel's
        self.batch_pass, self.totals_pass = models.pass_functions(adapter.terms)
        #: the steps still to read (None: unknown), and the stored samples of those drawn ahead
        self.steps_left, self.stock = (None if steps is None else int(steps)), None

    def _sums(self, jobs):
        rows = self.rows
        out = self._stored_sums(jobs) if hasattr(rows, "poisson_prefetch") else None
        if out is None and hasattr(rows, "poisson_map_sums"):  # every sample in one round trip
            out = rows.poisson_map_sums(jobs, self.source)
        elif out is None:
            out = [rows.poisson_map_sum(fn, rate, self.source, *params)
                   for fn, rate, params in jobs]
        if self.steps_left is not None:
            self.steps_left -= 1
        return out

    def _stored_sums(self, jobs):
        """This step's sums over samples drawn ahead (drawing the next K steps' first where
        none is left), or None where K = 1 (one read a step)."""
        rates = tuple(float(rate) for _, rate, _ in jobs)
        stock = self.stock
        if stock is None or stock.left == 0 or stock.rates != rates:
            if stock is not None:
                stock.release()
            self.stock = stock = None
            k = self.rows.prefetch_steps(rates, self.steps_left)
            if k < 2:
                return None
            stock = self.stock = self.rows.poisson_prefetch(rates, k, self.source)
        return stock.map_sums([(fn, params) for fn, _, params in jobs])

    def _merged(self, part, G, theta):
        """(C, gradient sum) from a merged :func:`models.batch_pass` partial (None: nobody was
        sampled)."""
        if part is None:
            return np.zeros((G, self.L, self.L)), np.zeros(self.P)
        return self.models.merged_step(self.terms, theta, part)

    def read(self, theta, q, tables, clip, q_pub=None, pub_tables=None, pub_counts=False):
        """As :meth:`GatheredBatches.read`, by passes (the samples are other draws of the same
        law, so a run's numbers differ from the in-memory run's; its certificate does not)."""
        bp, terms, L = self.batch_pass, self.terms, self.L
        theta = np.asarray(theta, dtype=float)
        jobs = [(bp, q, (terms, theta, tables[0], tables[1], True, self.G, L, clip))]
        if pub_tables is not None:
            jobs.append((bp, q_pub, (terms, theta, pub_tables[0], pub_tables[1], False, 1, L,
                                     None)))
        parts = self._sums(jobs)
        C, gsum = self._merged(parts[0], self.G, theta)
        if pub_tables is None:
            return C, gsum, None, None
        tot, pub = self._merged(parts[1], 1, theta)
        tot = tot[0]
        if q_pub != q:
            pub, tot = pub * (q / q_pub), tot * (q / q_pub)
        return C, gsum, pub, (tot if pub_counts else None)

    def label_totals(self, theta):
        """Σ_i e_(y_i) ⊗ p_i(θ) over every row, (L, L): one pass (no sample)."""
        C = self.rows.map_sum(self.totals_pass, self.terms,
                              np.asarray(theta, dtype=float), self.L)
        return np.zeros((self.L, self.L)) if C is None else np.asarray(C, dtype=float)


def batches_for(adapter, rates, gen, source=None, steps=None):
    """How a run reads its batches: :class:`GatheredBatches` where the row source gathers rows
    (in memory; an in-memory torch adapter's tensors: its ``rows`` is None), else
    :class:`PassBatches` (a row source that only runs passes — a Dask dataset's; the adapter's
    per-row arithmetic, ``terms``, travels: the numpy rule's or a ``pf.TorchModel``'s;
    ``steps``, the run's T, bounds how many steps' samples a read draws ahead)."""
    rows = getattr(adapter, "rows", None)
    if rows is None or hasattr(rows, "gather") or not hasattr(adapter, "terms"):
        return GatheredBatches(adapter, rates, gen)
    if source is None:
        from privfair.privacy.randomness import as_source

        source = as_source(gen)
    return PassBatches(adapter, rates, source, steps)


def train(problem, adapter, P, draws, gen, progress=False, source=None):
    """Run the loop of the module docstring; returns (checkpoints, trace, state).

    ``P`` holds the plan's parameters; ``draws`` is the schedule's :class:`Draws` (None for a
    non-private run: no noise); ``gen`` a numpy Generator for the Poisson samples drawn in
    memory; ``source`` the run's :class:`~privfair.privacy.randomness.RandomSource`, from which
    a Dask run draws its per-partition seeds (default: one over ``gen``)."""
    batches = batches_for(adapter, problem.rates, gen, source, P["T"])
    if getattr(adapter, "batch_blas", False):
        # the numpy adapter's products are batch-sized: BLAS on one thread (see there); a
        # torch adapter keeps its own threads
        with blas_single_thread():
            return _train(problem, adapter, P, draws, batches, progress)
    return _train(problem, adapter, P, draws, batches, progress)


def _train(problem, adapter, P, draws, batches, progress):
    r = problem.rates
    lay = H.Layout(r)
    G, L, n = r.G, r.L, r.n
    q, T, m = P["sampling_rate"], P["T"], P["sampling_rate"] * r.n
    # the split steps, or the row unit's (which protect="sensitive" runs by default: see the
    # package docstring, sensitive_algorithm)
    sensitive = P.get("algorithm_unit", P["protect"]) == "sensitive"
    q_pub = P.get("public_rate", q)        # the public batch B'_t's rate q' ("sensitive")
    a, b = math.sqrt(P["hist_share"]), math.sqrt(1.0 - P["hist_share"])
    z, C = P["noise_multiplier"], P["clip"]
    Hb = math.sqrt(1.0 - 1.0 / G) if sensitive else 1.0
    floor = np.full((G, L), P["mass_floor"])
    q_declared = r.group_mass()[0]
    if q_declared is not None:
        floor = np.maximum(floor, np.asarray(q_declared))
    from .split import split

    f = problem.f
    gs = [p for g in problem.g for p in split(g)] if P.get("split", True) else list(problem.g)
    J = len(gs)
    lam = np.zeros(J)
    beta = P["ema"]
    totals_batch = P.get("group_free_totals", "exact") == "batch"
    Dh = G * L * L
    prior = np.full((G, L, L), m / (G * L * L))
    acc, wsum = np.zeros((G, L, L)), 0.0
    labels = np.zeros(L)          # Σ_t of the released histograms' label margins
    theta = np.asarray(adapter.theta0, dtype=float).copy()
    lr, lr_d, lam_max = P["lr"], P["lr_dual"], P["lambda_max"]
    if P.get("dual_scale", False) and J > 2:
        # the dual step per piece shrinks as √(2/J): the noise of g(ℓ̂) moves λ by ~η·√J a step,
        # so this keeps λ's movement that of one |gap| (J = 2, where ``lr_dual`` was chosen);
        # with η = 1 at J = 56 (8 groups, DP over all pairs) λ oscillated even at ε = ∞
        lr_d = lr_d * math.sqrt(2.0 / J)
    ck_steps = set(P["checkpoint_steps"])
    checkpoints, trace = [], []
    Cest = prior
    from privfair.util.progress import bar

    sched = P.get("lr_schedule", "constant")
    dsched = P.get("dual_schedule", "constant")
    for t in bar(range(T), "lagrangian_sgda", progress, min_steps=200):
        fac = _schedule_factor(sched, t, T)
        dfac = _schedule_factor(dsched, t, T)
        ell, pi = H.rates_from_counts(Cest, lay, m, floor)
        wf = np.asarray(f.grad(ell), dtype=float)
        wg = sum((lam[j] * np.asarray(gs[j].grad(ell), dtype=float) for j in range(J)),
                 np.zeros(lay.K)) if J else np.zeros(lay.K)
        cf, cg = H.row_coefficients(wf, lay, pi), H.row_coefficients(wg, lay, pi)
        if P.get("normalize", False):
            # the primal step on (f + λᵀg)/(1 + ‖λ‖₁): the same direction, a step that stays
            # bounded however large the multipliers grow (see ``dual_project``)
            s_ = 1.0 / (1.0 + float(lam.sum()))
            cf, cg = cf * s_, cg * s_
        clip = C if draws is not None else None
        if not sensitive:
            hist, gsum, _, _ = batches.read(theta, q, (cf, cg), clip)
            pub_tot = None
        else:
            # the group-free reference: the π̂-weighted mean over groups (post-processing of
            # releases), so that the private part is a contrast of mean ≈ 0 over the groups
            wgt = (pi / pi.sum(axis=0, keepdims=True))[:, :, None]        # (G, L, 1)
            cf_ref, cg_ref = (wgt * cf).sum(axis=0), (wgt * cg).sum(axis=0)   # (L, L)
            # B_t with the group-dependent coefficients; B'_t (rate q', independent of B_t)
            # with the group-free ones, read on its own rows (never a product over B_t's)
            hist, gsum, pub, P2tot = batches.read(theta, q, (cf - cf_ref, cg - cg_ref), clip,
                                                  q_pub, (cf_ref, cg_ref), totals_batch)
            hist = hist - hist.mean(axis=0, keepdims=True)    # H.centred_counts of the batch
            # the group-free totals Σ_g C[g, y, ŷ] read x, y, θ only (public under this unit):
            # "exact" — on all rows, scaled to a batch (a pass over the rows chunk by chunk,
            # every step); "batch" — on the public batch B'_t already read for the group-free
            # gradient (unbiased for the same scaled totals; sampling noise only, which the EMA
            # averages; one batch instead of n rows a step, #19)
            if totals_batch:
                pub_tot = P2tot
            else:
                pub_tot = batches.label_totals(theta) * q
        if draws is not None:
            noise = np.asarray(draws.gaussian_noise("steps", (Dh + adapter.P,)), dtype=float)
            hist = hist + noise[:Dh].reshape(G, L, L) * (Hb / a)
            gsum = gsum + noise[Dh:] * (C / b)
        if sensitive:
            hist = H.project_centred(hist) + pub_tot[None, :, :] / G
            gsum = gsum + pub
        # bias-corrected EMA of the released histograms (post-processing)
        acc = beta * acc + (1.0 - beta) * hist
        labels += hist.sum(axis=(0, 2))
        wsum = beta * wsum + (1.0 - beta)
        Cest = acc / wsum
        theta = adapter.project(theta - fac * lr * gsum / m)
        if J:
            ell_new, _ = H.rates_from_counts(Cest, lay, m, floor)
            gv = np.array([float(gj.value(ell_new)) for gj in gs])
            lam = dual_project(lam + dfac * lr_d * gv, lam_max, P.get("dual_ball", "l1"))
        else:
            gv = np.zeros(0)
        if t in ck_steps:
            checkpoints.append(theta.copy())        # raw: run() releases them
        if (t + 1) % max(1, T // 20) == 0 or t == T - 1:
            trace.append({"step": t + 1, "lambda": lam.tolist(), "g_estimate": gv.tolist()})
    state = {"lambda": lam.tolist(),
             "rates_estimate": H.rates_from_counts(Cest, lay, m, floor)[0].tolist(),
             "last": theta.copy(),
             # E[a batch's rows of label y] = q·n_y: the T released margins estimate n_y
             # (post-processing; the held-out floor chooses its constant with it, #18)
             "label_counts": (labels / (T * q)).tolist()}
    return checkpoints, trace, state

