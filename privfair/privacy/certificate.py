"""The privacy certificate: the releases, the composition rule and the total (ε, δ).

A certificate is built from the accountant's events — never re-derived — and can be printed as
text (``str(cert)``) or Markdown (``cert.to_markdown()``; Jupyter renders it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .composition import RULES
from .events import fmt_number
from .spec import RELATIONS

__all__ = ["Certificate"]


@dataclass(frozen=True)
class Certificate:
    """Proof summary of a differentially private result.

    Attributes
    ----------
    releases : tuple of Event
        Every release, in order.
    epsilon, delta : float
        The proven total: the result is (ε, δ)-DP under ``relation``.
    rule : str
        The composition rule that gave the total (a key of ``composition.RULES``).
    candidates : dict
        ε given by every rule that was tried (None where it does not apply).
    reasons : dict
        Why a rule did not apply.
    relation : str
        ``"sensitive"`` or ``"row"`` (see :data:`privfair.privacy.spec.RELATIONS`).
    idealized_numerics : bool
        True when some release drew its noise with floating-point samplers (the fast path):
        the guarantee then holds for the ideal real-valued mechanism.
    seeded : bool
        True when some release used a seeded (non-cryptographic) generator.
    notes : tuple of str
        Further statements (e.g. from the backend).
    """

    releases: tuple
    epsilon: float
    delta: float
    rule: str
    candidates: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)
    relation: str = "sensitive"
    idealized_numerics: bool = False
    seeded: bool = False
    notes: tuple = ()

    @classmethod
    def non_private(cls, relation: str = "sensitive", notes=()) -> "Certificate":
        """The certificate of a non-private reference run (ε = ∞): nothing is protected."""
        return cls((), math.inf, 1.0, "non-private", {}, {}, relation, False, False,
                   ("non-private reference run: NO privacy protection",) + tuple(notes))

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def rule_description(self) -> str:
        return RULES.get(self.rule, self.rule)

    def headline(self) -> str:
        """One line: "(ε, δ)-differentially private", or that the run is not private."""
        if not self.is_private:
            return "NOT PRIVATE (ε = ∞): a non-private reference run"
        d = "0" if self.delta == 0 else fmt_number(self.delta)
        return f"({fmt_number(self.epsilon)}, {d})-differentially private"

    def numerics(self) -> str:
        """One sentence: whether all noise was sampled exactly or some was idealized."""
        if self.idealized_numerics:
            return ("IDEALIZED: some noise was drawn with floating-point samplers; the guarantee "
                    "is that of the ideal real-valued mechanism")
        return "exact: all noise was sampled exactly and rounded as post-processing"

    def to_text(self) -> str:
        lines = ["privfair privacy certificate", "=" * 28, self.headline()]
        lines.append(f"neighbouring datasets: {RELATIONS.get(self.relation, self.relation)}")
        if self.is_private:
            lines.append(f"composition: {self.rule} — {self.rule_description}")
        lines.append(f"numerics: {self.numerics()}")
        if self.seeded:
            lines.append("randomness: SEEDED generator (reproducible, not cryptographic) used")
        if self.releases:
            lines.append(f"releases ({len(self.releases)}):")
            for i, ev in enumerate(self.releases, 1):
                lines.append(f"  {i}. {ev.describe()}")
                lines.append(f"     theorem: {ev.theorem}")
                if ev.sampler:
                    lines.append(f"     sampler: {ev.sampler}")
        tried = [f"{r}: {fmt_number(e)}" for r, e in self.candidates.items() if e is not None]
        if tried:
            lines.append("ε by rule at this δ: " + ", ".join(tried))
        for note in self.notes:
            lines.append(f"note: {note}")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        out = ["### Privacy certificate", "", f"**{self.headline()}**", "",
               f"- Neighbouring datasets: {RELATIONS.get(self.relation, self.relation)}"]
        if self.is_private:
            out.append(f"- Composition: `{self.rule}` — {self.rule_description}")
        out.append(f"- Numerics: {self.numerics()}")
        if self.seeded:
            out.append("- Randomness: seeded generator (reproducible, not cryptographic)")
        if self.releases:
            out += ["", "| # | mechanism | count | sensitivity | source | noise scale | ε, δ each "
                    "| theorem | sampler |",
                    "|---|---|---|---|---|---|---|---|---|"]
            for i, ev in enumerate(self.releases, 1):
                sens = "—" if ev.sensitivity is None else f"{fmt_number(ev.sensitivity)} ({ev.norm})"
                cost = "—" if ev.epsilon is None else (
                    f"{fmt_number(ev.epsilon)}, {fmt_number(ev.delta) if ev.delta else 0}")
                scale = fmt_number(ev.scale)
                if ev.sampling_rate is not None:
                    scale += f", q={fmt_number(ev.sampling_rate)} ({ev.neighbouring})"
                cells = [str(i), ev.mechanism, str(ev.count), sens, ev.sensitivity_source, scale,
                         cost, ev.theorem, ev.sampler + (" **(idealized)**" if ev.idealized
                                                         else "")]
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        tried = [f"`{r}` {fmt_number(e)}" for r, e in self.candidates.items() if e is not None]
        if tried:
            out += ["", "ε by rule at this δ: " + ", ".join(tried)]
        for note in self.notes:
            out.append(f"\n> {note}")
        return "\n".join(out)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __str__(self) -> str:
        return self.to_text()

    def as_dict(self) -> dict:
        """JSON-ready dict."""
        return {
            "epsilon": self.epsilon, "delta": self.delta, "rule": self.rule,
            "relation": self.relation, "idealized_numerics": self.idealized_numerics,
            "seeded": self.seeded, "candidates": dict(self.candidates),
            "releases": [ev.as_dict() for ev in self.releases], "notes": list(self.notes),
        }
