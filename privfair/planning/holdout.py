# Over 500 lines: the held-out check's partition, statistic and proof (docs/trust.md) are one
#   procedure.
"""The held-out check: does the released rule keep its constraints on new data, and does it beat
the best constant rule?  (Issue #18, item 3; the design and the proof are in docs/trust.md.)

Every solve (all backends, private or not) whose data has enough rows draws a **public random
partition** of the row indices — from the run's own randomness, independently of the data —
into a training part (the backend sees only it, with the whole budget) and a held-out part
(:data:`HOLDOUT` of the rows by default).  On the held-out part, one release estimates what
the released randomized rule does: the soft confusion counts

    C[g, y, ŷ] = Σ_{held-out rows i with group g and label y} P(rule predicts ŷ | x_i)

plus Laplace noise of scale 2/ε_c (one row puts a probability vector of mass 1 in one
(group, label) block, so replacing it — or changing its group — moves ≤ 2 in ℓ1).  Everything
below is post-processing of that release: each coordinate of ℓ with a confidence interval,
each constraint's value with an upper confidence bound, the rule's error and the best constant
rule's error (from the noisy label counts Σ_{g,ŷ} C̃[g, y, ŷ]).

Privacy (parallel composition).  For a fixed partition the output is
(θ = A(D_train), check(D_held; θ)).  Neighbours differ in one row, which is in exactly one
part: in the training part the check's input is unchanged, so the output is post-processing
of A's (ε_A, δ_A) release; in the held-out part θ's distribution is unchanged and the check is
ε_c-DP for every fixed θ.  So the pair is (max(ε_A, ε_c), δ_A)-DP for every partition, and a
mixture over partitions drawn independently of the data is too.  The check runs at
ε_c = the training certificate's ε, so the certificate's (ε, δ) is the training accountant's
own composition (its ``releases``) and a note states the parallel step; the check's own
certificate is ``Result.holdout.certificate``.

Statistics.  Noise: every sum of noisy counts a bound reads is within its Chernoff bound for
sums of Laplace variables (:func:`laplace_sum_bound`; exact tail for one count), all of them
together by a union bound.  Sampling: a
normal (CLT) interval for each coordinate of ℓ, Bonferroni over the coordinates the
constraints read, with the variance bounded by p(1 − p) at the worst p the noise allows.  A
constraint's upper bound is the smaller of two sound ones: its maximum over the box of
intervals (exact at the box's vertices for a convex g with a small support) and, through its
expression's certified coordinate-wise Lipschitz matrix (``Expression.coordinate_lipschitz``),
g(ℓ*) ≤ g(ℓ̂) + Σ_k U_k |ℓ*_k − ℓ̂_k|.  The rates checked are those of
the randomized rule's predictions (0-1, not a training surrogate), with exact denominators (no
group-mass clamp): what a user of the rule will see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..models.decisions import DecisionSet
from ..errors import InvalidInputError

#: default fraction of the rows held out
HOLDOUT = 0.2
#: fewest held-out rows for which a check is made (fewer: no split, status "not checked")
MIN_HELD_OUT_ROWS = 200
#: default slack of the certificate: certified when every constraint's upper bound ≤ level + it
TOLERANCE = 0.01
#: default confidence of the bounds (jointly, over every constraint)
CONFIDENCE = 0.95
#: a constraint's check is *uninformative* when its confidence interval is at least this wide
#: (in the constraint's units; rate gaps live in [0, 1]): the held-out rows cannot tell a rule
#: that meets the level from one that misses it by ½ — a group with a handful of held-out rows
#: (COMPAS's smallest races: ~1–4 rows; a 1% group: ~30).  Chosen on validation splits only
#: (docs/trust.md, "Uninformative checks"): Adult's DP and EO intervals are 0.06–0.35 wide,
#: the 50-feature synthetic's 0.11–0.14, COMPAS's 1.0 and the 1% group's 0.77–1.0.
UNINFORMATIVE_WIDTH = 0.5

CERTIFIED = "certified"
FALLBACK = "fallback: constant rule"
MIXED = "fallback: mixed with a constant rule"
CERTIFIED_MIXED = "certified (mixed with a constant rule)"
#: what a confidently violated constraint does (HoldoutOptions.on_violation)
ON_VIOLATION_CHOICES = ("mix", "fallback", "warn")
ON_VIOLATION = "mix"
#: the smallest weight of the trained rule worth a mixture (below it the constant is returned)
MIN_MIX_WEIGHT = 0.01


@dataclass(frozen=True)
class HoldoutOptions:
    """The solve options of the check (``fraction`` 0 turns it off)."""

    fraction: float = HOLDOUT
    tolerance: float = TOLERANCE
    confidence: float = CONFIDENCE
    min_rows: int = MIN_HELD_OUT_ROWS
    #: "fallback": a rule whose constraint is violated on the held-out rows at the check's
    #: confidence is replaced by the best constant rule that keeps the constraints; "mix": by
    #: its mixture with that constant (:mod:`privfair.planning.mixing`) where the constant's
    #: constraint values are data-free, else by the constant; "warn": it is returned, status
    #: "constraint not certified" (the warning says it is violated)
    on_violation: str = ON_VIOLATION
    #: return a certified rule: where the released rule is not certified and the best
    #: constant's constraint values are exact, mix it with that constant at the largest weight
    #: whose held-out upper bounds are within level + tolerance (status
    #: "certified (mixed with a constant rule)"; docs/trust.md, *Certified on request*)
    certify: bool = False

    @classmethod
    def from_options(cls, options: dict) -> "HoldoutOptions":
        """Pop ``holdout``, ``holdout_tolerance``, ``holdout_confidence`` and
        ``holdout_min_rows`` from ``options`` and check them (typed, before anything is
        drawn)."""
        frac = options.pop("holdout", HOLDOUT)
        if frac is None or frac is False:
            frac = 0.0
        if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 <= frac < 1:
            raise InvalidInputError("holdout", frac, "pass the fraction of rows to hold out for "
                                    "the out-of-sample check, in [0, 1) (0 or None: no check), "
                                    f"e.g. holdout={HOLDOUT}")
        tol = options.pop("holdout_tolerance", TOLERANCE)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf:
            raise InvalidInputError("holdout_tolerance", tol, "pass a slack ≥ 0 in the "
                                    f"constraints' units, e.g. {TOLERANCE}")
        conf = options.pop("holdout_confidence", CONFIDENCE)
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 < conf < 1:
            raise InvalidInputError("holdout_confidence", conf, "pass a confidence in (0, 1), "
                                    f"e.g. {CONFIDENCE}")
        m = options.pop("holdout_min_rows", MIN_HELD_OUT_ROWS)
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidInputError("holdout_min_rows", m, "pass a positive number of rows, "
                                    f"e.g. {MIN_HELD_OUT_ROWS}")
        viol = options.pop("holdout_on_violation", ON_VIOLATION)
        if viol not in ON_VIOLATION_CHOICES:
            raise InvalidInputError("holdout_on_violation", viol, "pass 'mix' (when the trained "
                                    "rule confidently violates a constraint on held-out rows, "
                                    "return it mixed with the best constant rule at the largest "
                                    "weight that meets the levels), 'fallback' (return the "
                                    "constant rule) or 'warn' (return the trained rule with a "
                                    "warning)")
        cert = options.pop("holdout_certify", False)
        if not isinstance(cert, bool):
            raise InvalidInputError("holdout_certify", cert, "pass True (mix the rule with the "
                                    "best constant rule until the held-out check certifies "
                                    "every constraint) or False (the default)")
        return cls(float(frac), float(tol), float(conf), int(m), viol, cert)

    def held_out_rows(self, n: int) -> tuple:
        """(rows to hold out, why none) — from n and the options only (public)."""
        if self.fraction == 0:
            return 0, "holdout=0: no held-out check was asked for"
        m = int(round(self.fraction * n))
        if m < self.min_rows or n - m < 1:
            return 0, (f"{self.fraction:g} of n={n} rows is {m} < {self.min_rows} held-out rows, "
                       "too few for a useful check; every row was used for training")
        return m, ""


def split(n: int, m: int, source):
    """(training rows, held-out rows), sorted: ``m`` of ``range(n)`` drawn uniformly from the
    run's randomness ``source`` — a public coin, independent of the data."""
    gen = np.random.default_rng(source.words(4))
    perm = gen.permutation(n)
    return np.sort(perm[m:]), np.sort(perm[:m])


