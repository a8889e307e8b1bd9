"""Issue #19, item 3: no plan the accountant refuses.  At n = 10⁷ sgda plans with δ = 1/n² =
1e-14; its schedule (the Laplace counts, T = 40/q Poisson-subsampled Gaussian steps at the 10⁷-row
sampling rate, the private choice of λ) must be accepted, in draw order, by an accountant whose
limit is the plan's (ε, δ) — also at δ = 1e-300.  Only the planned events are needed, not the rows.

Before: the noise multiplier was fitted by a PLD bisection that dp-accounting cannot carry out at
δ = 1e-14 (its FFT round-off exceeds δ, so ε(σ) is not monotone), and the accountant then
refused the plan about once in two runs (BudgetExceededError)."""

import math

import pytest

pytest.importorskip("torch", reason="sgda's module imports with the optional torch extra only")

import privfair as pf  # noqa: E402
from privfair.backends.sgda import schedule as SCH  # noqa: E402
from privfair.privacy import Accountant  # noqa: E402

N = 10_000_000


@pytest.mark.slow
@pytest.mark.parametrize("delta", [1.0 / N ** 2, 1e-300])
def test_the_10M_row_plan_is_accepted_by_its_accountant(delta):
    q = 2048 / N                                        # sgda's default batch at n = 10⁷
    T = math.ceil(40 / q)                               # 40 epochs: 195,313 steps
    privacy = pf.DP(1.0, delta, protect="sensitive")
    sched, z = SCH.schedule(privacy, G=2, L=2, T=T, q=q, epsilon_count=0.05,
                            epsilon_select=0.25, rule="first", n_path=9, penalty=1.0,
                            theta_share=0.5)
    assert list(sched.releases) == ["counts", "steps", "select"]
    acc = Accountant(limit=(privacy.epsilon, privacy.delta))
    for ev in sched.events():                           # the draw order; each prefix checked
        acc.record(ev)
    total = acc.total()
    assert total.epsilon <= privacy.epsilon and total.delta <= privacy.delta
    assert total.epsilon > 0.99 * privacy.epsilon       # and the fit uses the budget
    assert 0 < z < 20
