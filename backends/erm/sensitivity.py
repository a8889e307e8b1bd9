"""The sensitivities the row-private ERM releases are calibrated to, with the text their events
cite: the gradient's (:func:`gradient_sensitivity`, proved by
:meth:`privfair.models.erm.ERM.gradient_sensitivity`) and the certified minimizer's
(:func:`minimizer_sensitivity`: Δ_g/Λ for the exact minimizers by strong convexity — Chaudhuri,
Monteleoni & Sarwate 2011, Cor 8 — plus 2τ, twice the solver's public tolerance)."""

from __future__ import annotations

from .solver import tau_target


def gradient_sensitivity(erm, relation="row"):
    """(Δ_g, source): :meth:`privfair.models.erm.ERM.gradient_sensitivity` with the text the
    events cite."""
    dg = erm.gradient_sensitivity(relation)
    rho, B, planar = erm.sensitivity_geometry()
    if relation == "sensitive":
        how = (f"(ω/n)·ρ·sup|l'| = {erm.row_weight_bound:.4g}/{erm.n}·{rho:.4g}·"
               f"{erm.loss.deriv_bound(B, erm.label_bound):.4g} (one row's weight changes, its x "
               "and y do not)")
    else:
        how = (f"(ω/n)·ρ·κ = {erm.row_weight_bound:.4g}/{erm.n}·{rho:.4g}·"
               f"{dg * erm.n / (erm.row_weight_bound * rho):.4g} (κ: the {erm.loss.name} loss's "
               f"gradient diameter at margins ≤ {B:.4g}{'' if planar else ', one dimension'}; "
               "privfair.models.erm.ERM.gradient_sensitivity; one row replaced)")
    return dg, how


def minimizer_sensitivity(erm, relation="row"):
    """Δ_g/Λ + 2τ ≥ ‖θ̃(D) − θ̃(D')‖₂ for the certified minimizers θ̃ of neighbours D ~ D':
    the exact minimizers move by at most Δ_g/Λ (Λ-strong convexity; the proof is in
    :mod:`backends.erm.output_perturbation`) and each θ̃ is within the public τ
    (:func:`backends.erm.solver.tau_target`) of its own.  Output perturbation's release and
    dual Frank–Wolfe's scores and primal recovery are calibrated to it."""
    return erm.gradient_sensitivity(relation) / erm.l2 + 2 * tau_target(erm)