class HeldOutRows:
    """The held-out rows of a dataset as **indices into it** (#19): no copy of X.

    :func:`check` reads them a chunk at a time (:meth:`chunks` gathers about
    :data:`privfair.data.passes.CHUNK_BYTES` of X per chunk), so holding out rows costs one index
    array instead of a copy of their features.  ``n``, ``n_groups``, ``n_labels``, ``groups``,
    ``label_values``, ``y`` and ``group`` are as on the held-out :class:`privfair.Dataset`
    (``data.take(rows)``), which :meth:`to_dataset` builds when a copy is wanted.
    """

    def __init__(self, data, rows):
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        self.data, self.rows = data, rows.astype(np.int64)

    @property
    def n(self) -> int:
        return int(self.rows.size)

    def __len__(self) -> int:
        return self.n

    n_groups = property(lambda self: self.data.n_groups)
    n_labels = property(lambda self: self.data.n_labels)
    groups = property(lambda self: self.data.groups)
    label_values = property(lambda self: self.data.label_values)
    y = property(lambda self: self.data.y[self.rows])
    group = property(lambda self: self.data.group[self.rows])

    def chunks(self, chunk_rows=None):
        """Yield (X, sensitive, group, y) of consecutive blocks of the held-out rows (gathered:
        one chunk-sized copy at a time)."""
        from ..data.passes import chunk_rows_for

        k = int(chunk_rows or chunk_rows_for(self.data.n_features))
        sens = getattr(self.data, "sensitive", None)
        for s in range(0, self.n, k):
            i = self.rows[s:s + k]
            X = self.data.rows().gather(i) if hasattr(self.data, "rows") else self.data.X[i]
            yield (X, None if sens is None else sens[i], self.data.group[i], self.data.y[i])

    def to_dataset(self):
        """The held-out rows as their own :class:`privfair.Dataset` (a copy)."""
        return self.data.take(self.rows)

    def __repr__(self):
        return f"HeldOutRows(n={self.n} of {self.data.n})"


def partition(data, m: int, source):
    """(training :class:`privfair.Dataset`, :class:`HeldOutRows`): :func:`split` of
    ``data``'s rows (the same draw from ``source``), the held-out part as indices into
    ``data`` — its features are never copied; the training part is ``data.take(rows,
    copy=False)``, an index view too: a backend that reads the rows through passes
    (``data.rows()``, as ``cells`` does) never copies them, one that reads ``.X`` gathers them
    then (the same array ``take`` would have made).

    A Dask dataset (``data.rows_on_workers``, :mod:`privfair.data.dask_data`) is split where its
    rows are: :meth:`~privfair.data.dask_data.DaskDataset.split_holdout` draws, from the same
    4 words of ``source``, how many held-out rows each partition gives and a seed per
    partition (a public coin; the workers pick the rows), and returns two views of it — the
    training part and the held-out part, read by passes; no row comes to the client."""
    if getattr(data, "rows_on_workers", False):
        return data.split_holdout(m, source)
    train_rows, held_rows = split(data.n, m, source)
    return data.take(train_rows, copy=False), HeldOutRows(data, held_rows)


@dataclass
class ConstraintCheck:
    """One constraint on the held-out rows: ``estimate`` (noisy point value of its left side)
    and ``upper`` (upper confidence bound), against ``level`` (+ the tolerance)."""

    constraint: str
    level: float
    estimate: float
    upper: float
    certified: bool
    #: lower confidence bound, on the box (the same confidence as ``upper``, from the box's
    #: event; ``upper`` is the linear bound's where ``HoldoutCheck.bound`` is "linear");
    #: ``violated`` when it is above level + tolerance: the rule breaks the constraint on new
    #: data, confidently
    lower: float = -math.inf
    violated: bool = False
    #: the interval is at least :data:`UNINFORMATIVE_WIDTH` wide and the estimate is above
    #: level + tolerance: the held-out rows say it misses the level but cannot be confident
    uninformative: bool = False
    #: a one-sided lower confidence bound of the constraint's value from the delta method,
    #: piece by piece (:func:`violation_bounds`): far tighter than ``lower``, which bounds every
    #: coordinate at once; ``violated`` is also set when it is above level + tolerance
    test_lower: float = -math.inf
    #: what the upper bound adds to the estimate (``upper − estimate``): the bound's width at
    #: this rule's held-out rates and group sizes; nan where the bound is unknown
    margin: float = math.nan
    #: the smallest value the constraint's left side can take (its interval lower bound over
    #: ℓ ∈ [0, 1]^K, e.g. 0 for a gap), in the level's units
    lowest: float = -math.inf
    #: the check's tolerance (certified when ``upper`` ≤ level + it)
    tolerance: float = math.inf
    #: the box's upper bound (the coordinates' box, :func:`_intervals`): with ``lower`` the
    #: interval whose width :attr:`uninformative` reads; ``upper`` where the bound is "box"
    box_upper: float = math.inf
    #: whether the constraint reads a rate conditional on the label (fpr, tpr, …): its rates'
    #: denominators are (group, label) cells, not groups (:meth:`HoldoutCheck.sparse_groups`)
    per_label: bool = False

    @property
    def resolvable(self) -> bool:
        """False when the bound's width alone puts the level out of reach: :attr:`lowest` (a
        zero gap) plus :attr:`margin` is above level + tolerance, so at this rule's held-out
        rates and group sizes no estimate could have been certified — the held-out rows are
        too few to resolve the level, and "not certified" says the check cannot tell, not that
        the rule misses the level.  (The width is this rule's; another rule's rates give a
        somewhat different one.)  True where unknown."""
        return not (self.lowest + self.margin > self.level + self.tolerance)


