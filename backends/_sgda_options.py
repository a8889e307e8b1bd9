"""The options of ``sgda``: defaults, the equalized-odds defaults keyed on the public ε, their
validation (typed errors naming the field), and the problem shapes the backend accepts."""

from __future__ import annotations

import math

import numpy as np

from . import _ermi as E
from . import _jagielski as J
from . import _sgda_select as SEL

DEFAULTS = {"epochs": 40, "batch_size": 2048, "lr": 1.0, "lr_w": 1.0, "clip": 1.0,
            "lambdas": (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0),
            "count_share": 0.05, "select_share": 0.25, "theta_share": 0.5, "margin": "auto",
            "average": True, "slice_weights": "balanced", "w_step": "plain",
            "w_noise": "per_slot", "temperature": 1.0, "select": "first",
            "select_penalty": 1.0}
_OPTIONS = tuple(DEFAULTS) + ("lam", "fairness", "group_probabilities", "w_radius",
                              "_noise_multiplier")
_EO_KINDS = ("fpr", "tpr", "tnr", "fnr", "rate")


def _bad(field, value, fix):
    from privfair.errors import InvalidInputError

    raise InvalidInputError(field, value, fix)


def _num(o, key, lo, hi, lo_open=True):
    v = o[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or (v <= lo if lo_open else v < lo) or v > hi:
        _bad(key, v, f"pass a number in {'(' if lo_open else '['}{lo}, {hi}]")
    o[key] = float(v)


#: equalized-odds defaults that differ (chosen on a validation split of adult.data; docs/sgda.md):
#: a large θ step (the conditional ERMI converges slowly at lr 1, and the thresholded
#: classifier's gaps follow the soft ones only once they are small), W averaged over ~1/lr_w
#: steps.  Below EO_LOW_EPSILON the noise needs fewer steps (smaller z), slower W averaging
#: and the penalized selection (AboveThreshold's first noisy pass ends on unfair early stages).
#: From EO_LOW_EPSILON up, the mixture rule with a generalization margin of 0.015 ≈ ½/√n(F, y=1)
#: on Adult: the checkpoint is judged on training rates, and a conditional rate over ~10³ rows
#: moves by about that much on held-out data (third round, docs/sgda.md).
#: ε is public, so keying the defaults on it spends nothing.
EO_DEFAULTS = {"epochs": 20, "w_step": "newton", "lr": 10.0, "lr_w": 0.2, "select": "mixture",
               "select_penalty": 3.0, "margin": 0.015}
EO_LOW_EPSILON = 2.0
EO_DEFAULTS_LOW = {"epochs": 10, "w_step": "newton", "lr": 10.0, "lr_w": 0.05,
                   "select": "penalized", "select_penalty": 3.0}


def eo_defaults(epsilon):
    """The equalized-odds defaults at privacy budget ``epsilon`` (public)."""
    return EO_DEFAULTS_LOW if epsilon < EO_LOW_EPSILON else EO_DEFAULTS


def _options(options, notion=None, epsilon=math.inf):
    o = dict(DEFAULTS)
    if (options.get("fairness") or notion) == "equalized_odds":
        o.update(eo_defaults(epsilon))
    o.update({k: options[k] for k in _OPTIONS if k in options})
    for key in ("epochs", "batch_size"):
        if isinstance(o[key], bool) or not isinstance(o[key], (int, float)) or o[key] <= 0:
            _bad(key, o[key], "pass a positive number")
    for key, lo, hi, lo_open in (("lr", 0, 1e6, True), ("lr_w", 0, 1e6, True),
                                 ("clip", 0, 1e6, True), ("count_share", 0, 0.5, True),
                                 ("select_share", 0, 0.5, True), ("theta_share", 0, 1, True),
                                 ("temperature", 0, 1e6, True),
                                 ("select_penalty", 0, 1e6, True)):
        _num(o, key, lo, hi, lo_open)
    if o["margin"] != "auto":
        _num(o, "margin", 0, 1e6, False)
    if o["theta_share"] >= 1:
        _bad("theta_share", o["theta_share"], "pass a share in (0, 1)")
    lams = o["lam"] if o.get("lam") is not None else o["lambdas"]
    lams = np.atleast_1d(np.asarray(lams, dtype=float))
    if o.get("lam") is not None and lams.size != 1:
        _bad("lam", o["lam"], "pass one ERMI weight (a path goes in lambdas=)")
    if lams.size == 0 or not np.isfinite(lams).all() or (lams < 0).any():
        _bad("lambdas" if o.get("lam") is None else "lam", o.get("lam", o["lambdas"]),
             "pass non-negative finite ERMI weights")
    o["path"] = tuple(float(v) for v in lams)
    if o.get("fairness") is not None and o["fairness"] not in E.NOTIONS:
        _bad("fairness", o["fairness"], f"choose one of {E.NOTIONS}")
    m = o.get("_noise_multiplier", 1.0)
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 < m <= 1:
        _bad("_noise_multiplier", m, "test-only knob in (0, 1]")
    o["_noise_multiplier"] = float(m)
    if o["w_noise"] not in ("per_slot", "uniform"):
        _bad("w_noise", o["w_noise"], "choose 'per_slot' or 'uniform'")
    if o["w_step"] not in ("plain", "newton"):
        _bad("w_step", o["w_step"], "choose 'plain' or 'newton'")
    if o["w_step"] == "newton" and o["lr_w"] > 1:
        _bad("lr_w", o["lr_w"], "with w_step='newton' lr_w is an averaging weight in (0, 1]")
    if o["select"] not in SEL.RULES:
        _bad("select", o["select"], f"choose one of {SEL.RULES}")
    if o["slice_weights"] not in ("balanced", "proportional"):
        _bad("slice_weights", o["slice_weights"], "choose 'balanced' or 'proportional'")
    if o.get("w_radius") is not None:
        _num(o, "w_radius", 0, 1e9)
    return o


def _shape(problem):
    """(notion or None, number of constraints); J.Unsupported when the problem is not of the
    shape sgda handles."""
    r = problem.rates
    w, _ = J.objective_weights(problem)
    err = np.zeros(r.K)
    for g in range(r.G):
        for y in range(r.L):
            for j in range(r.L):
                if y != j:
                    err[r._joint[g, y, j]] = 1.0
    scale = float(w @ err) / float(err @ err)
    if scale <= 0 or not np.allclose(w, scale * err, atol=1e-12):
        raise J.Unsupported("the objective must be the error (r.error(), or a positive multiple): "
                            "sgda trains the cross-entropy surrogate of the error")
    if not problem.g:
        return None, 0
    terms, _ = J.extract_terms(problem)
    kinds = set()
    for t in terms:
        for k in np.flatnonzero(np.abs(t.a) > 1e-15):
            kinds.add(r.names[int(k)].split("[")[0])
    if not kinds:
        raise J.Unsupported("the constraints read no coordinate of ℓ")
    if kinds == {"selection"}:
        return "demographic_parity", len(problem.g)
    if kinds <= set(_EO_KINDS):
        return "equalized_odds", len(problem.g)
    raise J.Unsupported(f"the constraints read {sorted(kinds)}: sgda maps gaps of selection rates "
                        "(demographic parity) or of fpr/tpr/tnr/fnr/rate coordinates (equalized odds) "
                        "to the ERMI weight, not joint cells or a mix of both")


def _public_p(given, r, notion, counts):
    """p̃ from a public declaration: {group: P(group)} (demographic parity) or
    {(group, label): P(group | label)} (equalized odds)."""
    G, L = r.G, r.L
    if notion == "demographic_parity":
        vals = np.array([given.get(g, np.nan) if isinstance(given, dict) else np.nan
                         for g in r.groups], dtype=float)[None, :]
    else:
        vals = np.array([[given.get((g, lab), np.nan) if isinstance(given, dict) else np.nan
                          for g in r.groups] for lab in r.label_values], dtype=float)
    if not np.isfinite(vals).all() or (vals <= 0).any():
        _bad("group_probabilities", given,
             "pass public probabilities > 0: {group: p} for demographic parity, "
             "{(group, label): P(group | label)} for equalized odds, covering every group")
    return vals / vals.sum(axis=1, keepdims=True)
