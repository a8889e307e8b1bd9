"""The knob of ``sgda``: which checkpoint θ̄_s of the public λ path is released (docs/sgda.md).

Three private rules, each ε_select-DP for the one choice it outputs, each spending the share
``select_share`` of ε through the plan's schedule (release ``"select"``, recorded by its draw):

* ``select="penalized"``: permute-and-flip (McKenna & Sheldon
  2020, Thm 1; ≡ report-noisy-max with Exponential(2Δu/ε) noise, Ding et al. 2021) on the score

      u_s = −(err_s + P·max(0, g(ℓ(θ̄_s))))

  with err_s the training error of checkpoint s and P = ``select_penalty``.  Under
  protect="sensitive" (the only relation sgda implements) x and y are public and the
  checkpoints are fixed released values, so err_s does not change between neighbours: only the
  constraint term moves, by at most P·Δg (max(0, ·) is 1-Lipschitz) — Δu = P·Δg.  It weighs
  every checkpoint at once (the penalty form h = f + P·max(0, g) of [A] Lemma 4.1), so one
  noisy query of an early, unfair stage cannot end the search, as it can in AboveThreshold.
* ``select="mixture"`` (the default for equalized odds): the same permute-and-flip score over
  a larger public candidate set — every checkpoint and every two-checkpoint mixture w·θ̄_i + (1 − w)·θ̄_j (as a randomized
  classifier, not averaged weights) on the public grid w ∈ ``MIX_GRID``.  A mixture's rates are
  Σ w_i ℓ(θ̄_i), so they move by at most Δℓ between neighbours and its score by at most P·Δg, as
  for one checkpoint; its error Σ w_i err_i is public.  Permute-and-flip's guarantee does not
  depend on the number of candidates.  Checkpoints on a noisy path overshoot on both sides of
  the constraint (a TPR gap of +0.1 at one λ, −0.05 at the next), and a mixture of two of them
  can sit inside the level where no single one does.
* ``select="first"`` (the default for demographic parity): AboveThreshold (Dwork & Roth 2014,
  Thm 3.23) in path order — threshold noise Lap(2Δg/ε), query noise Lap(4Δg/ε) on
  g(ℓ(θ̄_s)); the first stage with −(g + ν) ≥ margin + ρ̃ is chosen, the last if none passes.

Δg = min over norms of L_g·Δℓ from the compiler's constants, with the conditional rates clamped
by the declared group-mass bound or by lower bounds derived from the released counts (slack of
failure probability ``BETA``).  At ε = ∞ both rules are exact (the first feasible checkpoint;
resp. the minimiser of the score).
"""

from __future__ import annotations

import math

import numpy as np

from privfair.analysis import gap_terms as GT  # the constraint → gap-terms recogniser

#: failure probability of the group-mass lower bounds derived from the released counts
BETA = 0.05
RULES = ("first", "penalized", "mixture")
#: public mixing weights of the two-checkpoint candidates of ``select="mixture"``
MIX_GRID = tuple(k / 10 for k in range(1, 10))


def sensitivity(g, r, q):
    """Δg: the smallest L_g·Δℓ over the norms whose Lipschitz constant is known."""
    best = math.inf
    for norm in ("l1", "l2", "linf"):
        L = g.lipschitz(norm)
        if L is None:
            continue
        d = r.delta_l(norm, "sensitive", support=g.support(), group_mass_bound=q)
        best = min(best, float(L) * float(d))
    if not math.isfinite(best) or best <= 0:
        raise GT.Unsupported(f"the sensitivity of {g} is unknown")
    return best


def mass_bounds(r, released, epsilon_count):
    """Lower bounds on the (group, label) masses from the released counts (post-processing:
    count − b·ln(cells/(2β)), floored at one row), or None without released counts."""
    if released is None:
        return None
    b = 2.0 / epsilon_count
    slack = b * max(0.0, math.log(released.size / (2.0 * BETA)))
    qv = np.maximum(released.ravel() - slack, 1.0) / r.n
    qv = qv / qv.sum() if qv.sum() > 1 else qv
    return {(g, lab): float(qv[gi * r.L + li]) for gi, g in enumerate(r.groups)
            for li, lab in enumerate(r.label_values)}


def constraint_values(problem, checkpoints, q_sel):
    """max_j g_j(ℓ(θ̄_s)) for every checkpoint (the deterministic predictions)."""
    r = problem.rates
    return np.array([max(float(g.value(r.evaluate(d, group_mass_bound=q_sel)))
                         for g in problem.g) for d in checkpoints])


def candidates(k, rule):
    """The public candidate set: a list of ((index, weight), ...) mixtures of the k checkpoints
    (single checkpoints first; two-checkpoint mixtures on ``MIX_GRID`` for ``"mixture"``)."""
    out = [((s, 1.0),) for s in range(k)]
    if rule == "mixture":
        out += [((i, w), (j, 1.0 - w)) for i in range(k) for j in range(i + 1, k)
                for w in MIX_GRID]
    return out


