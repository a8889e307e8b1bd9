"""The releases of ``sgda``, fixed at plan time: one :class:`~privfair.privacy.Schedule` of up to
three releases, drawn at run time only through ``schedule.open(accountant, rng)``.

* ``"counts"`` — the Laplace group-label counts for p̃ (‖Δ‖₁ ≤ 2: one row leaves one cell and
  joins another), when p̃ is not declared public;
* ``"steps"`` — the T DP-SGDA steps, each one release of both players' private sums on a Poisson
  batch of rate q, scaled so that a row's contribution has ℓ2 norm ≤ 1 and the noise is z·N(0, I)
  (``backends/sgda/sgda.py``, "Privacy"): a Poisson-subsampled Gaussian under substitution, or, at
  q = 1, a plain Gaussian of ℓ2 sensitivity 2 (both ends of the substituted row in the unit ball)
  — the same mechanism, which the accountant's exact Gaussian rule (GDP) then composes exactly;
* ``"select"`` — the private choice of λ (AboveThreshold or permute-and-flip), ε_select-DP.

The noise multiplier z is the one number fitted: the smallest z (largest 1/z) whose steps,
composed with the other two releases, stay within (ε, δ) by the accountant's own rules —
:func:`privfair.privacy.calibrate`, the one calibration function.  The count and selection shares
are fixed (public options); the steps take whatever the composition leaves.
"""

from __future__ import annotations

import math

#: the selection release's scale: its noise temperature per unit of its score sensitivity Δu
#: (2/ε_select); Δu = P·Δg is known only after the count release (Δg reads the group-mass bounds
#: derived from the released counts), so the event carries the unit temperature and the draw
#: multiplies it by Δu (``_sgda_select.choose``)
SELECT_UNIT = 2.0

STEPS_SOURCE = ("one row's group changes: W-block F_i ⊗ (e_a − 1/G) (‖·‖ ≤ √(1 − 1/G); "
                "w_noise='per_slot': 2F_i/√p̃, ‖·‖ ≤ 2/√p̃ of its slot) and θ-block J̃ᵢᵀk̄ "
                "(‖·‖ ≤ ζ·max‖k̄‖), each scaled by 1/(z_part·bound) → per-row norm "
                "(z_θ⁻² + z_W⁻²)^½ = 1/z")


def count_event(G, L, epsilon_count):
    from privfair.privacy import laplace_event

    return laplace_event(2.0, epsilon_count, dimension=G * L, label="group-label counts for p̃",
                         sensitivity_source="one row leaves one (group, label) cell and joins "
                                            "another, ‖Δ‖₁ ≤ 2")


def steps_event(z, T, q, source=STEPS_SOURCE):
    """The T steps at noise multiplier z (module docstring)."""
    from privfair.privacy import gaussian_event, subsampled_gaussian_event

    label = "DP-SGDA steps (θ and W players, one Poisson batch each step)"
    if q >= 1.0:     # every row in every batch: a Gaussian, sensitivity 2 under substitution
        return gaussian_event(2.0, z, count=T, idealized=True, label=label,
                              sensitivity_source=source + "; q = 1: both ends of the "
                                                          "substituted row, ‖Δ‖ ≤ 2")
    return subsampled_gaussian_event(z, 1.0, q, count=T, neighbouring="replace", label=label,
                                     sensitivity_source=source)


def select_event(epsilon_select, rule, n_path, penalty):
    from privfair.privacy import pure_event

    unit = f"scale = {SELECT_UNIT:g}/ε: the noise temperature per unit of Δu"
    if rule in ("penalized", "mixture"):
        among = (f"{n_path} checkpoints and their mixtures" if rule == "mixture"
                 else f"{n_path} checkpoints")
        return pure_event(
            epsilon_select, theorem="permute-and-flip (McKenna & Sheldon 2020, Thm 1)",
            scale=SELECT_UNIT / epsilon_select,
            label=f"choice of λ among {among} (score −(err + {penalty:g}·max(0, g)))",
            sensitivity_source="Δu = P·Δg: err reads x, y only (public under "
                               f"protect='sensitive'); Δg = L_g·Δℓ (clamped rates); {unit}")
    return pure_event(
        epsilon_select, theorem="AboveThreshold (Dwork & Roth 2014, Thm 3.23)",
        scale=SELECT_UNIT / epsilon_select, label=f"choice of λ among {n_path} checkpoints",
        sensitivity_source="Δg = L_g·Δℓ (compiler constants, clamped rates); threshold noise "
                           f"Lap(Δg·scale), query noise Lap(2Δg·scale); {unit}")


def schedule(privacy, *, G, L, T, q, epsilon_count, epsilon_select, rule, n_path, penalty,
             theta_share):
    """(Schedule, z): the plan's releases (module docstring) and the fitted noise multiplier.

    ``epsilon_count`` / ``epsilon_select`` of 0 mean the release does not happen.  Raises
    InvalidPrivacyError (public, at plan time) when no noise multiplier fits."""
    from privfair.privacy import Schedule, Scheduled, calibrate

    before = [count_event(G, L, epsilon_count)] if epsilon_count > 0 else []
    after = ([select_event(epsilon_select, rule, n_path, penalty)]
             if epsilon_select > 0 else [])

    def events_at(inv_z):        # larger 1/z: less noise, more loss (monotone)
        return before + [steps_event(1.0 / inv_z, T, q)] + after

    # the draw order is the record order (counts, steps, select): the accountant checks each
    # prefix, and every rule it uses is monotone in the events, so the whole fitting is enough
    # hi: z ≥ 1/(16·max(1, ε)) — a row moving the output by 32·max(1, ε) noise scales is never
    # needed; returning hi would only add noise (the fit is checked whatever it returns)
    inv_z = calibrate(events_at, privacy.epsilon, privacy.delta,
                      hi=16.0 * max(1.0, privacy.epsilon),
                      key=("sgda", tuple(before), tuple(after), T, q))
    z = 1.0 / inv_z
    zt, zw = z / math.sqrt(theta_share), z / math.sqrt(1.0 - theta_share)
    releases = []
    if before:
        releases.append(Scheduled("counts", before[0], exact=True))
    releases.append(Scheduled("steps", steps_event(
        z, T, q, STEPS_SOURCE + f" (z_θ = {zt:.4g}, z_W = {zw:.4g})")))
    if after:
        releases.append(Scheduled("select", after[0]))
    return Schedule(releases, privacy.epsilon, privacy.delta), z
