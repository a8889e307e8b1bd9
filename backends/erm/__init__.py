"""The row-private ERM family: output perturbation, objective perturbation and dual Frank–Wolfe
on a weighted GLM ERM over a :class:`privfair.SparseLinear` set ([K] = Kumar & Deisenroth;
docs/sparsity.md), and the machinery they share.

Read it in this order (each module's docstring states its part of the proof):

* ``reduction`` — fairness problem → weighted GLM ERM (cell coefficients, public denominators);
* ``preconditions`` — why a problem is refused (decided from public quantities);
* ``solver`` — the certified solver: within a public τ of the exact minimizer on every dataset;
* ``sensitivity`` — the gradient's and the certified minimizer's sensitivities, with their sources;
* ``widths``, ``noise`` — Gaussian widths of C and of its dual ball; the ε-DP ℓ2 noise under pure ε;
* ``releases`` — typed budgets and the plan's release schedule (fitted once, at plan time);
* ``constraint`` — the constraint form: a private Lagrangian search for one fairness constraint;
* ``repair`` — the constraint form's repair mixture (post-processing of released values);
* ``options`` — the declared options the ERM backends share;
* ``backend`` — :class:`ERMBackend`, the base class: accepts / plan / run;
* ``direct`` — one private ERM without a Problem (the LOPT oracle, ``pf.sparse.fit``);
* ``output_perturbation`` — [K] Thm 1 / Chaudhuri et al. 2011: θ̂ + noise;
* ``objective_perturbation`` — Chaudhuri et al. 2011; Kifer, Smith & Thakurta 2012;
* ``dual_frank_wolfe`` — [K] Algorithm 2: private Frank–Wolfe on the dual, then recovery.

The three backend modules register their instance when imported (``backends/__init__.py``
imports them); the ERM object and the GLM losses live below the backends, in
:mod:`privfair.models.erm`.
"""