@dataclass
class HoldoutCheck:
    """What the held-out check released (every number is post-processing of one noisy release,
    or exact at ε = ∞).  See :mod:`privfair.planning.holdout`."""

    n_train: int
    n_held_out: int
    epsilon: float
    tolerance: float
    confidence: float
    error: float                  # the released rule's error, estimated
    error_interval: tuple
    constant_error: float          # the best constant rule's error, estimated
    constant_label: object         # that constant's label
    constraints: list = field(default_factory=list)
    fallback: bool = False
    #: why the constant replaced the trained rule: "error" (worse than the constant),
    #: "violation" (a constraint confidently violated; ``HoldoutOptions.on_violation``),
    #: "unverifiable" (an uninformative check) or "certify" (``holdout_certify=True``: mixed
    #: with the constant until certified)
    fallback_reason: str = ""
    certificate: object = None     # the check's own Certificate (None at ε = ∞)
    counts: object = None          # the released (noisy) soft confusion counts C̃[g, y, ŷ]
    trained: object = None         # the trained rule, when a constant replaced it
    #: whether every constraint of the best constant rule was evaluated exactly (it reads only
    #: rates a constant has whatever the data: conditional and selection rates, and the zero
    #: joint masses of the labels it never predicts) — then the constant keeps the constraints
    #: on any data, not only as estimated (:func:`constant_coordinates`)
    constant_exact: bool = False
    #: the declared group names (the public schema), in the counts' order
    groups: tuple = ()
    #: the declared labels (the public schema), in the counts' order
    labels: tuple = ()
    #: whether the labels were public (``protect="sensitive"``, or ε = ∞): the constant was then
    #: chosen by every row's label and its error, and a group-blind rule's, are exact
    #: (:func:`check`)
    labels_public: bool = False
    #: which upper bounds certify: "linear" (every piece affine or |affine| in well-populated
    #: rates: :func:`linear_upper_bounds`) or "box" (the coordinates' box, :func:`_intervals`)
    bound: str = "box"
    #: ``holdout_on_violation="mix"``: the trained rule's weight p in the returned mixture
    #: "the trained rule w.p. p, else the constant" (None: no mixture was returned)
    mix_weight: object = None
    #: the mixture's constraint checks (same confidence event; ``constraints`` stay the trained
    #: rule's, which is why it was mixed) and its estimated error p·error + (1 − p)·constant's
    mixture: list = field(default_factory=list)
    mixture_error: float = math.nan
    #: what the floor compares: "error" (the objective is the misclassification rate: the
    #: rule's error against each constant's) or "objective" (any other f: f at the rule's
    #: estimated ℓ against f at each constant's ℓ — a floor on what the problem minimizes;
    #: :meth:`privfair.Problem.minimizes_error`)
    floor: str = "error"
    #: f at the rule's estimated ℓ, and at the best constant's ℓ (``floor="objective"``; nan
    #: otherwise) — post-processing of the one release
    objective: float = math.nan
    constant_objective: float = math.nan

    def sparse_groups(self, level: float, per_label: bool = False) -> list:
        """``[(name, rows)]``: the groups whose held-out rows, read off the released counts
        (post-processing: a noisy count, rounded), are too few for a rate gap at ``level`` to
        be checked — a rate over m rows has a standard error up to 1/(2√m), which is above
        the level below m = 1/(4·level²) rows (625 at 0.02).  ``per_label``: the (group,
        label) cells instead, named "group (y = label)" — the denominators of rates
        conditional on the label (equalized odds' fpr and tpr).  Empty without counts or
        groups, or at a level ≤ 0.

        Examples
        --------
        >>> res.holdout.sparse_groups(0.02)        # doctest: +SKIP
        [('Asian', 4), ('Native American', 2)]
        >>> res.holdout.sparse_groups(0.03, per_label=True)        # doctest: +SKIP
        [('Female (y = 1)', 215)]
        """
        if self.counts is None or not self.groups or not level > 0:
            return []
        need = 1.0 / (4.0 * level * level)
        C = np.asarray(self.counts, dtype=float)
        G = len(self.groups)
        if not per_label:
            rows = C.reshape(G, -1).sum(axis=1)
            return [(str(g), int(max(round(float(m)), 0))) for g, m in zip(self.groups, rows)
                    if m < need]
        cells = C.reshape(G, C.shape[1], -1).sum(axis=2)          # (G, L)
        labels = self.labels or tuple(range(cells.shape[1]))
        return [(f"{g} (y = {lab})", int(max(round(float(cells[i, j])), 0)))
                for i, g in enumerate(self.groups) for j, lab in enumerate(labels)
                if cells[i, j] < need]

    def plot(self, axes=None):
        """The check at a glance: the rule's held-out error against the best constant's (top),
        and each constraint's estimate, its confidence bounds and the violation test's lower
        bound against its level (bottom).  Everything drawn is a field of the check: released
        (post-processing of its one noisy release) or public.

        Parameters
        ----------
        axes : pair of matplotlib Axes, optional
            Where to draw (top, bottom); a new figure of two panels when None.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> fig = res.holdout.plot()              # doctest: +SKIP
        >>> fig.savefig("held_out_check.png")     # doctest: +SKIP
        """
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        if axes is None:
            rows = max(len(self.constraints), 1)
            fig, axes = plt.subplots(2, 1, figsize=(8, 2.6 + 0.8 * rows),
                                     gridspec_kw={"height_ratios": [1.2, rows]})
        top, bottom = axes
        fig = top.figure
        # top: the error, the floor's comparison (a fallback "error" when the rule is above)
        lo, hi = self.error_interval
        top.errorbar([self.error], [1], xerr=[[self.error - lo], [hi - self.error]], fmt="o",
                     color="C0", capsize=4, label="released rule, with its interval"
                     if not self.fallback else "trained rule (not returned), with its interval")
        if self.constant_label is not None:
            top.scatter([self.constant_error], [0], marker="s", color="0.4", zorder=3,
                        label=f"best constant rule (always {self.constant_label!r})")
        if self.mix_weight is not None:
            top.scatter([self.mixture_error], [0.5], marker="D", color="C4", zorder=3,
                        label=f"returned mixture (rule w.p. {self.mix_weight:.2f})")
        top.set_yticks([0, 0.5, 1] if self.mix_weight is not None else [0, 1],
                       ["constant", "mixture", "rule"] if self.mix_weight is not None
                       else ["constant", "rule"])
        top.set_ylim(-0.8, 1.8)
        top.set_xlabel("held-out error", fontsize=9)
        top.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        # bottom: one row per constraint, in its own units; the level solid, + tolerance dashed
        colour = {"certified": "C2", "violated": "C3", "not certified": "C1"}
        seen = set()
        for i, c in enumerate(self.constraints):
            y = len(self.constraints) - 1 - i            # the first constraint on top
            v = "certified" if c.certified else "violated" if c.violated else "not certified"
            lo_c = c.lower if math.isfinite(c.lower) else c.estimate
            hi_c = c.upper if math.isfinite(c.upper) else c.estimate
            bottom.plot([lo_c, hi_c], [y, y], "-", color=colour[v], lw=4, alpha=0.45)
            bottom.plot([c.estimate], [y], "o", color=colour[v],
                        label=None if v in seen else v)
            seen.add(v)
            if math.isfinite(c.test_lower):
                bottom.plot([c.test_lower], [y], marker="|", ms=14, color="k")
            if i < len(self.mixture):                    # the returned mixture's estimate
                bottom.plot([self.mixture[i].estimate], [y - 0.2], "D", color="C4", ms=5,
                            label=None if "mixture" in seen else "returned mixture")
                seen.add("mixture")
            bottom.plot([c.level] * 2, [y - 0.3, y + 0.3], "k-", lw=1)
            bottom.plot([c.level + self.tolerance] * 2, [y - 0.3, y + 0.3], "k--", lw=1)
            bottom.annotate(short_text(c.constraint), (0.01, y + 0.33), xycoords=("axes fraction",
                            "data"), fontsize=7, va="bottom")
        bottom.set_yticks([])
        bottom.set_ylim(-0.6, len(self.constraints) - 0.2)
        bottom.set_xlabel("constraint value: estimate ●, bounds ▬, violation test's lower "
                          "bound |, level │, level + tolerance ┆", fontsize=8)
        if self.constraints:
            bottom.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.suptitle(f"held-out check on {self.n_held_out:,} rows "
                     f"({self.confidence:.0%} confidence): {status_of(self)}", fontsize=10)
        fig.tight_layout()
        return fig

    def summary(self) -> str:
        lines = [f"held-out check on {self.n_held_out} rows ({self.n_train} trained on), "
                 f"{self.confidence:.0%} confidence, tolerance {self.tolerance:g}, "
                 f"{'piecewise linear' if self.bound == 'linear' else 'box'} upper bounds:",
                 f"  error {self.error:.4f} [{self.error_interval[0]:.4f}, "
                 f"{self.error_interval[1]:.4f}]; best constant rule ({self.constant_label!r}) "
                 f"{self.constant_error:.4f}" + ("" if self.constant_label is None else
                                                 " (its constraint values exact)"
                                                 if self.constant_exact else
                                                 " (its constraint values estimated)")]
        if self.floor == "objective":
            lines.append(f"  objective {self.objective:.4f}; best constant rule's "
                         f"{self.constant_objective:.4f} (the floor compares the objective)")
        for c in self.constraints:
            verdict = ("certified" if c.certified else
                       "VIOLATED: lower bound above it" if c.violated else
                       "NOT certified; the interval is too wide to tell" if c.uninformative
                       else f"NOT certified; {unresolvable_note(c)}" if not c.resolvable
                       else "NOT certified")
            lines.append(f"  {short_text(c.constraint, 120)}: estimate {c.estimate:.4f}, bounds "
                         f"[{c.lower:.4f}, {c.upper:.4f}], test lower bound {c.test_lower:.4f} "
                         f"vs level {c.level:g} ({verdict})")
        if self.mix_weight is not None:
            lines.append(f"  returned: the trained rule with probability {self.mix_weight:.4f}, "
                         f"else always {self.constant_label!r}; estimated error "
                         f"{self.mixture_error:.4f}")
            for c in self.mixture:
                lines.append(f"    {short_text(c.constraint, 120)}: estimate {c.estimate:.4f}, "
                             "bounds "
                             f"[{c.lower:.4f}, {c.upper:.4f}] vs level {c.level:g} ("
                             + ("certified" if c.certified else "NOT certified") + ")")
        return "\n".join(lines)


def short_text(text: str, width: int = 90) -> str:
    """A constraint's text cut to about ``width`` characters, its comparison kept (a plot's
    label, a warning): a gap over many groups and labels prints hundreds of terms.

    >>> short_text("maximum(" + ", ".join(["abs(a - b)"] * 30) + ") <= 0.05", 40)
    'maximum(abs(a - b), abs(a - b) … <= 0.05'
    """
    if len(text) <= width:
        return text
    cut = text.rfind(")")
    tail = text[cut + 1:].strip() if 0 <= cut and len(text) - cut <= 20 else ""
    return text[:max(width - len(tail) - 3, 10)].rstrip() + " … " + tail if tail else \
        text[:width - 1] + "…"


class ConstantRule(DecisionSet):
    """The decision set of constant rules: decision k predicts label code k for every row."""

    size = math.inf

    def __init__(self, n_features, n_classes: int = 2):
        self.n_features = n_features
        self.n_classes = int(n_classes)

    def predict(self, decision, X) -> np.ndarray:
        return np.full(len(X), int(decision), dtype=np.int64)

    def predict_proba(self, decision, X) -> np.ndarray:
        return np.full(len(X), float(int(decision) == 1))

    def __repr__(self):
        return "ConstantRule()"


# --------------------------------------------------------------------------- the statistics
def _blocks(data):
    """(X, sensitive, group, y) of consecutive blocks of ``data``'s rows: gathered chunks of a
    :class:`HeldOutRows`, contiguous views of a Dataset's arrays (chunk-sized temporaries)."""
    if isinstance(data, HeldOutRows):
        yield from data.chunks()
        return
    from ..data.passes import chunk_rows_for

    sens = getattr(data, "sensitive", None)
    k = chunk_rows_for(data.n_features)
    if hasattr(data, "rows"):            # views, or gathered chunks of an index view (#19)
        for c in data.rows(chunk_rows=k).chunks():
            e = c.start + len(c)
            yield c.X, None if sens is None else sens[c.start:e], c.group, c.y
        return
    for s in range(0, data.n, k):
        e = min(data.n, s + k)
        yield data.X[s:e], None if sens is None else sens[s:e], data.group[s:e], data.y[s:e]


