"""Neural networks (any ``torch.nn.Module``) as a decision set.

``TorchModel(module, n_features, n_classes)`` is the decision set of the ``sgda`` backend for
models beyond logistic regression: a decision is the flat float64 vector of the module's
parameters (``P`` reals, in ``module.parameters()`` order); it predicts the argmax class of the
module's output on the features ``X`` -- never the sensitive attribute, so a row's prediction is
fixed when only its sensitive attribute changes (the "sensitive" relation of
:mod:`privfair.statistics.stats`).

The module maps a float32 batch ``(n, n_features)`` to logits ``(n, n_classes)``; for two classes
a single logit ``(n,)`` or ``(n, 1)`` is read as P(ŷ = 1) = sigmoid(logit).  Modules that mix the
rows of a batch (BatchNorm in training mode; anything with buffers) are refused: per-row
sensitivities would not hold.  torch is imported lazily, so ``import privfair`` works without it.

Examples
--------
>>> import torch, numpy as np, privfair as pf
>>> C = pf.TorchModel(lambda: torch.nn.Linear(3, 4), n_features=3, n_classes=4)
>>> C.P, C.n_classes
(16, 4)
>>> C.predict(np.zeros(16), np.ones((2, 3)))
array([0, 0], dtype=uint8)
"""

from __future__ import annotations

import copy
import math
import numbers
import threading

import numpy as np

from .decisions import DecisionSet, as_matrix
from ..errors import InvalidInputError

__all__ = ["TorchModel"]

#: rows per forward pass in ``predict`` / ``probabilities``
CHUNK_ROWS = 1 << 15


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - exercised only without torch
        raise InvalidInputError("module", "torch", "TorchModel needs torch: pip install torch "
                                "(the optional extra)") from None
    return torch


