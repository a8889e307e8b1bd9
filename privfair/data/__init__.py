"""The rows: :class:`~privfair.data.dataset.Dataset` (numeric features, labels, sensitive
attributes; in memory, Parquet or Dask) and passes over their chunks with exact merges.

May import: the utilities and the privacy core (a pass's seeded randomness), nothing above
(tests/test_layers.py).
"""