def soft_counts(result, data) -> np.ndarray:
    """C[g, y, ŷ]: the expected confusion counts of ``result``'s randomized rule on ``data``
    (a Dataset or :class:`HeldOutRows`; the rule is applied one chunk of rows at a time)."""
    if getattr(data, "rows_on_workers", False):      # a Dask view: one pass on the workers
        from ..results.result import Result

        # the rule only (decision set, decisions, weights): what travels to the workers
        rule = Result(result.backend, result.decisions, result.weights, result.decision_set,
                      labels=result.labels)
        # (a rule that reads the group gets each row's declared group value there, #19)
        return data.soft_counts(rule)
    from ..util.threads import blas_single_thread

    G, L = data.n_groups, data.n_labels
    C = np.zeros((G * L, L))
    for X, sens, group, y in _blocks(data):
        # one product per checkpoint and chunk (400 for a 20-checkpoint rule at 10⁶ rows): on
        # one BLAS thread 0.06 s of CPU, on two spinning threads of a loaded machine 3.2 s (#19)
        with blas_single_thread():
            p = np.asarray(result.predict_proba(X, sens), dtype=float)
        P = p if p.ndim == 2 else np.stack([1.0 - p, p], axis=1)
        # rows are added in order, chunk after chunk: the same sums as one add.at over all
        np.add.at(C, group * L + y, np.clip(P, 0.0, 1.0))
    return C.reshape(G, L, L)


def public_label_counts(data) -> np.ndarray:
    """(L,) rows per label of ``data`` (a Dataset, :class:`HeldOutRows` or a Dask view), exact:
    public under ``protect="sensitive"``, where the labels are not the private column.  In
    memory the label array itself (no pass over X); a Dask view: one pass on the workers."""
    L = data.n_labels
    if not getattr(data, "rows_on_workers", False):
        return np.bincount(np.asarray(data.y), minlength=L).astype(float)
    from ..data import passes

    return np.asarray(passes.rows_of(data).map_sum(passes.label_counts, L), dtype=float)


def coordinate_cells(G: int, L: int):
    """Per coordinate of ℓ (the layout of :class:`privfair.statistics.stats.Rates`): the cells summed in
    its numerator and in its denominator (None: the public n of the held-out rows)."""
    cells = np.arange(G * L * L).reshape(G, L, L)
    num, den = [], []
    for g in range(G):                      # joint block: count / n
        for y in range(L):
            for j in range(L):
                num.append([cells[g, y, j]])
                den.append(None)
    if L == 2:                              # fpr, tnr, tpr, fnr, selection (Rates._from_counts)
        for g in range(G):
            for y, j in ((0, 1), (0, 0), (1, 1), (1, 0)):
                num.append([cells[g, y, j]])
                den.append(list(cells[g, y, :]))
            num.append([cells[g, 0, 1], cells[g, 1, 1]])
            den.append(list(cells[g].ravel()))
    else:
        for g in range(G):
            for y in range(L):
                for j in range(L):
                    num.append([cells[g, y, j]])
                    den.append(list(cells[g, y, :]))
        for g in range(G):                  # selection[g, ŷ]: Σ_y C[g, y, ŷ] / the group's rows
            for j in range(L):
                num.append(list(cells[g, :, j]))
                den.append(list(cells[g].ravel()))
    return num, den


def _point(C, n, num, den) -> np.ndarray:
    flat = np.asarray(C, dtype=float).ravel()
    out = np.empty(len(num))
    for k, (a, b) in enumerate(zip(num, den)):
        d = n if b is None else max(flat[b].sum(), 1.0)
        out[k] = flat[a].sum() / d
    return np.clip(out, 0.0, 1.0)


