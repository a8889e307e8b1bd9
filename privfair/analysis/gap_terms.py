"""Reading constraints as gap terms: every constraint g_j ≤ 0 of a problem as linear terms
a·ℓ ≤ c over ℓ, and an affine objective as its weights — the constraint → gap-terms recogniser.

Part of the compiling layer (it reads the expression tree of a :class:`~privfair.Problem`, never
data or a backend).  Backends built on [J] (Jagielski et al. 2019: ``postprocessing``,
``oracle_learner``) and ``sgda``'s problem check map these terms to their algorithms' knobs.

Accepted shapes are listed in :func:`extract_terms`; any other raises :class:`Unsupported`
with the reason, which the backends turn into their refusal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Unsupported", "Term", "Knob", "extract_terms", "objective_weights"]


class Unsupported(Exception):
    """The problem is not of the shape a [J] backend handles (the message says why)."""


@dataclass(frozen=True)
class Term:
    """One linear constraint a·ℓ ≤ c of the algorithms (a row of [J]'s violation vector)."""

    a: np.ndarray          # (K,)
    c: float
    constraint: int        # index j of the user's constraint g_j it comes from
    text: str


@dataclass(frozen=True)
class Knob:
    """How constraint g_j ≤ 0 maps to the level γ_j the algorithms enforce on its terms."""

    form: str              # "abs", "maximum", "norm_inf", "lse", "affine"
    level: float           # c_j: the user's g_j is (gap expression) − c_j
    shift: float           # log(m)/η for lse (0 otherwise)
    gamma: float           # γ_j = c_j − shift
    n_terms: int


def _const_value(e):
    return float(np.asarray(e.value(np.zeros(max(e.K, 1))), dtype=float))


def _affine_rows(e):
    """(A (m, K), b (m,)) when e is affine, else None."""
    aff = e.affine_form()
    if aff is None:
        return None
    A, b = aff
    return np.atleast_2d(np.asarray(A, dtype=float)), np.atleast_1d(np.asarray(b, dtype=float))


def _signed_rows(arg, K):
    """Rows (a, b, text) of the affine pieces of one argument of max/lse: |u| gives ±u."""
    from privfair.expr.elementwise import Abs

    if isinstance(arg, Abs):
        rows = _affine_rows(arg.args[0])
        if rows is None:
            raise Unsupported(f"|{arg.args[0]}| is not |affine|")
        A, b = rows
        out = []
        for i in range(A.shape[0]):
            a = np.zeros(K)
            a[: A.shape[1]] = A[i]
            out += [(a, b[i], f"+({arg.args[0]})"), (-a, -b[i], f"-({arg.args[0]})")]
        return out, A.shape[0]
    rows = _affine_rows(arg)
    if rows is None:
        raise Unsupported(f"{arg} is neither affine nor |affine|")
    A, b = rows
    out = []
    for i in range(A.shape[0]):
        a = np.zeros(K)
        a[: A.shape[1]] = A[i]
        out.append((a, b[i], str(arg)))
    return out, A.shape[0]


def extract_terms(problem):
    """Read every constraint g_j ≤ 0 as linear terms a·ℓ ≤ c (the knob-mapping rule).

    Accepted shapes (u affine in ℓ, c_j a constant):

    * ``|u| ≤ c_j``, ``maximum(±u_1, |u_2|, …) ≤ c_j``, ``norm_inf(u) ≤ c_j``: every piece ≤ γ_j
      with γ_j = c_j — *equivalent* to the user's constraint;
    * ``lse(…; η) ≤ c_j`` over m entries: every piece ≤ γ_j = c_j − log(m)/η, which *implies* the
      user's constraint (max ≤ lse ≤ max + log(m)/η);
    * an affine ``u ≤ c_j``: one term.

    Returns (terms, knobs).  Raises :class:`Unsupported` for any other shape.
    """
    from privfair.expr.affine import Add
    from privfair.expr.elementwise import Abs
    from privfair.expr.maximum import Maximum
    from privfair.expr.norms import NormInf
    from privfair.expr.smooth_max import Lse

    K = problem.variable.size
    terms, knobs = [], []
    for j, g in enumerate(problem.g):
        if g.is_constant():
            raise Unsupported(f"constraint {j} does not depend on ℓ")
        rows = _affine_rows(g)
        if rows is not None:             # one-sided linear constraint a·ℓ + b ≤ 0
            a = np.zeros(K)
            a[: rows[0].shape[1]] = rows[0][0]
            terms.append(Term(a, -float(rows[1][0]), j, str(g)))
            knobs.append(Knob("affine", -float(rows[1][0]), 0.0, -float(rows[1][0]), 1))
            continue
        core, const = g, 0.0
        while isinstance(core, Add):
            rest = [a for a in core.args if not a.is_constant()]
            if len(rest) != 1:
                raise Unsupported(f"constraint {j} ({g}) is not (gap expression) − constant")
            const += sum(_const_value(a) for a in core.args if a.is_constant())
            core = rest[0]
        level = -const
        if isinstance(core, Abs):
            pieces, m = _signed_rows(core, K)
            form, shift = "abs", 0.0
        elif isinstance(core, (Maximum, Lse)):
            pieces, m = [], 0
            for arg in core.args:
                p, k = _signed_rows(arg, K)
                pieces += p
                m += k
            form = "lse" if isinstance(core, Lse) else "maximum"
            shift = math.log(m) / core.eta if isinstance(core, Lse) else 0.0
        elif isinstance(core, NormInf):
            pieces, m = _signed_rows(Abs(core.args[0]), K)
            form, shift = "norm_inf", 0.0
        else:
            raise Unsupported(f"constraint {j} ({g}) is not built from |·|, maximum, norm_inf or "
                              f"lse of affine gaps (found {type(core).__name__})")
        gamma = level - shift
        for a, b, text in pieces:
            terms.append(Term(a, gamma - b, j, text))
        knobs.append(Knob(form, level, shift, gamma, len(pieces)))
    return terms, knobs


def objective_weights(problem):
    """f = w·ℓ + const for an affine objective; Unsupported otherwise."""
    rows = _affine_rows(problem.f)
    if rows is None:
        raise Unsupported(f"the objective {problem.f} is not affine in ℓ (e.g. r.error())")
    K = problem.variable.size
    w = np.zeros(K)
    w[: rows[0].shape[1]] = rows[0][0]
    return w, float(rows[1][0])
