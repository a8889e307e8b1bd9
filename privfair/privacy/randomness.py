"""Where privfair's randomness comes from.

Every sampler in :mod:`privfair.privacy` consumes *uniform random bits* and nothing else: all
distributions are built from them with exact integer comparisons (see :mod:`.exact`).  A
:class:`RandomSource` supplies those bits:

* ``rng=None`` (the default): :class:`SystemSource`, 64-bit words read from ``os.urandom`` — the
  operating system's cryptographically secure generator (``getrandom(2)`` on Linux).  This is
  what a real release should use.
* ``rng=<int>`` or ``rng=<numpy.random.Generator>``: :class:`GeneratorSource`, words drawn with
  ``Generator.integers`` — reproducible, for tests and experiments.  numpy's PCG64 is *not* a
  cryptographic generator; a certificate built from seeded releases says so.

``as_source(rng)`` does the conversion and never draws anything, so validation and budget checks
that happen before it are guaranteed to run before any randomness is consumed.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import InvalidInputError

__all__ = ["RandomSource", "SystemSource", "GeneratorSource", "as_source"]

_BATCH = 2048


def _bit_lengths(values: np.ndarray) -> np.ndarray:
    """Exact ``int.bit_length`` of every entry of a non-negative int64 array."""
    out = np.zeros(values.shape, dtype=np.int64)
    rest = values.astype(np.int64, copy=True)
    while True:
        live = rest > 0
        if not live.any():
            return out
        out += live
        rest >>= 1


class RandomSource:
    """Uniform random bits.  Subclasses implement :meth:`words` and :meth:`below`."""

    #: True when the bits come from a cryptographically secure generator.
    cryptographic = False
    #: True when the stream is reproducible from a seed.
    seeded = False

    def __init__(self):
        self._buffer: list[int] = []

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit words as a ``uint64`` array."""
        raise NotImplementedError

    def below(self, bound, size=None) -> np.ndarray:
        """Independent uniform integers in ``[0, bound)`` (``bound`` an int64 scalar or array)."""
        raise NotImplementedError

    def word(self) -> int:
        """One uniform 64-bit word as a Python int (buffered; used by the scalar samplers)."""
        buf = self._buffer
        if not buf:
            buf.extend(self.words(_BATCH).tolist())
        return buf.pop()

    def describe(self) -> str:
        """A sentence for certificates."""
        return f"{type(self).__name__} (user-supplied source)"


class SystemSource(RandomSource):
    """The operating system's CSPRNG (``os.urandom``)."""

    cryptographic = True
    seeded = False

    def words(self, n: int) -> np.ndarray:
        n = int(n)
        return np.frombuffer(os.urandom(8 * n), dtype="<u8").astype(np.uint64, copy=False)

    def below(self, bound, size=None) -> np.ndarray:
        # Rejection sampling on the top ceil(log2(bound)) bits of fresh words: exactly uniform.
        bound = np.asarray(bound, dtype=np.int64)
        if size is None:
            shape = bound.shape
        else:
            shape = np.broadcast_shapes(bound.shape, (int(size),) if np.ndim(size) == 0 else tuple(size))
        b = np.broadcast_to(bound, shape).ravel()
        if (b <= 0).any():
            raise ValueError("bound must be positive")
        nbits = _bit_lengths(b - 1)
        out = np.zeros(b.shape, dtype=np.int64)
        todo = np.nonzero(nbits > 0)[0]
        while todo.size:
            w = self.words(todo.size)
            cand = (w >> (64 - nbits[todo]).astype(np.uint64)).astype(np.int64)
            ok = cand < b[todo]
            out[todo[ok]] = cand[ok]
            todo = todo[~ok]
        return out.reshape(shape)

    def describe(self) -> str:
        return "os.urandom (operating-system CSPRNG)"


class GeneratorSource(RandomSource):
    """Bits from a ``numpy.random.Generator`` (reproducible, not cryptographic)."""

    cryptographic = False
    seeded = True

    def __init__(self, generator: np.random.Generator):
        super().__init__()
        self.generator = generator

    def words(self, n: int) -> np.ndarray:
        return self.generator.integers(0, 2**64, size=int(n), dtype=np.uint64)

    def below(self, bound, size=None) -> np.ndarray:
        # numpy's bounded integers are exactly uniform (masked rejection / Lemire).
        bound = np.asarray(bound, dtype=np.int64)
        if (bound <= 0).any():
            raise ValueError("bound must be positive")
        return np.asarray(self.generator.integers(0, bound, size=size), dtype=np.int64)

    def describe(self) -> str:
        return f"numpy {type(self.generator.bit_generator).__name__} (seeded; not cryptographic)"


def as_source(rng) -> RandomSource:
    """Turn ``rng`` (None, an int seed, a SeedSequence, a Generator or a RandomSource) into a
    :class:`RandomSource` without drawing anything."""
    if rng is None:
        return SystemSource()
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return GeneratorSource(rng)
    if isinstance(rng, (bool, np.bool_)):
        raise InvalidInputError("rng", rng, "pass None (OS entropy), an int seed or a numpy Generator")
    if isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (int, np.integer)) and rng < 0:
            raise InvalidInputError("rng", rng, "seeds must be non-negative integers")
        return GeneratorSource(np.random.default_rng(rng))
    raise InvalidInputError(
        "rng", rng, "pass None (OS entropy), an int seed or a numpy.random.Generator")