def constant_coordinates(code: int, n_gy, n, *, cells=None) -> tuple:
    """(ℓ, exact): the coordinates of the constant rule predicting label code ``code``, and which
    of them are **data-free** — the same on every dataset, so known without reading any count.

    The constant puts each (g, y) block's whole mass n_gy on its cell (g, y, ``code``).  A
    coordinate Σ_{cells a} / Σ_{cells b} (its numerator and denominator cells) is then
    Σ_{gy} n_gy α_gy / Σ_{gy} n_gy β_gy with α_gy (β_gy) the cells of a (of b) in block gy that
    predict ``code``; it does not depend on the n_gy exactly when α_gy/β_gy is the same r for
    every block with β_gy > 0 (and α_gy = 0 where β_gy = 0) — its value is r.  In
    ℓ's layout: every conditional rate P(ŷ = j | g, y) is 1[j = code] and
    every selection rate 1[code = 1], whatever the counts (a group with no held-out row, or
    whose noisy count clipped to 0, included: the rate is that of the rule on the group's rows
    wherever they come from).  A joint mass (denominator n) is exactly 0 when its cell predicts
    another label; the mass of a cell (g, y, ``code``) is n_gy/n, which depends on the label
    frequencies — read from ``n_gy`` (the released noisy counts, clipped at 0: an estimate,
    not exact).  So a constant's DP, EO, TPR/FPR gaps are exact; its error, and constraints on
    joint masses such as fp or tp, are estimated.

    Parameters
    ----------
    code : int -- the constant's label code.
    n_gy : array (G, L) -- the (noisy, clipped) label counts of the held-out rows.
    n : int -- the number of held-out rows (public).
    cells : (num, den), optional -- the coordinates' numerator and denominator cells, as the
        check lays them out (computed from n_gy's shape when not given).

    Returns
    -------
    ell : array (K,) -- the constant's coordinates.
    exact : bool array (K,) -- True where the value holds on every dataset.
    """
    n_gy = np.asarray(n_gy, dtype=float)
    G, L = n_gy.shape
    num, den = coordinate_cells(G, L) if cells is None else cells
    w = n_gy.ravel()                                           # one mass per (g, y) block
    B = w.size
    K = len(num)
    ell, exact = np.zeros(K), np.zeros(K, dtype=bool)

    def blocks(cells):
        """How many of ``cells`` predicting ``code`` lie in each (g, y) block."""
        hit = np.asarray([int(c) // L for c in cells if int(c) % L == code], dtype=np.int64)
        return np.bincount(hit, minlength=B).astype(float)

    for k, (a, b) in enumerate(zip(num, den)):
        # cell c = (g·L + y)·L + ŷ: its block is c // L, its prediction c % L
        alpha = blocks(a)
        if b is None:                                          # a joint mass: Σ n_gy α / n
            exact[k] = not alpha.any()
            ell[k] = float(alpha @ w) / n
            continue
        beta = blocks(b)
        on = beta > 0
        r = alpha[on] / beta[on]
        if on.any() and not alpha[~on].any() and np.all(r == r[0]):
            exact[k], ell[k] = True, float(r[0])
        else:                                                  # not a layout of ℓ today
            ell[k] = float(alpha @ w) / max(float(beta @ w), 1.0)
    return np.clip(ell, 0.0, 1.0), exact


def laplace_sum_bound(k: int, scale: float, beta: float) -> float:
    """s with P(|L_1 + … + L_k| ≥ s) ≤ β for k independent Laplace(scale) variables.

    k = 1: the exact tail, s = scale·ln(1/β).  k > 1: Chernoff, with the Laplace moment
    generating function E e^{λL} = 1/(1 − scale²λ²) (|λ| < 1/scale): P(S ≥ s) ≤
    e^{−λs}(1 − scale²λ²)^{−k}, both tails (hence 2/β), minimized over λ = u/scale on a grid
    of u ∈ (0, 1) — every grid point gives a valid bound.  0 when scale is 0 (no noise)."""
    if scale == 0 or k == 0:
        return 0.0
    if k == 1:
        return scale * math.log(1.0 / beta)
    u = np.linspace(1e-3, 1 - 1e-3, 999)
    return float(scale * np.min((math.log(2.0 / beta) - k * np.log1p(-u * u)) / u))


def weighted_laplace_tail(a, scale: float, beta: float) -> float:
    """t with P(Σ_c a_c L_c ≥ t) ≤ β for independent Laplace(``scale``) variables L_c (one
    side).  One nonzero a: the exact tail |a|·scale·ln(1/(2β)).  More: Chernoff with
    E e^{λ a L} = 1/(1 − a²scale²λ²), minimized over λ = u/(scale·max|a|) on a grid of
    u ∈ (0, 1) — every grid point gives a valid bound.  0 when there is no noise.

    Examples
    --------
    >>> round(weighted_laplace_tail([0.5], 2.0, 0.05), 4) == round(math.log(10), 4)
    True
    >>> weighted_laplace_tail([0.5, -0.5], 2.0, 0.05) > weighted_laplace_tail([0.5], 2.0, 0.05)
    True
    """
    a = np.abs(np.asarray(a, dtype=float).reshape(-1))
    a = a[a > 0]
    if scale == 0 or a.size == 0:
        return 0.0
    if a.size == 1:
        return float(a[0] * scale * math.log(1.0 / (2.0 * beta))) if beta < 0.5 else 0.0
    lam = np.linspace(1e-3, 1 - 1e-3, 999) / (a.max() * scale)
    log_mgf = -np.log1p(-(np.outer(lam, a) * scale) ** 2).sum(axis=1)
    return float(np.min((math.log(1.0 / beta) + log_mgf) / lam))


def _linear_sides(h) -> int:
    """1 for an affine piece, 2 for |u| of an affine u (its estimate errs both ways), 0 for
    any other (the linear bound does not apply: a convex h can exceed its tangent)."""
    from ..expr.elementwise import Abs

    if h.is_affine():
        return 1
    if isinstance(h, Abs) and not h.shape and h.args[0].is_affine():
        return 2
    return 0


def linear_applies(gs, ell, C, n, den) -> bool:
    """Whether every piece of every constraint is affine or |affine| in ℓ and reads only rates
    whose normal approximation is trusted (:data:`NORMAL_MIN_COUNT` at the rule's estimate):
    then :func:`linear_upper_bounds` gives the check's upper bounds (one confidence event for
    all the constraints), else the box does."""
    for g in gs:
        for h, _ in _pieces(g):
            sides = _linear_sides(h)
            if not sides:
                return False
            # the rates the piece reads: u's gradient (|u|'s is 0 where u is, and would read none)
            u = h if sides == 1 else h.args[0]
            sgrad = np.asarray(u.grad(ell), dtype=float).reshape(-1)
            if not np.all(np.isfinite(sgrad)) or not _normal_ok(sgrad, ell, C, n, den):
                return False
    return True


def linear_upper_bounds(gs, ell, Jac, C, n, b, beta_sample, beta_noise) -> list:
    """Per constraint g = max_j (h_j + c_j), an upper confidence bound of g(ℓ*) read piece by
    piece, linearly in the released counts (docs/trust.md, *The confidence bounds*): for an
    affine h_j, h_j(ℓ̂) + c_j + z·se_j + t_j; for |u_j|, |u_j(ℓ̂)| + c_j + z·se_j + t_j; where
    a = ∇h_j·∂ℓ/∂C (``Jac``; a mixture passes p·∂ℓ/∂C), se_j = √(n·(Σ_c a_c²π_c − (Σ_c
    a_cπ_c)²)) the violation test's Jensen bound on the sampling standard deviation (π = C/n:
    the normal approximation, as the box's sampling part is), z the normal quantile at
    β_sample/S and t_j the exact Chernoff tail of the Laplace noise Σ_c a_c L_c at β_noise/S
    (:func:`weighted_laplace_tail`), S the number of sides of all the pieces (Bonferroni; |u|
    counts two).  Call it only where :func:`linear_applies`."""
    from scipy.stats import norm

    pieces = [_pieces(g) for g in gs]
    S = max(sum(_linear_sides(h) for ps in pieces for h, _ in ps), 1)
    z = float(norm.ppf(1.0 - beta_sample / S))
    out = []
    for ps in pieces:
        best = -math.inf
        for h, c in ps:
            u = h if _linear_sides(h) == 1 else h.args[0]
            a = np.asarray(u.grad(ell), dtype=float).reshape(-1) @ Jac
            se = math.sqrt(sampling_variance(a, C, n))
            t = weighted_laplace_tail(a, b, beta_noise / S) if b > 0 else 0.0
            best = max(best, float(h.value(ell)) + c + z * se + t)
        out.append(best)
    return out


def unresolvable_note(c) -> str:
    """Why a constraint that is not :attr:`~ConstraintCheck.resolvable` could not have been
    certified: the bound's half-width at these held-out rates against level + tolerance."""
    return (f"at these held-out rates and group sizes the bound adds {c.margin:.3f} to the "
            f"estimate, so even a value of {c.lowest:g} would not be certified within "
            f"{c.level:g} + tolerance {c.tolerance:g}: too few held-out rows to resolve "
            "this level (not evidence that the rule misses it)")


@dataclass(frozen=True)
class Resolution:
    """What the default held-out check can resolve for one constraint, before any row is read
    (:func:`resolution`): ``rows`` is about how many held-out rows each rate the constraint
    reads must rest on (a group's rows for a selection rate, its rows of one label for a TPR or
    FPR) for a rule with no gap to be certified within level + tolerance — the sampling part of
    the bound at p = ½ (rates nearer 0 or 1 need fewer rows; the release's noise needs more)."""

    constraint: str
    level: float
    rows: float          # inf: no number of rows can (level + tolerance ≤ the lowest value)
    held_out: int        # the held-out rows in all (m)

    @property
    def hopeless(self) -> bool:
        """Even two equal halves of the held-out rows are too few (for a gap between two
        groups' rates; a rate over a group's rows of one label is rarer still)."""
        return self.rows > self.held_out / 2

    #: a constraint's text longer than this is shortened in :meth:`line` (one over every pair
    #: of six groups runs to a dozen lines)
    SHOWN_CHARS = 72

    def line(self) -> str:
        name = self.constraint
        if len(name) > self.SHOWN_CHARS:
            head, sep, tail = name.rpartition(" <= ")
            name = (head[:self.SHOWN_CHARS - 24] + " … " + sep.strip() + " " + tail
                    if sep else name[:self.SHOWN_CHARS] + " …")
        if not math.isfinite(self.rows):
            return (f"{name}: its lowest value is at or above level + tolerance; "
                    "the check cannot certify it")
        n = math.ceil(self.rows)
        text = (f"{name}: certified only where each rate it reads rests on "
                f"about {n:,} held-out rows or more")
        return text + (" — more than half of them: expect \"not certified\" whatever the "
                       "rule; that would be the check's resolution, not the rule's fault"
                       if self.hopeless else "")


def resolution(problem, n: int, private: bool, options: "HoldoutOptions | None" = None) -> list:
    """:class:`Resolution` of every constraint of ``problem`` under the held-out check that a
    solve on ``n`` rows makes with ``options`` (default: 20 % held out, 95 %, tolerance 0.01).
    Public: it reads n, the options, the levels and the constraints' Lipschitz constants — the
    check's own sampling width at p = ½ and m rows a rate, set against level + tolerance above
    the piece's lowest value: where every piece is affine or |affine| (the check's linear
    bound, :func:`linear_upper_bounds`) z·½·‖u‖₂/√m, z at β/S over the pieces' S sides; else
    (the box) z·½·Σ_k u_k/√m, z at its Bonferroni level over the coordinates the constraints
    read.  Empty when the check would not run or nothing is constrained.

    Examples
    --------
    >>> import numpy as np, privfair as pf
    >>> rng = np.random.default_rng(0)
    >>> data = pf.Dataset(rng.normal(size=(30000, 2)), rng.integers(0, 2, 30000),
    ...                   rng.choice(["a", "b"], 30000), group_names=["a", "b"])
    >>> r = pf.rates(pf.LinearClassifier(2), data)
    >>> prob = pf.Problem(pf.minimize(r.error()),
    ...                   [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.005])
    >>> (res,) = resolution(prob, data.n, private=True)
    >>> round(res.rows), res.held_out, res.hopeless
    (11164, 6000, True)
    """
    from scipy.stats import norm

    options = HoldoutOptions() if options is None else options
    m, _ = options.held_out_rows(int(n))
    if not m or not problem.g:
        return []
    beta = 1.0 - options.confidence
    if private:
        beta /= 2                   # the other half covers the release's noise
    U = [np.asarray(g.coordinate_lipschitz(), dtype=float).reshape(-1) for g in problem.g]
    sides = [_linear_sides(h) for g in problem.g for h, _ in _pieces(g)]
    linear = all(sides)
    if linear:                       # the check's linear bound (where its rates are populated)
        z = float(norm.ppf(1 - beta / max(sum(sides), 1)))
    else:                            # the box
        k_used = max(1, len({int(k) for u in U for k in np.nonzero(u > 0)[0]}))
        z = float(norm.ppf(1 - beta / (2 * k_used)))
    out = []
    for c, g in zip(problem.constraints, problem.g):
        level = _level(c)
        room = level + options.tolerance - (float(g.range()[0]) + level)
        widths = []
        for h, _ in _pieces(g):
            u = np.asarray(h.coordinate_lipschitz(), dtype=float).reshape(-1)
            if not np.all(np.isfinite(u)):
                widths.append(math.inf)
            else:
                widths.append(float(np.sqrt(np.sum(u * u)) if linear else np.sum(u)))
        s = max(widths) if widths else math.inf
        if not math.isfinite(s):
            continue
        # a zero-gap rule's bound, z·½·s/√m with s = ‖u‖₂ (linear) or Σ_k u_k (box), ≤ room
        rows = (z * 0.5 * s / room) ** 2 if room > 0 else math.inf
        out.append(Resolution(str(c), level, rows, m))
    return out


def _intervals(C, n, num, den, noise, z, which) -> tuple:
    """(lo, hi) for the coordinates in ``which``: noise (``noise(k)`` bounds the noise of a
    sum of k counts) and sampling (z standard errors, variance ≤ p(1 − p) at the worst p the
    noise allows)."""
    flat = np.asarray(C, dtype=float).ravel()
    K = len(num)
    lo, hi = np.zeros(K), np.ones(K)
    for k in which:
        a, b = num[k], den[k]
        N = flat[a].sum()
        if b is None:
            m_lo = m_hi = m_est = float(n)
        else:
            m_est = flat[b].sum()
            m_lo, m_hi = m_est - noise(len(b)), m_est + noise(len(b))
        if m_lo < 2:
            continue                        # too few rows (or too much noise): [0, 1]
        n_lo = max(N - noise(len(a)), 0.0) / max(m_hi, 1.0)
        n_hi = min((N + noise(len(a))) / m_lo, 1.0)
        worst = min(max(0.5, n_lo), n_hi) if n_lo <= n_hi else 0.5
        w = z * math.sqrt(worst * (1 - worst) / m_lo)
        lo[k], hi[k] = max(n_lo - w, 0.0), min(n_hi + w, 1.0)
    return lo, hi


#: largest support for which a convex constraint's maximum over the box is found exactly
MAX_VERTEX_SUPPORT = 14


def support_lower_bound(g, ell, dev) -> float:
    """A lower bound of a *convex* g over the box {|ℓ − ℓ̂| ≤ dev}: its supporting hyperplane at
    ℓ̂, g(ℓ) ≥ g(ℓ̂) + s·(ℓ − ℓ̂) ≥ g(ℓ̂) − Σ_k |s_k|·dev_k for a subgradient s (``g.grad``).
    A max (and a max plus a constant) is bounded piece by piece, each pair of groups by its own
    two coordinates — where the Lipschitz bound pays every group's width, a 1% group's
    included.  −inf when g is not proven convex or the subgradient is not finite."""
    # lower(max_j a_j) = max_j lower(a_j) and lower(a + c) = lower(a) + c (:func:`_pieces`):
    # each group pair of a many-group parity constraint is bounded by its own two widths (a
    # pair through a tiny group has a useless bound, a pair of two large groups a tight one)
    return max(_hyperplane_lower(h, ell, dev) + c for h, c in _pieces(g))


def _hyperplane_lower(h, ell, dev) -> float:
    """h(ℓ̂) − Σ_k |s_k|·dev_k for a convex h with a finite subgradient s; else −inf."""
    if not h.is_convex():
        return -math.inf
    s = np.asarray(h.grad(ell), dtype=float)
    if not np.all(np.isfinite(s)):
        return -math.inf
    return float(h.value(ell)) - float(np.sum(np.abs(s) * dev))


def vertex_bound(g, ell, lo, hi) -> float:
    """max of a *convex* g over the box {ℓ: lo ≤ ℓ ≤ hi on g's support, ℓ̂ elsewhere}: a convex
    function attains its maximum over a box at a vertex, so enumerating the 2^s vertices is
    exact (and tighter than the Lipschitz bound for a max of terms: max(|a − b|, |c − d|)
    widens by the worse pair's widths, not by all four).  inf when g is not proven convex or
    its support is larger than :data:`MAX_VERTEX_SUPPORT`.

    A maximum of terms (:func:`_pieces`) is bounded term by term — the maximum of a maximum over
    the box is the maximum of each term's — so a gap over many groups and labels (a multi-class
    equalized odds reads 27 rates with 3 groups) needs only each term's few vertices."""
    pieces = _pieces(g)
    if len(pieces) > 1:
        return max(vertex_bound(h, ell, lo, hi) + c for h, c in pieces)
    sup = sorted(g.support())
    if not g.is_convex() or len(sup) > MAX_VERTEX_SUPPORT:
        return math.inf
    if not sup:
        return float(g.value(ell))
    corners = (np.arange(2 ** len(sup))[:, None] >> np.arange(len(sup))) & 1
    L = np.repeat(ell[None, :], len(corners), axis=0)
    L[:, sup] = np.where(corners == 1, hi[sup], lo[sup])
    return float(np.max(g.value(L)))


def _pieces(g) -> list:
    """``[(h, c)]``: g's value is max over the pieces of h(ℓ) + c — a maximum of scalar terms
    split into its terms, a constant added to one term carried along; else ``[(g, 0)]``.  The
    one decomposition of a constraint that :func:`support_lower_bound` and
    :func:`violation_bounds` read piece by piece."""
    from ..expr.affine import Add
    from ..expr.maximum import Maximum

    if isinstance(g, Maximum) and all(not a.shape for a in g.args):
        return [p for a in g.args for p in _pieces(a)]
    if isinstance(g, Add) and not g.shape:
        free = [a for a in g.args if a.support()]
        if len(free) == 1 and not free[0].shape:
            const = sum(float(a.value(np.zeros(g.K))) for a in g.args if not a.support())
            return [(h, c + const) for h, c in _pieces(free[0])]
    return [(g, 0.0)]


def cell_jacobian(C, n, num, den) -> np.ndarray:
    """∂ℓ_k/∂C_c at the counts C, (K, G·L·L): ℓ_k = Σ_{num_k} C / Σ_{den_k} C (or / n)."""
    flat = np.asarray(C, dtype=float).ravel()
    Jac = np.zeros((len(num), flat.size))
    for k, (a, b) in enumerate(zip(num, den)):
        if b is None:
            Jac[k, a] = 1.0 / n
            continue
        d = max(flat[b].sum(), 1.0)
        Jac[k, b] -= flat[a].sum() / d ** 2
        Jac[k, a] += 1.0 / d
    return Jac


def delta_standard_error(s, Jac, C, n, b) -> float:
    """The standard error of h(ℓ̂) by the delta method, s = ∇h(ℓ̂) (K,), ``Jac`` the
    :func:`cell_jacobian`, b the Laplace scale of each released count (0: exact counts).

    With a = sᵀ·Jac (∂h/∂C), h(ℓ̂) − h(ℓ) ≈ a·(C̃ − E C).  C is a sum over the n held-out rows
    of v_i, row i's probability vector placed in its own (group, label) block, and
    (a·v_i)² = (Σ_ŷ p_i(ŷ)·a_(g_i, y_i, ŷ))² ≤ Σ_ŷ p_i(ŷ)·a²_(g_i, y_i, ŷ) (Jensen), so
    Var(a·C) ≤ n·(Σ_c a_c²·π_c − (Σ_c a_c·π_c)²) with π = E C / n, read at π̂ = C̃ / n; the
    independent Laplace noise adds 2b²·Σ_c a_c²."""
    a = np.asarray(s, dtype=float) @ Jac
    return math.sqrt(sampling_variance(a, C, n) + 2.0 * b * b * float(np.sum(a * a)))


def sampling_variance(a, C, n) -> float:
    """n·(Σ_c a_c²π_c − (Σ_c a_cπ_c)²), π = C/n clipped to [0, 1]: the Jensen bound on the
    sampling variance of a·C (:func:`delta_standard_error`; :func:`linear_upper_bounds`)."""
    pi = np.clip(np.asarray(C, dtype=float).ravel() / n, 0.0, 1.0)
    return n * max(float(np.sum(a * a * pi) - np.sum(a * pi) ** 2), 0.0)


#: the normal approximation of a rate's estimate is trusted only where its denominator d and
#: the rate p have d·min(p, 1 − p) ≥ this (the textbook rule for a binomial proportion); a
#: piece that reads a rate short of it is not tested (a 5-row group whose rows are all
#: selected has a plug-in variance of 0, which would make any gap look certain)
NORMAL_MIN_COUNT = 5.0


def _normal_ok(sgrad, ell, C, n, den) -> bool:
    """Whether every rate a piece reads (the nonzero entries of its gradient ``sgrad``) passes
    :data:`NORMAL_MIN_COUNT` at the counts C."""
    flat = np.asarray(C, dtype=float).ravel()
    for k in np.nonzero(sgrad)[0]:
        d = n if den[k] is None else float(flat[den[k]].sum())
        if d * min(ell[k], 1.0 - ell[k]) < NORMAL_MIN_COUNT:
            return False
    return True


def informative(gs, ell, C, n, den, lo, hi) -> bool:
    """Whether the point estimate of every piece of every constraint (:func:`_pieces`) is
    informative: it reads only rates whose normal approximation is trusted
    (:data:`NORMAL_MIN_COUNT`, as the violation test does), or its coordinates' confidence box
    [lo, hi] moves it by less than :data:`UNINFORMATIVE_WIDTH` (Σ_k |∂h/∂ℓ_k|·(hi_k − lo_k): a
    rate near 0 in a large group).  A group with a handful of held-out rows fails both."""
    for g in gs:
        for h, _ in _pieces(g):
            sgrad = np.asarray(h.grad(ell), dtype=float).reshape(-1)
            if not np.all(np.isfinite(sgrad)):
                return False
            if not (_normal_ok(sgrad, ell, C, n, den)
                    or float(np.sum(np.abs(sgrad) * (hi - lo))) < UNINFORMATIVE_WIDTH):
                return False
    return True


def violation_bounds(gs, ell, Jac, C, n, b, alpha, num, den) -> list:
    """Per constraint g of ``gs``, a one-sided lower confidence bound of g(ℓ*) (the rule's
    value on the population the held-out rows are drawn from), jointly at 1 − ``alpha``:
    g = max_j (h_j + c_j) over its pieces (:func:`_pieces`), and g(ℓ*) ≥ h_j(ℓ*) + c_j for
    every j, so max_j (h_j(ℓ̂) + c_j − z·se_j) is one, each se_j by
    :func:`delta_standard_error` and z the normal quantile at α/(2M) for the M pieces of all
    the constraints (Bonferroni; the 2 because a piece may be |u|, whose estimate errs both
    ways).  A normal approximation, as the sampling part of the upper bound is, and used only
    for pieces whose rates pass :data:`NORMAL_MIN_COUNT` (``num``, ``den``: the coordinates'
    cells, :func:`coordinate_cells`); −inf for a constraint with no such piece.

    This is the *test* of a violation: the box of :func:`_intervals` bounds every coordinate at
    once and is loose by a factor ~3 at a few hundred rows per group, so a rule can miss a
    level of 0.02 by 0.2 on the held-out rows with that box's lower bound at 0 (docs/trust.md,
    *The violation test*)."""
    from scipy.stats import norm

    def normal_ok(sgrad):
        return _normal_ok(sgrad, ell, C, n, den)

    pieces = [_pieces(g) for g in gs]
    M = max(sum(len(p) for p in pieces), 1)
    z = float(norm.ppf(1.0 - alpha / (2 * M)))
    out = []
    for ps in pieces:
        best = -math.inf
        for h, c in ps:
            sgrad = np.asarray(h.grad(ell), dtype=float).reshape(-1)
            if not np.all(np.isfinite(sgrad)) or not normal_ok(sgrad):
                continue
            se = delta_standard_error(sgrad, Jac, C, n, b)
            best = max(best, float(h.value(ell)) + c - z * se)
        out.append(best)
    return out


def _level(constraint) -> float:
    """c of ``lhs <= c`` (0 when the right side is not a constant: the normal form g ≤ 0)."""
    side = constraint.rhs if constraint.sense == "<=" else constraint.lhs
    if side.shape == () and side.is_constant():
        lo, hi = side.range()
        if lo == hi:
            return float(lo)
    return 0.0


def check(problem, result, held, *, epsilon, options: HoldoutOptions, rng, relation="sensitive",
          n_train: int, train_labels=None, labels_public: bool = False) -> HoldoutCheck:
    """Estimate, on the held-out rows ``held`` (a Dataset or :class:`HeldOutRows`), the rule's
    error, each constraint's value with an upper confidence bound, and the best constant rule's
    error; ε = ∞ is exact (no noise).

    One release (through :class:`privfair.privacy.release.Schedule`, recorded in a fresh
    accountant whose certificate is returned in the check): Laplace(2/ε) on the G·L·L soft
    confusion counts.

    ``train_labels`` — the (L,) label counts of the training rows: exact with
    ``labels_public`` (``protect="sensitive"``: neighbouring datasets differ in one row's
    group, x and y fixed; or ε = ∞), else an estimate released by the training (post-processing,
    e.g. ``lagrangian_sgda``'s ``label_counts_estimate``) or None.  Given, the floor's constant
    is the most frequent label of *all* rows — the training counts plus the held-out ones
    (exact, or read off the noisy counts) — among the constants that keep the constraints.
    With ``labels_public`` (``HoldoutCheck.labels_public``) the constant's held-out error
    1 − n_c/n is exact, and so is the error of a rule that does not read the group
    (``needs_sensitive`` false): Σ_g C[g, y, ŷ] reads x, y and the released rule only, the same
    on both datasets of every neighbouring pair (sensitivity 0), so using it exactly releases
    nothing about the private column.  The constraints' values read the group and stay
    estimated from the noisy counts.  (Without them, on COMPAS's two races — labels 47% / 53%
    — the constant picked from 739 held-out rows was the worse one in ~2 of 10 seeds;
    docs/trust.md, *The floor*.)"""
    from ..privacy import Accountant, laplace_event
    from ..privacy.release import Schedule, Scheduled, calibrate

    G, L, n = held.n_groups, held.n_labels, held.n
    C = soft_counts(result, held)
    labels_public = bool(labels_public) and train_labels is not None
    held_labels = public_label_counts(held) if labels_public else None
    # a group-blind rule's (label, prediction) totals: public when the labels are (see above);
    # taken before the noise is added to C
    free = (C.sum(axis=0) if labels_public
            and not getattr(getattr(result, "decision_set", None), "needs_sensitive", False)
            else None)
    beta = 1.0 - options.confidence
    private = math.isfinite(epsilon)
    cert = None
    if private:
        src = ("held-out soft confusion counts: a row puts a probability vector (mass 1) in "
               "one (group, label) block; replacing it, or changing its group, moves ≤ 1 out "
               "and ≤ 1 in: ‖Δ‖₁ ≤ 2")

        def events(e):
            return [laplace_event(2.0, e, dimension=C.size, sensitivity_source=src,
                                  label="held-out check")]

        eps_c = calibrate(events, epsilon, 0.0, key=("held-out check", C.size))
        schedule = Schedule([Scheduled("held-out counts", events(eps_c)[0], exact=True)],
                            epsilon, 0.0)
        # one pure-ε release: basic composition is exact (and the other rules cost time)
        acc = Accountant(relation=relation, limit=(epsilon, 0.0), rules=("basic",), source=rng)
        C = np.asarray(schedule.open(acc, rng).laplace("held-out counts", C.ravel()),
                       dtype=float).reshape(G, L, L)
        cert = acc.certificate(notes=("held-out check: computed on rows disjoint from the "
                                      "training rows (parallel composition, docs/trust.md)",))
        b = 2.0 / eps_c
        beta_noise, beta = beta / 2, beta / 2
    else:
        eps_c, b, beta_noise = math.inf, 0.0, 1.0

    num, den = coordinate_cells(G, L)
    ell = _point(C, n, num, den)
    gs = problem.g
    U = [np.asarray(g.coordinate_lipschitz(), dtype=float).reshape(-1) for g in gs]
    used = sorted({int(k) for u in U for k in np.nonzero(u > 0)[0]})
    err_cells = [int(g * L * L + y * L + j) for g in range(G) for y in range(L)
                 for j in range(L) if y != j]
    k_used = max(len(used), 1)
    from scipy.stats import norm

    z = float(norm.ppf(1 - beta / (2 * k_used)))
    # the noise of every sum of counts the bounds read (a numerator and a denominator per
    # coordinate, and the error's) is within its bound together w.p. ≥ 1 − β_noise
    n_sums = 2 * len(used) + 1

    def noise(k):
        return laplace_sum_bound(k, b, beta_noise / n_sums)

    lo, hi = _intervals(C, n, num, den, noise, z, used)
    flat = C.ravel()
    if free is not None:           # exact: no noise term in its interval
        error = float(np.clip((free.sum() - np.trace(free)) / n, 0.0, 1.0))
        w_err = float(norm.ppf(1 - beta / 2)) * math.sqrt(0.25 / n)
    else:
        error = float(np.clip(flat[err_cells].sum() / n, 0.0, 1.0))
        # the error's own interval (reported, not used to decide): noise and sampling at 1 − β
        w_err = noise(len(err_cells)) / n + float(norm.ppf(1 - beta / 2)) * math.sqrt(0.25 / n)
    interval = (max(error - w_err, 0.0), min(error + w_err, 1.0))

    Jac = cell_jacobian(C, n, num, den)
    # the upper bounds (the certificate): piece by piece and linear in the counts where every
    # piece is affine or |affine| and reads well-populated rates — ~half the box's width for a
    # parity gap on Adult — else the box; one confidence event either way
    # (docs/trust.md, *The confidence bounds*)
    linear = linear_applies(gs, ell, C, n, den)

    def judge(ell, lo, hi, Jac):
        """Each constraint's estimate, bounds and verdicts for the rule whose point estimate
        is ``ell``, whose coordinates lie in [lo, hi] on the check's confidence event, and
        whose ∂ℓ/∂C is ``Jac`` (the violation test's standard errors)."""
        # the violation test (normal approximation, per piece), at the check's whole confidence
        tests = violation_bounds(gs, ell, Jac, C, n, b, 1.0 - options.confidence, num, den)
        lin = (linear_upper_bounds(gs, ell, Jac, C, n, b, beta, beta_noise) if linear
               else [math.inf] * len(gs))
        out = []
        for c, g, u, t_low, lin_up in zip(problem.constraints, gs, U, tests, lin):
            level = _level(c)
            est = float(g.value(ell))
            dev = np.maximum(ell - lo, hi - ell)
            box = est + float(np.sum(u * dev)) if np.all(np.isfinite(u)) else math.inf
            box = min(box, float(g.range()[1]), vertex_bound(g, ell, lo, hi))
            upper = min(lin_up, float(g.range()[1])) if linear else box
            # the mirror bound g(ℓ*) ≥ g(ℓ̂) − Σ_k U_k|ℓ*_k − ℓ̂_k| on the same intervals (the
            # same joint confidence: one event covers both sides)
            lower = est - float(np.sum(u * dev)) if np.all(np.isfinite(u)) else -math.inf
            lower = max(lower, float(g.range()[0]), support_lower_bound(g, ell, dev))
            spread = upper - est if math.isfinite(upper) else math.nan
            out.append(ConstraintCheck(str(c), level, est + level, upper + level,
                                       upper <= options.tolerance, lower + level,
                                       lower > options.tolerance or t_low > options.tolerance,
                                       box - lower >= UNINFORMATIVE_WIDTH
                                       and est > options.tolerance, t_low + level,
                                       margin=spread, lowest=float(g.range()[0]) + level,
                                       tolerance=options.tolerance, box_upper=box + level,
                                       per_label=bool(conditional & set(g.support()))))
        return out

    conditional = {int(k) for k in np.asarray(problem.rates.layout.rate).ravel()}
    checks = judge(ell, lo, hi, Jac)

    # the best constant rule (the floor): its error from the noisy label counts; among the
    # constants that keep every constraint, evaluated on the constant's own ℓ — exact where a
    # constant's rate does not depend on the data (:func:`constant_coordinates`), from the
    # noisy label counts where it does
    # (public labels: chosen by every row's label, its held-out error exact)
    n_gy = np.clip(C.sum(axis=2), 0.0, None)                   # (G, L)
    sups = [sorted(g.support()) for g in gs]
    # the floor compares what the problem minimizes: errors where f is the error (exact with
    # public labels), else f itself — a constant that errs less may be the worst rule for
    # another objective (max_g fnr_g: "always 0" errs 0.25 on Adult and has fnr 1)
    on_error = problem.minimizes_error()
    f_rule = math.nan if on_error else float(problem.f.value(ell))
    best_k, best_err, best_key, best_exact, best_ell = None, math.inf, (math.inf,), False, None
    best_obj = math.nan
    for k in range(L):
        if labels_public:
            const_err = 1.0 - float(held_labels[k]) / n
            key = -float(train_labels[k] + held_labels[k])
        else:
            const_err = key = 1.0 - float(n_gy[:, k].sum()) / n
            if train_labels is not None:          # a released estimate of the training rows'
                key = -float(train_labels[k] + n_gy[:, k].sum())
        lk, exact_k = constant_coordinates(k, n_gy, n, cells=(num, den))
        f_k = math.nan if on_error else float(problem.f.value(lk))
        key = (key,) if on_error else (f_k, key)          # ties of f: the frequent label
        if all(float(g.value(lk)) <= options.tolerance for g in gs) and key < best_key:
            best_k, best_err, best_key, best_ell, best_obj = k, const_err, key, lk, f_k
            best_exact = all(bool(np.all(exact_k[s])) for s in sups)
    labels = result.labels
    out = HoldoutCheck(n_train=n_train, n_held_out=n, epsilon=eps_c, tolerance=options.tolerance,
                       confidence=options.confidence, error=error, error_interval=interval,
                       constant_error=float(min(max(best_err, 0.0), 1.0)),
                       constant_label=None if best_k is None else labels[best_k],
                       constraints=checks, certificate=cert, counts=C,
                       constant_exact=best_exact, labels_public=labels_public,
                       bound="linear" if linear else "box",
                       groups=tuple(str(g) for g in getattr(held, "groups", ()) or ()),
                       labels=tuple(str(v) for v in (() if result.labels is None else result.labels)),
                       floor="error" if on_error else "objective", objective=f_rule,
                       constant_objective=best_obj)
    # (exact errors — public labels — can tie the constant's to the last bits: a tie keeps the
    # trained rule, which is no worse)
    worse = (error > best_err + 1e-12 if on_error else f_rule > best_obj + 1e-12)
    acts = options.on_violation in ("mix", "fallback")
    violated = acts and any(c.violated for c in checks)
    # a rule whose check is uninformative and whose estimate misses the level is replaced only
    # by a constant that keeps every constraint *exactly* (data-free values): then the swap
    # trades an unverifiable rule for a verified one (docs/trust.md, "Uninformative checks")
    unverifiable = acts and best_exact and any(c.uninformative for c in checks)
    out.fallback = best_k is not None and (worse or violated or unverifiable)
    out.fallback_reason = ("" if not out.fallback else "error" if worse else
                           "violation" if violated else "unverifiable")
    out._constant_code = best_k
    if (out.fallback_reason == "violation" and options.on_violation == "mix" and best_exact
            and informative(gs, ell, C, n, den, lo, hi)):
        # the trained rule beats the constant but breaks a constraint: return the mixture
        # "the rule w.p. p, else the constant", p the largest weight whose estimated constraint
        # values meet the levels (docs/trust.md, "Mixing with the constant").  Only where every
        # piece's estimate is informative (a group with a handful of held-out rows makes p a
        # guess: the constant keeps the constraint exactly there)
        from .mixing import mix_weight, mixed_coordinates

        p = mix_weight(gs, ell, best_ell)
        if p >= MIN_MIX_WEIGHT:
            m_ell, m_lo, m_hi = mixed_coordinates(p, best_ell, ell, lo, hi)
            out.mix_weight = p
            out.mixture = judge(m_ell, m_lo, m_hi, p * Jac)
            out.mixture_error = p * error + (1.0 - p) * out.constant_error
    if options.certify and best_exact and not worse and best_k is not None:
        # the rule returned so far: the trained one (weight 1) or the mixture above; the
        # constant of a pure fallback keeps every constraint exactly (certified as it is)
        p0 = out.mix_weight if out.mix_weight is not None else None if out.fallback else 1.0
        now = out.mixture if out.mix_weight is not None else checks
        if p0 is not None and not all(c.certified for c in now):
            from .mixing import certify_weight, mixed_coordinates

            def judged(q):
                m_ell, m_lo, m_hi = mixed_coordinates(q, best_ell, ell, lo, hi)
                return judge(m_ell, m_lo, m_hi, q * Jac)

            p = certify_weight(judged, p0)
            out.fallback, out.fallback_reason = True, "certify"
            out.mix_weight, out.mixture = p, judged(p)
            out.mixture_error = p * error + (1.0 - p) * out.constant_error
    return out


def status_of(check_: HoldoutCheck) -> str:
    """"certified", "fallback: constant rule", "fallback: mixed with a constant rule" or
    "constraint not certified at level c"."""
    if check_.fallback:
        if check_.fallback_reason == "certify":
            return CERTIFIED_MIXED
        return MIXED if check_.mix_weight is not None else FALLBACK
    bad = [c for c in check_.constraints if not c.certified]
    if not bad:
        return CERTIFIED
    return "; ".join(f"constraint not certified at level {c.level:g}" for c in bad)


def constant_result(result, code: int):
    """A :class:`privfair.Result` predicting label code ``code`` for every row, with
    ``result``'s certificate, plan, labels and info (the fallback of a failed floor check)."""
    from ..results.result import Result

    ds = ConstantRule(getattr(result.decision_set, "n_features", None), result.n_classes)
    # the trained rule's path belongs to it (result.holdout.trained.path(data)), not to the
    # constant: its checkpoints are not decisions of ConstantRule
    info = {k: v for k, v in result.info.items()
            if k not in ("checkpoints", "lambdas", "chosen_indices")}
    return Result(result.backend, [int(code)], [1.0], ds, certificate=result.certificate,
                  plan=result.plan, trace=result.trace, info=info, labels=result.labels)
