"""The ``privfair`` command line.

``privfair demo`` runs the main job on the bundled Adult data; ``privfair datasets`` lists the
bundled datasets.  Wrong flags give a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys

from .errors import PrivfairError


def _cmd_datasets(args) -> int:
    from .datasets import list_datasets

    for name, description in list_datasets().items():
        print(f"{name:10s} {description}")
    return 0


def _cmd_demo(args) -> int:
    from .demo import run_demo

    run_demo(epsilon=args.epsilon, constraint=args.constraint, seed=args.seed,
             subsample=args.subsample)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="privfair",
                                     description="Private fair optimization with proven DP.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="private fair fit on bundled Adult: analysis, certificate, metrics")
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy budget ε (default 1)")
    p.add_argument("--constraint", choices=["equalized_odds", "demographic_parity"],
                   default="equalized_odds")
    p.add_argument("--seed", type=int, default=None, help="seed for a reproducible run")
    p.add_argument("--subsample", type=int, default=None, help="use only this many training rows")
    p.set_defaults(func=_cmd_demo)
    d = sub.add_parser("datasets", help="list the bundled datasets")
    d.set_defaults(func=_cmd_datasets)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except PrivfairError as exc:
        print(f"privfair: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
