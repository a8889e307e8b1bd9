"""Certificates: contents of the text and Markdown forms, totals, flags."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privfair.privacy as pp


@pytest.fixture
def cert():
    acc = pp.Accountant(delta=1e-6, relation="row")
    pp.laplace_mechanism(np.zeros(2), 0.5, 0.3, rng=1, accountant=acc,
                         sensitivity_source="compiler: ‖Δℓ‖₁ ≤ 2/n", label="group rates")
    pp.exponential_mechanism(np.arange(10.0), 1.0, 0.2, accountant=acc,
                             sensitivity_source="[A] Lemma 5.1")
    acc.record(pp.subsampled_gaussian_event(3.0, 1.0, 0.01, count=500,
                                            sensitivity_source="per-row clipping C = 1"))
    return acc.certificate(notes=("backend: DP-SGDA",))


def test_certificate_totals(cert):
    assert cert.delta == 1e-6 and math.isfinite(cert.epsilon) and cert.is_private
    assert cert.rule == "pld"
    assert cert.epsilon == min(e for e in cert.candidates.values() if e is not None)
    assert len(cert.releases) == 3
    assert cert.idealized_numerics            # the subsampled Gaussian used float noise
    assert cert.seeded                        # the Laplace release was seeded


def test_certificate_text(cert):
    text = str(cert)
    for needle in ["privfair privacy certificate", f"({cert.epsilon:.6g}, 1e-06)",
                   "replacing one whole row", "composition: pld", "IDEALIZED",
                   "SEEDED", "laplace", "Δ=0.5 (l1; compiler: ‖Δℓ‖₁ ≤ 2/n)", "b=1.66667",
                   "Balle" if False else "Dwork & Roth 2014, Thm 3.6",
                   "exponential", "McSherry & Talwar 2007", "[A] Lemma 5.1",
                   "subsampled_gaussian ×500", "q=0.01 (replace)", "per-row clipping C = 1",
                   "os.urandom", "note: backend: DP-SGDA"]:
        assert needle in text, needle


def test_certificate_markdown(cert):
    md = cert.to_markdown()
    assert md.startswith("### Privacy certificate")
    assert "| # | mechanism | count | sensitivity |" in md
    assert "| 3 | subsampled_gaussian | 500 | 1 (per-row l2) |" in md
    assert "**(idealized)**" in md and "`pld`" in md
    assert cert._repr_markdown_() == md
    rows = [l for l in md.splitlines() if l.startswith("| ")]
    assert len(rows) == 1 + 3 and all(l.count(" | ") >= 8 for l in rows)


def test_exact_certificate_and_dict():
    acc = pp.Accountant()
    pp.gaussian_mechanism(1.0, 1.0, 1.0, 1e-6, accountant=acc)
    c = acc.certificate()
    assert (c.epsilon, c.delta, c.rule) == (1.0, 1e-6, "basic")   # its own (ε, δ)
    assert not c.idealized_numerics and not c.seeded
    assert "exact: all noise was sampled exactly" in str(c)
    d = c.as_dict()
    assert d["releases"][0]["mechanism"] == "gaussian" and d["delta"] == c.delta


def test_pure_certificate():
    acc = pp.Accountant()
    pp.laplace_mechanism(1.0, 1.0, 0.5, accountant=acc)
    pp.permute_and_flip([1.0, 2.0], 1.0, 0.5, accountant=acc)
    c = acc.certificate()
    assert (c.epsilon, c.delta, c.rule) == (1.0, 0.0, "basic")
    assert "(1, 0)-differentially private" in str(c)
    assert "McKenna & Sheldon 2020" in str(c)


def test_non_private_certificate():
    c = pp.Certificate.non_private("sensitive")
    assert not c.is_private and c.epsilon == math.inf
    assert "NOT PRIVATE" in str(c) and "NO privacy protection" in str(c)
    assert "NOT PRIVATE" in c.to_markdown()