def mixture_scores(problem, checkpoints, errors, cands, q_sel):
    """(err, g) of every candidate: Σ w_i err_i and max_j g_j(Σ w_i ℓ(θ̄_i))."""
    r = problem.rates
    ells = np.array([r.evaluate(d, group_mass_bound=q_sel) for d in checkpoints])
    weights = np.zeros((len(cands), len(checkpoints)))       # candidate × checkpoint
    for row, c in zip(weights, cands):
        for i, w in c:
            row[i] += w
    # one batched evaluation of each constraint over all candidates' ℓ (333 on the default path)
    mixed = weights @ ells
    g = np.max([np.asarray(gj.value(mixed), dtype=float) for gj in problem.g], axis=0)
    return weights @ np.asarray(errors, dtype=float), g


def choose(problem, checkpoints, errors, o, P, released, private, draws):
    """(mixture, info): the released mixture ``((index, weight), ...)`` of checkpoints under
    ``o["select"]`` (module docstring).  Private choices draw through ``draws`` (the plan's
    schedule, release ``"select"``: its event was fixed at plan time, and its scale is the noise
    temperature per unit of the score sensitivity, ``_sgda_schedule.SELECT_UNIT``/ε_select).
    The one refusal this rule could meet (no group-mass bound for Δg) is made by
    ``SGDABackend.plan``, before any draw."""
    from privfair.privacy import laplace_mechanism, permute_and_flip

    r = problem.rates
    q_sel = None
    if r.group_mass_bound is None:
        q_sel = mass_bounds(r, released, P["epsilon_count"])
        if q_sel is None and private:
            # SGDABackend.plan refuses this case before anything is drawn; reaching it here
            # (after training) is a bug, not a refusal
            raise RuntimeError("internal error: choosing λ privately needs a group-mass bound, "
                               "which SGDABackend.plan should have required")
    errors = np.asarray(errors, dtype=float)
    rule, pen = o["select"], o["select_penalty"]
    if rule in ("penalized", "mixture"):
        cands = candidates(len(checkpoints), rule)
        err, gvals = mixture_scores(problem, checkpoints, errors, cands, q_sel)
        margin = 0.0 if o["margin"] == "auto" else o["margin"]
        scores = -(err + pen * np.maximum(gvals + margin, 0.0))
        if not private:
            return cands[int(np.argmax(scores))], {"selection": "exact"}
        # err reads x, y and the released θ̄_s only: constant between neighbours (protect=
        # "sensitive"); the penalty term moves by ≤ P·Δg.  Temperature 2Δu/ε = Δu·scale, so
        # permute-and-flip runs at ε' = 2/scale (= ε_select unless the audit reduces the noise).
        dg = max(sensitivity(g, r, q_sel) for g in problem.g)
        eps = P["epsilon_select"]
        chosen = int(draws.custom("select", lambda src, scale: permute_and_flip(
            scores, pen * dg, 2.0 / scale, src)))
        return cands[chosen], {"selection": "permute-and-flip", "selection_candidates": len(cands),
                               "selection_sensitivity": pen * dg,
                               "selection_noise_scale": 2.0 * pen * dg / eps,
                               "selection_margin": margin}
    gvals = constraint_values(problem, checkpoints, q_sel)
    if not private:
        margin = 0.0 if o["margin"] == "auto" else o["margin"]
        ok = np.flatnonzero(gvals <= -margin)
        return ((int(ok[0]) if ok.size else len(checkpoints) - 1, 1.0),), {"selection": "exact"}
    dg = max(sensitivity(g, r, q_sel) for g in problem.g)
    eps = P["epsilon_select"]
    b = 4.0 * dg / eps                                             # query noise scale
    margin = b * math.log(2.0) if o["margin"] == "auto" else o["margin"]

    def above_threshold(src, scale):
        # threshold noise Lap(2Δg/ε) = Lap(Δg·scale), query noise Lap(4Δg/ε) = Lap(2Δg·scale)
        eps_run = 2.0 / scale
        rho = float(laplace_mechanism(0.0, 2.0 * dg, eps_run, src))
        nu = np.asarray(laplace_mechanism(gvals, 4.0 * dg, eps_run, src), dtype=float)
        return np.flatnonzero(-nu >= margin + rho)                  # −(g + ν') ≥ T + ρ

    passed = draws.custom("select", above_threshold)
    chosen = int(passed[0]) if passed.size else len(checkpoints) - 1
    return ((chosen, 1.0),), {"selection": "AboveThreshold", "selection_sensitivity": dg,
                              "selection_query_scale": b, "selection_margin": margin,
                              "selection_passed": bool(passed.size)}