class TorchModel(DecisionSet):
    """Parameters of a torch module as the decision set.

    Parameters
    ----------
    module : torch.nn.Module or callable
        The model, or a zero-argument factory returning a fresh one.  Its initial parameters
        (data-independent) are the starting point of training; they are copied, never modified.
    n_features : int
        Number of feature columns (d).
    n_classes : int, default 2
        Number of labels L ≥ 2.

    Attributes
    ----------
    P : int -- number of parameters;  size = inf;  diameter = vc_dimension = None.
    binary_logit : bool -- True when the module outputs one logit for two classes.
    """

    def __init__(self, module, n_features: int, n_classes: int = 2):
        torch = _torch()
        for name, v, low in (("n_features", n_features, 1), ("n_classes", n_classes, 2)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < low:
                raise InvalidInputError(name, v, f"pass an integer ≥ {low}")
        if isinstance(module, torch.nn.Module):
            template, factory = copy.deepcopy(module), None
        elif callable(module):
            template, factory = module(), module
            if not isinstance(template, torch.nn.Module):
                raise InvalidInputError("module", type(template).__name__,
                                        "the factory must return a torch.nn.Module")
        else:
            raise InvalidInputError("module", type(module).__name__,
                                    "pass a torch.nn.Module or a factory returning one")
        if any(True for _ in template.buffers()):
            raise InvalidInputError("module", type(template).__name__,
                                    "modules with buffers (e.g. BatchNorm running statistics) "
                                    "mix the rows of a batch, which breaks per-row sensitivity; "
                                    "use a model without them (e.g. LayerNorm or GroupNorm)")
        params = [p for p in template.parameters()]
        if not params:
            raise InvalidInputError("module", type(template).__name__, "the module has no parameters")
        self.n_features, self.n_classes = int(n_features), int(n_classes)
        self._factory, self._template = factory, template.float().eval()
        self.P = int(sum(p.numel() for p in params))
        self.size, self.diameter, self.vc_dimension = math.inf, None, None
        try:
            with torch.no_grad():
                out = self._template(torch.zeros(2, self.n_features))
        except (RuntimeError, ValueError, TypeError) as err:
            raise InvalidInputError("module", type(template).__name__,
                                    f"it must accept a float32 batch of shape (n, {self.n_features})"
                                    f" (n_features={self.n_features}); torch said: "
                                    f"{str(err).splitlines()[0]}") from None
        shape = tuple(out.shape)
        if shape in ((2,), (2, 1)) and self.n_classes == 2:
            self.binary_logit = True
        elif shape == (2, self.n_classes):
            self.binary_logit = False
        else:
            raise InvalidInputError("module", f"output shape {shape} for 2 rows",
                                    f"return logits of shape (n, {self.n_classes})"
                                    + (" or one logit (n,) / (n, 1)" if self.n_classes == 2 else ""))
        self._cache = None

    @property
    def template(self):
        """The template module itself (float32, eval mode), read-only by convention: backends
        inspect its type and shapes; use :meth:`build` for a module to train."""
        return self._template

    # -- parameters -------------------------------------------------------------------------
    def build(self):
        """A fresh float32 module with the template's initial parameters (eval mode)."""
        return copy.deepcopy(self._template)

    def initial_parameters(self) -> np.ndarray:
        """The template's parameters as one float64 vector (the public starting point)."""
        torch = _torch()
        with torch.no_grad():
            return torch.nn.utils.parameters_to_vector(
                self._template.parameters()).double().cpu().numpy()

    def theta(self, decision) -> np.ndarray:
        """The decision as a validated finite float64 vector of the module's ``P`` parameters."""
        theta = np.asarray(decision, dtype=np.float64).reshape(-1)
        if theta.shape != (self.P,) or not np.isfinite(theta).all():
            raise InvalidInputError("decision", f"shape {np.shape(decision)}",
                                    f"pass the {self.P} finite parameters of the module as one vector")
        return theta

    def module_for(self, decision, device="cpu"):
        """A module carrying ``decision``'s parameters (a cached copy per device)."""
        torch = _torch()
        theta = self.theta(decision)
        key = (str(device),)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self.build().to(device))
        mod = self._cache[1]
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(
                torch.as_tensor(theta, dtype=torch.float32, device=device), mod.parameters())
        return mod

    # -- predictions --------------------------------------------------------------------------
    def probabilities(self, decision, X, device="cpu") -> np.ndarray:
        """Class probabilities (n, n_classes) of ``decision`` on ``X`` (softmax / sigmoid).

        Thread-safe: the cached module carries one decision's parameters at a time, so two
        threads scoring different decisions (a mixture's components on the threads of one
        Dask worker: the held-out check, ``Result.metrics``) would otherwise read each
        other's parameters; :data:`_PREDICT_LOCK` holds the cache from the parameters' write
        to the last forward pass."""
        torch = _torch()
        X = as_matrix(X, self.n_features)
        out = []
        with _PREDICT_LOCK:
            mod = self.module_for(decision, device)
            with torch.no_grad():
                for s in range(0, X.shape[0], CHUNK_ROWS):
                    z = mod(torch.tensor(X[s:s + CHUNK_ROWS], dtype=torch.float32,
                                         device=device))
                    out.append(probs_from_logits(z, self.binary_logit).double().cpu().numpy())
        return np.concatenate(out, axis=0) if out else np.zeros((0, self.n_classes))

    def predict(self, decision, X) -> np.ndarray:
        """The argmax labels (uint8, shape (n,))."""
        return np.argmax(self.probabilities(decision, X), axis=1).astype(np.uint8)

    def __repr__(self):
        return (f"TorchModel({type(self._template).__name__}, n_features={self.n_features}, "
                f"n_classes={self.n_classes}, P={self.P})")


#: held by :meth:`TorchModel.probabilities` (module-level, so a pickled model carries no lock:
#: each worker process has its own; re-entrant for a caller that already holds it)
_PREDICT_LOCK = threading.RLock()


def probs_from_logits(z, binary_logit: bool):
    """Class probabilities from a module's output: sigmoid of one logit, or softmax."""
    torch = _torch()
    if binary_logit:
        s = torch.sigmoid(z.reshape(z.shape[0]))
        return torch.stack([1.0 - s, s], dim=1)
    return torch.softmax(z, dim=1)
