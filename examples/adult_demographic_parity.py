"""Demographic parity on Adult with sensitive-attribute privacy (the ``cells`` backend).

    python examples/adult_demographic_parity.py [--subsample N] [--epsilon 1.0] [--level 0.01]

Minimizes the training error subject to |P(ŷ=1 | Female) − P(ŷ=1 | Male)| ≤ level over
randomized rules on score × proxy cells, (ε, 1/n²)-DP for one row's sex; prints the plan, the
privacy certificate and the test metrics of the expected prediction (sex is never an input).
"""

import argparse

import privfair as pf



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subsample", type=int, default=None, help="train on N random rows (smoke test)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--level", type=float, default=0.01, help="demographic-parity bound")
    ap.add_argument("--seed", type=int, default=None, help="reproducible noise (not for real releases)")
    args = ap.parse_args(argv)

    train, test = pf.datasets.load_adult("train"), pf.datasets.load_adult("test")
    if args.subsample:
        train = train.subsample(args.subsample, rng=0)
    bins = (20, 8) if train.n >= 20_000 else (10, 4)
    r = pf.rates(pf.ProxyCells(*bins, feature_groups=pf.datasets.adult_proxy_feature_groups(train)), train)
    problem = pf.Problem(pf.minimize(r.error()),
                         [pf.abs(r.selection["Female"] - r.selection["Male"]) <= args.level])
    privacy = pf.DP(args.epsilon, 1.0 / train.n ** 2, protect="sensitive")
    print(problem.plan(privacy).explain(), "\n")
    result = problem.solve(privacy, seed=args.seed, progress=False)
    print(result.certificate, "\n")
    if "note" in result.info:
        print("note:", result.info["note"], "\n")
    for split, data in (("train", train), ("test", test)):
        m = result.metrics(data)
        print(f"{split}: error {m['error']:.4f}, DP violation {m['dp_violation']:.4f}, "
              f"EO violation {m['eo_violation']:.4f}  (expected prediction)")


if __name__ == "__main__":
    main()
