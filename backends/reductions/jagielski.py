"""Building blocks of the two [J] backends (Jagielski et al. 2019): the constraints' gap terms
(read by :mod:`privfair.analysis.gap_terms`) as equalized-odds pairs, proven sensitivities of linear
scores, the released cell counts, the post-processing LP, and the bounds of [J] Thm 3.1 and of the Thm 4.3/4.4
argument with this implementation's constants.  (The releases themselves are scheduled by the
backends and drawn through :mod:`privfair.privacy.release`.)

See ``backends/reductions/postprocessing.py``, ``backends/reductions/oracle_learner.py`` and
``docs/published_algorithms.md`` for the theorems and the proofs' steps.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np

# the recogniser (constraints → gap terms) lives in the compiling layer, privfair/analysis/gap_terms.py;
# its names stay importable from here
from privfair.analysis.gap_terms import Knob, Term, Unsupported, extract_terms, objective_weights  # noqa: F401
# N[k, a, y]: one home, where the backend's pass over the rows sums it chunk by chunk (#19)
from privfair.models.postprocess import cell_counts  # noqa: F401

#: the label index of a selection-rate pair (P(ŷ = 1 | g), both labels): demographic parity
SELECTION = -1
#: confidence parameter β of the utility bounds (failure probability), unless given
BETA = 0.05
#: relative slack of the exponential mechanism's exact sampler (ε rounded down to 12 significant
#: bits, scores rounded to a grid of 2^-10 Δ): its utility bound is at most this factor worse
SAMPLER_SLACK = 1.002

_RATE_KIND = {"fpr": (0, +1.0, 0.0), "tnr": (0, -1.0, 1.0),   # (label y, sign, constant):
              "tpr": (1, +1.0, 0.0), "fnr": (1, -1.0, 1.0),   # coordinate = sign·P1_{g,y} + const
              "selection": (SELECTION, +1.0, 0.0)}            # P1_{g,·}: both labels



# ----------------------------------------------------------------------------- gap pairs
def rate_coordinates(rates):
    """{coordinate: (kind, group index)} for the fpr/tnr/tpr/fnr and selection coordinates
    (binary labels)."""
    out = {}
    for kind in _RATE_KIND:
        acc = getattr(rates, kind)
        for gi, g in enumerate(rates.groups):
            out[acc.index(g)] = (kind, gi)
    return out


@dataclass(frozen=True)
class Pair:
    """s·(P1_{a,y} − P1_{b,y}) + κ ≤ c, i.e. P1_{a,y} − P1_{b,y} ≤ (c − κ)/s = ``gamma``.

    P1_{g,0} is the false-positive rate of group g, P1_{g,1} its true-positive rate, and
    P1_{g,SELECTION} its selection rate (both labels: a demographic-parity gap)."""

    y: int
    a: int
    b: int
    gamma: float
    constraint: int
    text: str
    scale: float = 1.0      # s: a unit of the normalised gap is s units of the user's g


def eo_pairs(rates, terms):
    """Each term as an equalized-odds gap between two groups (for [J] Algorithm 1's LP)."""
    coords = rate_coordinates(rates)
    pairs = []
    for t in terms:
        nz = np.flatnonzero(np.abs(t.a) > 1e-15)
        bad = [rates.names[k] for k in nz if k not in coords]
        if bad:
            raise Unsupported(f"term {t.text} reads {', '.join(bad)}; post-processing constrains "
                              "equalized-odds and parity gaps (differences of fpr/tpr/fnr/tnr or "
                              "of selection rates between groups)")
        comb, kappa, ys = {}, 0.0, set()
        for k in nz:
            kind, gi = coords[k]
            y, sign, const = _RATE_KIND[kind]
            comb[gi] = comb.get(gi, 0.0) + t.a[k] * sign
            kappa += t.a[k] * const
            ys.add(y)
        comb = {g: v for g, v in comb.items() if abs(v) > 1e-12}
        if len(ys) != 1 or len(comb) != 2 or abs(sum(comb.values())) > 1e-9 * max(
                abs(v) for v in comb.values()):
            raise Unsupported(f"term {t.text} is not a multiple of a gap P1_a − P1_b of one rate "
                              "(fpr, tpr, their complements, or selection) between two groups")
        (g1, v1), (g2, v2) = sorted(comb.items(), key=lambda kv: -kv[1])
        s = v1                                            # > 0
        pairs.append(Pair(ys.pop(), g1, g2, (t.c - kappa) / s, t.constraint, t.text, s))
    return pairs


def affine_range(rates, w):
    """A public bound on sup_c w·ℓ(c, D) − inf_c w·ℓ(c, D) over decisions (any dataset).

    Each (g, y) joint block holds the fixed mass n_gy/n spread over ŷ, so its part lies between
    Σ q_gy·min_ŷ w and Σ q_gy·max_ŷ w: range ≤ max_{g,y} spread (Σ q_gy = 1).  A conditional block
    sums to ≤ 1 (clamped denominators): its part lies in [min(0, min w), max(0, max w)].  A
    selection rate lies in [0, 1].  (The compiler's interval range over the box [0,1]^K is
    larger: 4 for the error with two groups, against 1 here.)"""
    w, lay = np.asarray(w, dtype=float), rates.layout
    Jw = w[lay.joint]                                      # (G, L, L)
    out = float((Jw.max(axis=2) - Jw.min(axis=2)).max())
    Rw = w[lay.rate]
    out += float((np.maximum(Rw.max(axis=2), 0) - np.minimum(Rw.min(axis=2), 0)).sum())
    if lay.selection is not None:
        out += float(np.abs(w[lay.selection]).sum())
    return out


# ----------------------------------------------------------------------------- sensitivities
def block_constants_for(rates, group_mass_bound):
    """The block constants of every conditional block (None without a group-mass bound)."""
    if rates.group_mass(group_mass_bound)[0] is None:
        return None
    return _constants(rates, group_mass_bound, True)


def _constants(rates, group_mass_bound, need):
    from privfair.errors import GroupMassError
    from privfair.statistics.stats import block_constants

    q, qg = rates.group_mass(group_mass_bound)
    if q is None:
        if need:
            raise GroupMassError("group_mass_bound", None, "weights on conditional rates need a "
                                 "group-mass lower bound (declared or privately estimated)")
        q, qg = np.ones((rates.G, rates.L)), np.ones(rates.G)
    return block_constants(rates.n * q, rates.n), block_constants(rates.n * qg, rates.n)


@functools.lru_cache(maxsize=64)
def _moves(G, L, relation):
    """Index arrays of every allowed move (g, y, ŷ) → (g', y', ŷ') of one row."""
    prof = list(itertools.product(range(G), range(L), range(L)))
    mv = [(a + b) for a in prof for b in prof if a != b
          and (relation != "sensitive" or (a[1] == b[1] and a[2] == b[2]))]
    return np.array(mv, dtype=np.int64).reshape(-1, 6)


def linear_sensitivity(rates, w, relation, group_mass_bound=None, constants=None):
    """sup over decisions and neighbours of |w·ℓ(c, D) − w·ℓ(c, D')|, for fixed weights w.

    For a move of one row from profile (g, y, ŷ) to (g', y', ŷ') (relation "sensitive": only g
    changes): the joint part changes by exactly (w_J[g',y',ŷ'] − w_J[g,y,ŷ])/n; a conditional
    block the row leaves or joins changes on the row's own cell by ≤ ``own`` and on one other
    cell by ≤ ``other`` (:func:`privfair.statistics.stats.block_constants`; the change is affine in the
    other rows' contributions, so |w·δ| is maximised at the vertices where it is supported on
    two cells), giving |w_ŷ|·own + max_{k≠ŷ}|w_k|·other; a block the row stays in while its
    prediction flips changes by |w_ŷ' − w_ŷ|/d ≤ |w_ŷ' − w_ŷ|·fixed; the selection rate likewise.
    The triangle inequality over blocks gives the bound, maximised over moves.  It is a seminorm
    of w (so subadditive).  Binary and multi-class labels.  ``constants``: the block constants
    of :func:`block_constants_for` (computed once per rates and bound), else computed here.
    """
    w = np.asarray(w, dtype=float)
    n, G, L = rates.n, rates.G, rates.L
    Jx, Rx, Sx = rates.layout.joint, rates.layout.rate, rates.layout.selection
    wRs = w[Rx]                                             # (G, L, L)
    wR = np.abs(wRs)
    wS = np.abs(w[Sx]) if Sx is not None else np.zeros(G)
    c, cg = constants or _constants(rates, group_mass_bound, bool(wR.any() or wS.any()))
    # leave[g, y, j] = |w_j|·own + max_{k≠j}|w_k|·other
    if L == 2:
        others = wR[:, :, ::-1]
    else:
        others = np.stack([np.max(np.delete(wR, j, axis=2), axis=2, initial=0.0)
                           for j in range(L)], axis=2)
    leave = wR * c["own"][:, :, None] + others * c["other"][:, :, None]
    if Sx is not None:
        sel_leave = wS[:, None] * np.stack([cg["other"], cg["own"]], axis=1)   # (G, 2): ŷ = 0, 1
    M = _moves(G, L, relation)
    if M.size == 0:
        return 0.0
    g, y, j, g2, y2, j2 = M.T
    s = np.abs(w[Jx[g2, y2, j2]] - w[Jx[g, y, j]]) / n
    same = (g == g2) & (y == y2)
    s += np.where(same, np.abs(wRs[g, y, j2] - wRs[g, y, j]) * c["fixed"][g, y],
                  leave[g, y, j] + leave[g2, y2, j2])
    if Sx is not None:
        s += np.where(g == g2, np.where(j != j2, wS[g] * cg["fixed"][g], 0.0),
                      sel_leave[g, j] + sel_leave[g2, j2])
    return float(s.max())


def regression_coefficients(rates, w):
    """Per row, the coefficient c_i of h(x_i) in w·ℓ(h) (binary labels): w·ℓ(h) = Σ_i c_i h(x_i)
    + const.  Uses the clamped denominators (private; the released sum is noised)."""
    return rates.row_coefficients(w)            # the one home of ℓ's coefficient map


def regression_table(rates, w):
    """The same coefficients by (group, label) cell, (G, 2): c_i = table[g_i, y_i] — what a
    pass over the rows reads (no per-row vector; a Dask dataset's cells stay on its workers)."""
    return rates.cell_coefficients(w)


def regression_sensitivity(rates, w, x1, group_mass_bound=None, constants=None):
    """ℓ1 sensitivity of v = Σ_i c_i x̂_i under protect="sensitive" (x fixed), x̂ = (x, 1),
    ``x1`` = max_i ‖x̂_i‖₁ (public: X does not change between neighbours).

    A row moving from group g to g' (label y): its own coefficient changes by
    |ΔJ(g',y) − ΔJ(g,y)|/n plus the rate and selection terms; every other row of a block it
    leaves or joins changes by ΔR·(1/d' − 1/d).  Summing, block by block, ‖Δv‖₁ ≤ x1·|ΔR|·
    (1/d + (m−1)|1/d(m−1) − 1/d(m)|) ≤ x1·|ΔR|·l1, with l1 of :func:`block_constants`.
    """
    w = np.asarray(w, dtype=float)
    Jx, Rx, Sx = rates.layout.joint, rates.layout.rate, rates.layout.selection
    dJ = w[Jx[:, :, 1]] - w[Jx[:, :, 0]]                    # (G, 2)
    dR = np.abs(w[Rx[:, :, 1]] - w[Rx[:, :, 0]])
    wS = np.abs(w[Sx])
    c, cg = constants or _constants(rates, group_mass_bound, bool(dR.any() or wS.any()))
    best = 0.0
    for g, g2 in itertools.permutations(range(rates.G), 2):
        for y in (0, 1):
            s = (abs(dJ[g2, y] - dJ[g, y]) / rates.n + dR[g, y] * c["l1"][g, y]
                 + dR[g2, y] * c["l1"][g2, y] + wS[g] * cg["l1"][g] + wS[g2] * cg["l1"][g2])
            best = max(best, s)
    return float(x1 * best)


# ----------------------------------------------------------------------------- [J] Algorithm 1
def thm31_slack(den_a, den_b, n_groups, epsilon, beta):
    """[J] LP (1): 4 ln(4|A|/β)/(min{q̃_a, q̃_b}·m·ε), with q̃·m the (clamped) noisy group-label
    counts ``den``."""
    if not math.isfinite(epsilon):
        return 0.0
    return 4.0 * math.log(4 * n_groups / beta) / (min(den_a, den_b) * epsilon)


def pair_den(den, g, y):
    """The denominator of P1_{g,y} from the (clamped) label totals ``den`` (G, 2): n_{g,y}, or
    the group's total for a selection rate."""
    return float(den[g, y]) if y != SELECTION else float(den[g].sum())


def solve_lp(Nt, n, w_joint, pairs, slacks, monotone=False):
    """[J] LP (1) on released counts: min f̃(p) s.t. P̃1_a(p) − P̃1_b(p) ≤ γ_k + slack_k,
    0 ≤ p ≤ 1, with p[k, g] = P(ỹ = 1 | base level k, A = g) (k = ŷ for a binary base).

    ``Nt`` (K, G, 2): released counts, clamped at 0; joint cells are Nt·p/n, rates
    Σ_k Nt[k,g,y]·p[k,g]/den[g,y] with den = max(Σ_k Nt[k,g,y], 1).  ``w_joint`` (G, 2, 2):
    the objective's weights on joint[g, y, ŷ].  ``monotone``: p[k, g] ≤ p[k + 1, g] — the
    derived predictors of a score that are randomized group thresholds (Hardt et al. 2016 §4:
    every point of a group's ROC hull is one), which keeps the LP from picking single levels
    whose noisy counts happen to look good.  p = 0 is always feasible (every rate 0) when
    γ_k ≥ 0.  Returns (p (K, G), status text).
    """
    from scipy.optimize import linprog

    K, G = Nt.shape[0], Nt.shape[1]
    den = np.maximum(Nt.sum(axis=0), 1.0)                    # (G, 2)
    num = lambda g, y: Nt[:, g, y] if y != SELECTION else Nt[:, g, :].sum(axis=1)  # noqa: E731
    # objective: Σ_{g,y} (w1 − w0)·Σ_k Nt[k,g,y] p[k,g] / n  (+ constant)
    cost = (Nt * (w_joint[:, :, 1] - w_joint[:, :, 0])[None]).sum(axis=2) / n    # (K, G)
    rows, rhs = [], []
    for pr, s in zip(pairs, slacks):
        row = np.zeros((K, G))
        row[:, pr.a] += num(pr.a, pr.y) / pair_den(den, pr.a, pr.y)
        row[:, pr.b] -= num(pr.b, pr.y) / pair_den(den, pr.b, pr.y)
        rows.append(row.ravel())
        rhs.append(pr.gamma + s)
    if monotone:
        for k in range(K - 1):
            for g in range(G):
                row = np.zeros((K, G))
                row[k, g], row[k + 1, g] = 1.0, -1.0
                rows.append(row.ravel())
                rhs.append(0.0)
    kw = {"A_ub": np.array(rows), "b_ub": np.array(rhs)} if rows else {}
    res = linprog(cost.ravel(), bounds=[(0.0, 1.0)] * (K * G), method="highs", **kw)
    if res.status != 0 or res.x is None:
        return np.zeros((K, G)), f"LP failed ({res.message}); returned the feasible p = 0"
    return np.clip(res.x.reshape(K, G), 0.0, 1.0), "optimal"


def thm31_bounds(n_groups, m, epsilon, beta, q_min):
    """[J] Thm 3.1 with its constants: (error excess over the non-private γ-fair
    post-processing, extra gap beyond γ), both w.p. ≥ 1 − β:

    err ≤ err* + 24|A| ln(4|A|/β)/(mε),   gap ≤ γ + 8 ln(4|A|/β)/(q·m·ε − 4 ln(4|A|/β)),

    q the smallest group-label mass of the pair (here a public or planning lower bound), which
    the theorem needs > 4 ln(4|A|/β)/(mε) (else the gap bound is inf)."""
    if not math.isfinite(epsilon):
        return 0.0, 0.0
    if q_min * m * epsilon - 4 * math.log(4 * n_groups / beta) <= 0:
        return thm31_terms(n_groups, m, epsilon, beta, q_min)[0], math.inf
    return thm31_terms(n_groups, m, epsilon, beta, q_min)


def thm31_terms(n_groups, m, epsilon, beta, q_min, log=math.log):
    """The two terms of [J] Thm 3.1, pure (no branch): 24|A| ln(4|A|/β)/(mε) and
    8 ln(4|A|/β)/(q m ε − 4 ln(4|A|/β)) (valid where the denominator is > 0).  ``log`` may be
    ``sympy.log``."""
    lg = log(4 * n_groups / beta)
    return 24 * n_groups * lg / (m * epsilon), 8 * lg / (q_min * m * epsilon - 4 * lg)


# ----------------------------------------------------------------------------- [J] Algorithm 3
def eg_lambda(theta, B):
    """λ_k = B·e^{θ_k}/(1 + Σ_k' e^{θ_k'}) — exponentiated gradient with a slack coordinate
    (θ_slack = 0), computed stably."""
    if theta.size == 0:
        return theta.copy()
    top = max(0.0, float(theta.max()))
    e = np.exp(theta - top)
    return B * e / (math.exp(-top) + e.sum())


def term_geometry(terms, support):
    """(R, A1, Ainf, A2): sup_ℓ |a·ℓ − c| over the box, and max ‖a_S‖₁, ‖a‖∞, ‖a‖₂²."""
    if not terms:
        return 0.0, 0.0, 0.0, 0.0
    R = max(max(abs(np.minimum(t.a, 0).sum() - t.c), abs(np.maximum(t.a, 0).sum() - t.c))
            for t in terms)
    A1 = max(float(np.abs(t.a[support]).sum()) for t in terms)
    Ainf = max(float(np.abs(t.a).max()) for t in terms)
    A2 = max(float((t.a ** 2).sum()) for t in terms)
    return float(R), A1, Ainf, A2


def oracle_nu(*, T, B, n_terms, n_candidates, geometry, eps_oracle, s_learner, b, n_support,
              beta=BETA, log=math.log, sqrt=math.sqrt, Min=min, Max=max):
    """(ν, η): the game's approximation (Thm 4.3's ν) w.p. ≥ 1 − β, and the auditor's step.

    ν = ν_L + ν_A with
    ν_L = 1.002·(2 s/ε')·(ln|H| + ln(2T/β))          exponential-mechanism best responses
                                                     (McSherry–Talwar; union over T rounds);
    ν_A = [B(ln N/η + η T Ĝ²) + x₁ + B·x₂]/T          Hedge on N = terms + 1 experts with the
                                                     noisy gains, |gain| ≤ Ĝ = R + A₁z*,
                                                     η = min(1/Ĝ, √(ln N/(T Ĝ²)));
    z* = b ln(6|S|T/β) bounds every Laplace draw; x₁ bounds the martingale Σ_t λ_t·W_t and x₂ the
    comparator's Σ_t a_k·Z_t (sub-exponential Laplace tails, E e^{sZ} ≤ e^{2s²b²} for
    |s| ≤ 1/(2b)), each w.p. ≥ 1 − β/6.  ``b`` = 0 and ``eps_oracle`` = inf for ε = ∞.
    """
    # pure: ``log, sqrt, Min, Max`` may be sympy's (Backend.formula); the branches test only
    # structural facts (ε' finite, a release at all), which hold for positive symbols too
    R, A1, Ainf, A2 = geometry
    N = n_terms + 1
    if eps_oracle != math.inf:
        nu_L = SAMPLER_SLACK * 2 * s_learner / eps_oracle * (
            log(Max(n_candidates, 1)) + log(2 * T / beta))
    else:
        nu_L = 0.0
    if n_terms == 0:
        return nu_L, 0.0
    z = b * log(6 * max(n_support, 1) * T / beta) if b != 0 else 0.0
    Gh = Max(R + A1 * z, 1e-12)
    eta = Min(1.0 / Gh, sqrt(log(N) / (T * Gh * Gh)))
    hedge = B * (log(N) / eta + eta * T * Gh * Gh)
    x1 = x2 = 0.0
    if b != 0:
        V = B * B * Ainf * A1
        L1 = log(6 / beta)
        x1 = Max(b * sqrt(8 * V * T * L1), 4 * b * B * Ainf * L1)
        L2 = log(6 * n_terms / beta)
        x2 = Max(b * sqrt(8 * A2 * T * L2), 4 * b * Ainf * L2)
    return nu_L + (hedge + x1 + B * x2) / T, eta


def penalty_excess(nu, B, G, range_f, Max=max):
    """Excess of h_G = f + G·max(0, max_k r_k) over its minimum from a ν-approximate equilibrium
    of the game with bound B.  max_{‖λ‖₁≤B} λ·r = B·max(0, max_k r_k), so the game's value is
    min h_B and h_B(Q̄) ≤ min h_B + 2ν.  B = G: 2ν.  B < G: min h_B ≤ min h_G, and Thm 4.4's
    violation bound max_k r_k(Q̄) ≤ (range f + 2ν)/B (a γ-fair mixture exists) adds
    (G − B)·(range f + 2ν)/B.  B > G: 2ν is then relative to the γ-fair optimum f(Q*) ≥ min h_G
    (Thm 4.4's error bound), not to min h_G."""
    if B == 0:
        return 2 * nu + (math.inf if G > 0 else 0.0)
    return 2 * nu + Max(0.0, G - B) * (range_f + 2 * nu) / B
