"""The held-out check's linear upper bound, measured: a parity gap bounded piece by piece
instead of over the box of every coordinate (since 2026-11-27, thirteenth session, what the
check certifies with wherever every piece is affine or |affine| in well-populated rates).

The check certifies a constraint when its upper bound is within level + tolerance.  The box —
the maximum over intervals that bound every rate the constraints read at once (docs/trust.md,
*The confidence bounds*) — added ~0.055 to a parity gap on Adult's 6,032 held-out rows.  The
linear bound reads each piece h of a constraint (a gap u or |u|, affine in the rates) linearly
in the released counts C̃ (the delta method, as the violation test does):

    upper = |u(ℓ̂)| + z·se + t        se² = n·(Σ_c a_c²π_c − (Σ_c a_c π_c)²),  a = ∂u/∂C
                                      (the violation test's Jensen bound, π = C̃/n)
                                      t: P(Σ_c a_c L_c ≥ t) ≤ β/4 for the Laplace noise L
                                      (Chernoff on its moment generating function: exact)

z at β/4 (both sides of |u|, half of β for the sampling): the sampling part is the normal
approximation, as the box's is; the noise part is a finite-sample tail, as the box's is.  Part
1 recomputes it here for one gap (the library's ``privfair.planning.holdout.
linear_upper_bounds`` handles every affine piece; the noise tail is the library's
``weighted_laplace_tail``).

    python bench/trust_linear_bound.py [--samples 1000] [--no-adult]

Part 1 — coverage: fixed rules on a 10⁶-row population (two groups, 50/50 or 90/10), R held-out
samples of 739 or 6,000 rows, the check's Laplace(2/ε) noise on the 8 counts; the share of
samples whose bound is below the population's gap (nominal ≤ 0.05).  Part 2 — Adult: the
check of a solve (row, ε = 1, seed 0, DP ≤ 0.01 and ≤ 0.05): which bound it used, the estimate,
the upper bound and the verdict (the box gave 0.0606 and 0.0777 on the same counts).
"""

import argparse
import math
import warnings

import numpy as np
from scipy.stats import norm

from privfair.planning.holdout import weighted_laplace_tail


def gap_and_gradient(C):
    """(r_a − r_b, ∂(r_a − r_b)/∂C raveled) for counts C[g, y, ŷ] of two groups, r_g the
    selection rate Σ_y C[g, y, 1] / Σ_{y, ŷ} C[g, y, ŷ]."""
    C = np.clip(np.asarray(C, dtype=float), 1e-9, None)
    rates, grads = [], []
    for g in (0, 1):
        d, pos = C[g].sum(), C[g, :, 1].sum()
        grad = np.zeros_like(C)
        grad[g, :, 1] = 1.0 / d - pos / d ** 2
        grad[g, :, 0] = -pos / d ** 2
        rates.append(pos / d)
        grads.append(grad)
    return rates[0] - rates[1], (grads[0] - grads[1]).ravel()


def linear_upper(C, n, b, confidence=0.95):
    """(upper bound of |gap|, its sampling part, its noise part) from the released counts C."""
    beta = 1.0 - confidence
    beta_sample, beta_noise = (beta / 2, beta / 2) if b > 0 else (beta, 0.0)
    u, a = gap_and_gradient(C)
    pi = np.clip(np.asarray(C, dtype=float).ravel() / n, 0.0, 1.0)
    se = math.sqrt(n * max(float(np.sum(a * a * pi) - np.sum(a * pi) ** 2), 0.0))
    sampling = float(norm.ppf(1 - beta_sample / 2)) * se
    noise = weighted_laplace_tail(a, b, beta_noise / 2) if b > 0 else 0.0
    return abs(u) + sampling + noise, sampling, noise


def counts(p, y, a):
    C = np.zeros((2, 2, 2))
    for g in (0, 1):
        for k in (0, 1):
            m = (a == g) & (y == k)
            one = float(p[m].sum())
            C[g, k] = (m.sum() - one, one)
    return C


def coverage(samples, rng):
    pop = 1_000_000
    print("| groups | rule | population gap | held-out rows | ε | miss rate (nominal ≤ 0.05) | "
          "mean width | its noise part |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for share in (0.5, 0.1):
        a = (rng.random(pop) < share).astype(int)
        X = rng.normal(size=(pop, 5)) + 0.5 * a[:, None] * (np.arange(5) < 2)
        y = (X.sum(axis=1) + rng.normal(size=pop) > 1.0).astype(int)
        score = X @ np.array([1.0, 1.0, 0.3, 0.3, 0.3])
        rules = {"1[s > 1]": (score > 1.0).astype(float),
                 "1[s > 2.5]": (score > 2.5).astype(float),
                 "½·1[s > 0.5] + ½·1[s > 2]": 0.5 * (score > 0.5) + 0.5 * (score > 2.0)}
        for name, p in rules.items():
            true = abs(gap_and_gradient(counts(p, y, a))[0])
            for n in (739, 6000):
                for eps in (1.0, math.inf):
                    b = 0.0 if math.isinf(eps) else 2.0 / eps
                    miss, width, noise = 0, [], []
                    for _ in range(samples):
                        idx = rng.integers(0, pop, n)
                        C = counts(p[idx], y[idx], a[idx])
                        if b:
                            C = C + rng.laplace(0.0, b, C.shape)
                        up, _, nz = linear_upper(C, n, b)
                        miss += true > up
                        width.append(up - abs(gap_and_gradient(C)[0]))
                        noise.append(nz)
                    print(f"| {share:.0%} / {1 - share:.0%} | {name} | {true:.3f} | {n:,} | "
                          f"{eps:g} | {miss / samples:.3f} | {np.mean(width):.4f} | "
                          f"{np.mean(noise):.4f} |", flush=True)


def adult():
    import privfair as pf

    train = pf.datasets.load_adult("train")
    r = pf.rates(pf.LinearClassifier(train.n_features), train)
    print("\n| Adult, row, ε = 1, seed 0 | the check's bound | estimate | upper bound | "
          "certified |")
    print("| --- | --- | --- | --- | --- |")
    for level in (0.01, 0.05):
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection["Female"] - r.selection["Male"]) <= level])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = prob.solve(pf.DP(1.0, 1e-5), seed=0, progress=False)
        chk = res.holdout
        c = chk.constraints[0]
        print(f"| DP ≤ {level:g} | {chk.bound} | {c.estimate:.4f} | {c.upper:.4f} | "
              f"{c.certified} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1000, help="held-out samples per setting")
    ap.add_argument("--no-adult", action="store_true", help="skip part 2")
    args = ap.parse_args()
    coverage(args.samples, np.random.default_rng(0))
    if not args.no_adult:
        adult()


if __name__ == "__main__":
    main()
