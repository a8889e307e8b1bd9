"""A tiny array namespace so that atoms evaluate on numpy arrays and torch tensors alike.

Only the handful of operations the atoms need.  torch is optional and imported lazily: the
namespace of an array is torch's only when the array *is* a torch tensor, so a numpy-only
install never imports torch.
"""

from __future__ import annotations

import sys

import numpy as np


class _Numpy:
    """numpy implementation of the operations the atoms use (inputs of shape (B, n))."""

    name = "numpy"

    def asarray(self, a, like=None):
        return np.asarray(a, dtype=float)

    def zeros(self, shape, like=None):
        return np.zeros(shape)

    def eye(self, n, like=None):
        return np.eye(n)

    def concat(self, arrays, axis=-1):
        return np.concatenate(arrays, axis=axis)

    def broadcast_to(self, a, shape):
        return np.broadcast_to(a, shape)

    def amax(self, a, axis=-1, keepdims=False):
        return np.max(a, axis=axis, keepdims=keepdims)

    def sum(self, a, axis=-1, keepdims=False):
        return np.sum(a, axis=axis, keepdims=keepdims)

    def where(self, cond, a, b):
        return np.where(cond, a, b)

    def astype_float(self, a, like=None):
        return np.asarray(a, dtype=float)

    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    abs = staticmethod(np.abs)
    sqrt = staticmethod(np.sqrt)
    sign = staticmethod(np.sign)
    maximum = staticmethod(np.maximum)


class _Torch:
    """torch implementation of the same operations; dtype and device follow the input."""

    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch

    def asarray(self, a, like=None):
        t = self.torch
        if like is None:
            return t.as_tensor(a)
        return t.as_tensor(np.asarray(a, dtype=float) if not t.is_tensor(a) else a,
                           dtype=like.dtype, device=like.device)

    def zeros(self, shape, like=None):
        return self.torch.zeros(shape, dtype=like.dtype, device=like.device)

    def eye(self, n, like=None):
        return self.torch.eye(n, dtype=like.dtype, device=like.device)

    def concat(self, arrays, axis=-1):
        return self.torch.cat(list(arrays), dim=axis)

    def broadcast_to(self, a, shape):
        return a.expand(*shape)

    def amax(self, a, axis=-1, keepdims=False):
        return self.torch.amax(a, dim=axis, keepdim=keepdims)

    def sum(self, a, axis=-1, keepdims=False):
        return self.torch.sum(a, dim=axis, keepdim=keepdims)

    def where(self, cond, a, b):
        t = self.torch
        a = a if t.is_tensor(a) else t.as_tensor(a, dtype=b.dtype if t.is_tensor(b) else None)
        b = b if t.is_tensor(b) else t.as_tensor(b, dtype=a.dtype, device=a.device)
        return t.where(cond, a, b)

    def astype_float(self, a, like=None):
        return a.to(like.dtype) if like is not None else a.double()

    def exp(self, a):
        return self.torch.exp(a)

    def log(self, a):
        return self.torch.log(a)

    def abs(self, a):
        return self.torch.abs(a)

    def sqrt(self, a):
        return self.torch.sqrt(a)

    def sign(self, a):
        return self.torch.sign(a)

    def maximum(self, a, b):
        return self.torch.maximum(a, b)


NUMPY = _Numpy()
_TORCH = None


def is_torch(a) -> bool:
    """True when ``a`` is a torch tensor (without importing torch if it is not loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.is_tensor(a)


def namespace(a):
    """The namespace for ``a``: torch's for a torch tensor, numpy's otherwise."""
    global _TORCH
    if is_torch(a):
        if _TORCH is None:
            _TORCH = _Torch()
        return _TORCH
    return NUMPY
