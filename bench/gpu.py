"""GPU against CPU: the torch backends on one synthetic problem, both devices in the same run.

Usage::

    python bench/gpu.py                      # 10⁶ rows × 50 features, each backend's default epochs
    python bench/gpu.py --rows 200000 --epochs 2

For each (backend, model) it solves the same private problem (demographic parity ≤ 0.02, ε = 1,
δ = 1/n²; ``lagrangian_sgda`` under ``protect="row"`` and ``"sensitive"``, ``sgda`` under
``"sensitive"``) with ``device="cpu"`` and ``device="cuda"`` and prints the wall time of
``problem.solve`` (median of ``--repeats``, after one untimed warm-up solve per device), the
CPU / GPU ratio, and the test error, violation and ``Result.status`` of both releases on a fresh
sample (the two devices run the same algorithm on the same Poisson batches, so they should agree
to noise; a status "fallback: constant rule" says the error column is the constant's, so compare
the times only).
The CPU side uses every core torch sees (``torch.get_num_threads()`` is printed).  Without a
CUDA device it prints the CPU times and says that the ratio was not measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import privfair as pf


def synthetic(rows, d, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, rows)
    X = rng.normal(size=(rows, d)) + 0.5 * a[:, None] * (np.arange(d) < 5)
    y = (X[:, :10].sum(axis=1) + rng.normal(size=rows) > 1.0).astype(int)
    return pf.Dataset(X, y, sensitive=np.where(a == 1, "b", "a"), group_names=["a", "b"])


def models(d):
    import torch

    def linear():
        torch.manual_seed(0)
        return torch.nn.Linear(d, 2)

    def mlp():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))

    return {"TorchModel linear": pf.TorchModel(linear, n_features=d, n_classes=2),
            "TorchModel MLP 64": pf.TorchModel(mlp, n_features=d, n_classes=2),
            "LinearClassifier": pf.LinearClassifier(d, radius=100.0)}


#: (backend, decision set, unit, options).  sgda's default batch is 64 rows (DP-FERMI's
#: protocol): 10⁴ tiny steps at 10⁶ rows, launch-bound on a GPU; the second sgda case asks for
#: 4,096-row batches (same ε, fewer steps) to show where the GPU pays
CASES = [("lagrangian_sgda", "TorchModel linear", "row", {}),
         ("lagrangian_sgda", "TorchModel MLP 64", "row", {}),
         ("lagrangian_sgda", "TorchModel linear", "sensitive", {}),
         ("sgda", "LinearClassifier", "sensitive", {}),
         ("sgda", "LinearClassifier", "sensitive", {"batch_size": 4096})]


def timed(prob, privacy, backend, device, epochs, repeats, options):
    import torch

    with warnings.catch_warnings():           # status warnings of the held-out check
        warnings.simplefilter("ignore")
        prob.solve(privacy, backend=backend, seed=0, device=device, epochs=0.2,
                   progress=False, **options)            # warm-up: CUDA context, kernels, calibration cache
        if epochs is not None:       # else each backend's own default (what a user runs)
            options = {**options, "epochs": epochs}
        times, res = [], None
        for rep in range(repeats):
            t0 = time.perf_counter()
            res = prob.solve(privacy, backend=backend, seed=rep, device=device,
                             progress=False, **options)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return statistics.median(times), res


def main(argv=None):
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=50)
    ap.add_argument("--epochs", type=float, default=None,
                    help="passes over the data (default: each backend's own default)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cases", default="all", help="comma-separated indices into CASES, or all")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    print(f"rows={args.rows} features={args.features} "
          f"epochs={'backend default' if args.epochs is None else args.epochs} "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, "
          f"GPU: {torch.cuda.get_device_name(0) if cuda else 'none'}")
    train, test = synthetic(args.rows, args.features, 0), synthetic(200_000, args.features, 1)
    sets = models(args.features)
    cases = CASES if args.cases == "all" else [CASES[int(i)] for i in args.cases.split(",")]
    print("| backend | model | unit | options | CPU s | GPU s | CPU/GPU | CPU error / DP (status) "
          "| GPU error / DP (status) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for backend, name, unit, options in cases:
        r = pf.rates(sets[name], train)
        prob = pf.Problem(pf.minimize(r.error()),
                          [pf.abs(r.selection["a"] - r.selection["b"]) <= 0.02])
        privacy = pf.DP(1.0, 1.0 / args.rows ** 2, protect=unit)
        out = {}
        for dev in ["cpu"] + (["cuda"] if cuda else []):
            t, res = timed(prob, privacy, backend, dev, args.epochs, args.repeats, options)
            m = res.metrics(test)
            out[dev] = (t, f"{m['error']:.4f} / {m['dp_violation']:.4f} ({res.status})")
        g = out.get("cuda")
        opts = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
        print(f"| {backend} | {name} | {unit} | {opts} | {out['cpu'][0]:.2f} | "
              f"{g[0] if g else float('nan'):.2f} | "
              f"{out['cpu'][0] / g[0] if g else float('nan'):.1f}× | {out['cpu'][1]} | "
              f"{g[1] if g else '—'} |", flush=True)
    if not cuda:
        print("no CUDA device here: the GPU column and the ratio were not measured")


if __name__ == "__main__":
    main()
