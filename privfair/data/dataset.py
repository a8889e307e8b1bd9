# Over 500 lines: Dataset's validation, schema and views are one class; the Dask engine is
#   privfair.data.dask_data.
"""Datasets: numeric features, labels and one or more sensitive attributes.

A :class:`Dataset` is the private input of every privfair problem.  It validates once, at
construction, everything the privacy proofs rely on (finite numeric features, labels in the
declared set, one sensitive value per row), and stores

* ``X``     -- float64 features, shape ``(n, d)``;
* ``y``     -- integer label codes ``0 .. L-1`` (``label_values[y]`` gives the original label);
* ``group`` -- integer group index per row into ``groups`` (the names of the groups).

The list of groups and the label set are the *public schema*: sensitivities are computed for
neighbours that move a row between these groups and labels, so they must not depend on which
values happen to occur in the private data.  Declare them with ``group_names`` / ``labels``
(a declared group may have no rows).  Left out, they are read from the data, which is fine for
non-private reference runs and exploration but is a leak under privacy: a private solve refuses
such a dataset (:meth:`Dataset.check_public_schema`).  The default label set ``[0, 1]``, taken
when every label is 0 or 1, counts as declared.  All arrays are read-only, so a dataset can be
shared (e.g. cached by :mod:`privfair.datasets`) without copies.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import DataError, InvalidInputError

__all__ = ["Dataset"]


def _is_pandas(obj, kind):
    mod = type(obj).__module__
    return mod.startswith("pandas") and type(obj).__name__ == kind


def _as_features(X, feature_names, copy=True):
    """Return (float64 array (n, d), names) or raise DataError naming the bad column.

    ``copy=False`` keeps a float64 array as it is (no second copy of X; #19)."""
    names = None
    if _is_pandas(X, "DataFrame"):
        names = [str(c) for c in X.columns]
        for c in X.columns:
            kind = X[c].dtype.kind
            if kind not in "biuf":  # bool, int, unsigned, float only: no silent category codes
                raise DataError(f"X[{c!r}]", str(X[c].dtype),
                                "features must be numeric; one-hot encode categorical columns "
                                "(e.g. pandas.get_dummies) before building the Dataset")
        try:
            X = X.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise DataError("X", "DataFrame", "features must convert to float64") from None
    elif _is_pandas(X, "Series"):
        raise DataError("X", "pandas.Series", "pass a 2-D array or a DataFrame, e.g. X.to_frame()")
    else:
        arr = np.asarray(X)
        if arr.dtype.kind not in "biuf":
            raise DataError("X", f"dtype {arr.dtype}",
                            "features must be numeric; one-hot encode categorical columns first")
        X = arr.astype(np.float64, copy=bool(copy))
    if X.ndim != 2:
        raise DataError("X", f"shape {X.shape}",
                        "pass a 2-D array of shape (n_rows, n_features); reshape(-1, 1) for one feature")
    bad = first_nonfinite(X)
    if bad is not None:
        (i, j), total = bad
        col = names[j] if names else j
        raise DataError(f"X[:, {col!r}]", float(X[i, j]),
                        f"{total} NaN or infinite feature values (first at row {i}); "
                        "impute or drop them before building the Dataset")
    if feature_names is not None:
        names = [str(c) for c in feature_names]
        if len(names) != X.shape[1]:
            raise DataError("feature_names", f"{len(names)} names",
                            f"give exactly one name per column of X ({X.shape[1]})")
    if names is None:
        names = [f"x{j}" for j in range(X.shape[1])]
    return X, names


def first_nonfinite(X):
    """((row, column) of the first NaN/inf, how many) or None — checked chunk by chunk, so no
    n×d boolean temporary is built."""
    from .passes import chunk_rows_for

    k = chunk_rows_for(X.shape[1]) if X.ndim == 2 else max(1, X.shape[0])
    first, total = None, 0
    for s in range(0, X.shape[0], k):
        bad = ~np.isfinite(X[s:s + k])
        if bad.any():
            if first is None:
                i, j = np.argwhere(bad)[0]
                first = (s + int(i), int(j))
            total += int(bad.sum())
    return None if first is None else (first, total)


def _plain(v):
    """A numpy scalar as the Python value it holds (``np.int64(1)`` → ``1``); else ``v``."""
    return v.item() if isinstance(v, np.generic) else v


def _is_number(v) -> bool:
    return isinstance(v, numbers.Real)


def _as_labels(y, n, labels, pos_label=None):
    """Return (codes int64 (n,), label_values list, declared).

    ``declared`` is False when the label set was read from ``y`` (anything but the default
    ``[0, 1]`` — ``[False, True]`` for a boolean y —, which is the public set of a binary
    problem whatever the rows hold).  For two labels, ``label_values[1]`` is the positive class:
    ``pos_label`` when given, else the second declared label, else the larger of two numbers;
    two labels read from y that are not numbers (``'approved'``/``'denied'``) are refused
    without ``pos_label``: their sorted order says nothing about which one is positive."""
    if _is_pandas(y, "Series") or _is_pandas(y, "DataFrame"):
        y = y.to_numpy()
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and 1 in y.shape else y
    if y.ndim != 1 or y.shape[0] != n:
        raise DataError("y", f"shape {y.shape}", f"pass one label per row of X ({n} labels)")
    uniq, inverse = _factorize(y)
    declared = labels is not None
    if labels is None:
        if any(isinstance(v, float) and not np.isfinite(v) for v in uniq):
            raise DataError("y", "NaN or infinite label", "drop rows without a label")
        try:
            uniq_sorted = sorted(uniq)
        except TypeError:
            raise DataError("y", "mixed label types",
                            "labels must be mutually comparable, or declare labels=[...]") from None
        # A binary problem whose sample shows one class only is still binary.
        declared = set(uniq_sorted) <= {0, 1}
        if y.dtype == bool:
            labels = [False, True]
        elif declared:
            labels = [0, 1]
        elif pos_label is not None and len(uniq_sorted) == 1 and uniq_sorted[0] != pos_label:
            labels = [uniq_sorted[0], pos_label]         # one class seen, the other declared
        else:
            labels = uniq_sorted
            if (pos_label is None and len(labels) == 2
                    and not all(_is_number(v) for v in labels)):
                raise DataError(
                    "pos_label", None,
                    f"the two labels read from y, {[_plain(v) for v in labels]}, are not "
                    "numbers, so their sorted order does not say which one is the positive "
                    "class (the one fpr/tpr/selection count): pass pos_label=<the positive "
                    "label>, or declare labels=[negative, positive]")
    labels = [_plain(v) for v in labels]
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise DataError("labels", labels, "declare at least two distinct labels, e.g. labels=[0, 1]")
    if pos_label is not None:
        if len(labels) != 2:
            raise DataError("pos_label", pos_label, f"a positive class applies to binary labels; "
                            f"these are {len(labels)}: {labels} (leave pos_label out)")
        if pos_label not in labels:
            raise DataError("pos_label", pos_label, f"is not one of the labels {labels}; pass "
                            "one of them (or declare labels=[negative, positive])")
        labels = [labels[1 - labels.index(pos_label)], labels[labels.index(pos_label)]]
    lookup = {v: k for k, v in enumerate(labels)}
    missing = [v for v in uniq if v not in lookup]
    if missing:
        row = int(np.flatnonzero(inverse == uniq.index(missing[0]))[0])
        raise DataError("y", missing[0], f"row {row} has a label outside the declared set "
                                         f"{labels}; fix the label or declare labels=[...] "
                                         "including it")
    codes = np.asarray([lookup[v] for v in uniq], dtype=np.int64)[inverse]
    return codes, labels, declared


def _as_sensitive(sensitive, n, sensitive_names):
    """Return (raw values: (n,) or (n, k) object array, list of k attribute names)."""
    names = None
    if _is_pandas(sensitive, "DataFrame"):
        names = [str(c) for c in sensitive.columns]
        raw = sensitive.to_numpy(dtype=object)
    elif _is_pandas(sensitive, "Series"):
        names = [str(sensitive.name) if sensitive.name is not None else "sensitive"]
        raw = sensitive.to_numpy(dtype=object)
    elif (isinstance(sensitive, (list, tuple)) and len(sensitive) > 0
          and all(hasattr(a, "__len__") and not isinstance(a, str) for a in sensitive)
          and all(len(a) == n for a in sensitive)):
        # A list of k attribute columns, each of length n.
        cols = []
        for a in sensitive:
            cols.append(a.to_numpy(dtype=object) if _is_pandas(a, "Series")
                        else np.asarray(a, dtype=object))
        if any(c.ndim != 1 for c in cols):
            raise DataError("sensitive", "nested columns", "pass 1-D columns, one per attribute")
        names = [str(getattr(a, "name", None) or f"a{j}") for j, a in enumerate(sensitive)]
        raw = np.stack(cols, axis=1) if len(cols) > 1 else cols[0]
    else:
        try:
            raw = np.asarray(sensitive)
        except ValueError:  # ragged nesting
            raise DataError("sensitive", type(sensitive).__name__,
                            "pass a 1-D array, an (n, k) array, a DataFrame or a list of "
                            "k columns of length n") from None
    if raw.ndim == 2 and raw.shape[1] == 1:
        raw = raw[:, 0]
    if raw.ndim not in (1, 2) or raw.shape[0] != n:
        raise DataError("sensitive", f"shape {np.shape(raw)}",
                        f"pass one sensitive value per row of X ({n} rows)")
    k = 1 if raw.ndim == 1 else raw.shape[1]
    if sensitive_names is not None:
        names = [str(s) for s in sensitive_names]
    if names is None:
        names = ["sensitive"] if k == 1 else [f"a{j}" for j in range(k)]
    if len(names) != k:
        raise DataError("sensitive_names", names, f"give one name per sensitive attribute ({k})")
    import pandas as pd

    if pd.isna(np.asarray(raw, dtype=object)).any():
        raise DataError("sensitive", "missing value", "every row needs a sensitive value; drop "
                                                      "or fill missing values (e.g. 'Unknown')")
    return raw, names


def _factorize(values):
    """(list of distinct values, int64 code per entry), in a single hashing pass."""
    import pandas as pd  # core dependency; its hash-based factorize is O(n) on object arrays

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    return list(uniques), codes.astype(np.int64)


def _group_keys(raw):
    """(distinct group names, code per row): str(value), or 'v1|v2|...' for several attributes."""
    if raw.ndim == 1:
        uniq, codes = _factorize(raw)
        return [str(v) for v in uniq], codes
    combined = np.zeros(raw.shape[0], dtype=np.int64)
    parts = []
    for j in range(raw.shape[1]):
        uniq, codes = _factorize(raw[:, j])
        parts.append(uniq)
        combined = combined * len(uniq) + codes
    first, codes = np.unique(combined, return_index=True, return_inverse=True)[1:]
    names = ["|".join(str(v) for v in raw[i].tolist()) for i in first]
    return names, codes.astype(np.int64).ravel()


def _raw_value(value):
    """The user's value of a group from one row's raw sensitive value(s): a plain scalar, or a
    tuple of them for several attributes."""
    if isinstance(value, np.ndarray):
        return tuple(_plain(v) for v in value.tolist())
    return _plain(value)


def _declared_group(g):
    """(name, value) of one declared group: ``str(g)`` and ``g`` itself; a tuple or list of
    several attributes' values is named ``"v1|v2"`` and kept as a tuple."""
    if isinstance(g, (tuple, list)):
        value = tuple(_plain(v) for v in g)
        return "|".join(str(v) for v in value), value
    g = _plain(g)
    return str(g), g


def _equal_value(a, b) -> bool:
    try:
        eq = a == b
    except Exception:    # noqa: BLE001 - incomparable values are different values
        return False
    return isinstance(eq, (bool, np.bool_)) and bool(eq)


def _raw_of_name(name, raw):
    """A stand-in raw sensitive value for a declared group with no rows (used by
    :meth:`Dataset.with_row` only): the name (per attribute, split at '|') converted to the
    type of the column's values where that round-trips, else the string."""
    parts = [name] if raw.ndim == 1 else name.split("|")
    if raw.ndim == 2 and len(parts) != raw.shape[1]:
        parts = [name] * raw.shape[1]
    out = []
    for j, part in enumerate(parts):
        sample = raw[0] if raw.ndim == 1 else raw[0, j]
        value = part
        if isinstance(sample, (numbers.Number, np.generic)) and not isinstance(sample, str):
            try:
                cand = type(sample)(part)
                value = cand if str(cand) == part else part
            except (TypeError, ValueError):
                pass
        out.append(value)
    return out[0] if raw.ndim == 1 else np.asarray(out, dtype=object)


def lineages_overlap(a, b) -> bool:
    """Whether two :attr:`Dataset.lineage` values hold a common row (``None``: no lineage)."""
    if a is None or b is None or a[0] is not b[0]:
        return False
    if a[1] is None or b[1] is None:
        return True
    return bool(np.isin(a[1], b[1], assume_unique=True).any())


class Dataset:
    """A dataset of numeric features, labels and sensitive attributes.

    Parameters
    ----------
    X : array-like of shape (n, d) or pandas.DataFrame
        Numeric features.  DataFrame columns become ``feature_names``.  NaN, infinite or
        non-numeric values raise :class:`~privfair.errors.DataError`.
    y : array-like of shape (n,)
        Labels, binary or multi-class.  Stored as integer codes ``0 .. L-1`` in the order of
        ``labels``; for binary problems code 1 is the positive class (``label_values[1]``, the
        class fp/tp/fpr/tpr/selection count).  Results predict the label values themselves
        (``Result.predict``), in this order.
    sensitive : array-like of shape (n,), (n, k), pandas.Series / DataFrame, or list of k columns
        One or several sensitive attributes of any hashable values.  Several attributes form
        intersectional groups named ``"Female|White"``.
    labels : sequence, optional
        The declared (public) label set; binary: ``[negative, positive]``.  Default: ``[0, 1]``
        when every label is 0 or 1 (``[False, True]`` for a boolean y; a public default), else
        the sorted unique labels *read from y* — not a public schema, so a private solve under
        ``protect="row"`` (which protects y) refuses it: declare it.  Two labels read from y
        that are not numbers (``"approved"``/``"denied"``) need ``pos_label``: their sorted
        order does not say which is positive, so the dataset refuses to guess
        (:class:`~privfair.errors.DataError` naming ``pos_label``); two numbers make the larger
        one positive.
    pos_label : optional
        The positive class of binary labels: it gets code 1 and ``labels`` are reordered to
        ``[other, pos_label]``.  Must be one of the labels.
    feature_names : sequence of str, optional
    group_names : sequence, optional
        The declared (public) list of groups, in the order ℓ will use: the values of the
        sensitive attribute (any hashable values; ``[0, 1]`` stays ``[0, 1]`` in
        ``group_values``), or a tuple of values per group for several attributes.  Their names
        ``str(value)`` (``"v1|v2"`` for a tuple) name ℓ's coordinates, and ``r.fpr[g]`` takes
        either.  Every row's group must be in it; a declared group may have no rows (its
        statistics are those of an empty group, and the sensitivities are the same as with
        rows in it).  Default: the groups *read from the sensitive column* (numbers in numeric
        order, else sorted by name) — not a public schema, so every private solve refuses it:
        declare the groups from public metadata.
    sensitive_names : sequence of str, optional
        Names of the sensitive attributes (default: DataFrame/Series names, else ``a0, a1``).
    copy : bool, default True
        Copy X.  ``copy=False`` keeps a float64 array as given (made read-only), so a large X
        is held once, not twice; do not modify the array afterwards.

    Attributes
    ----------
    X, y, group : numpy.ndarray (read-only)
    sensitive : numpy.ndarray -- the raw values as given, 1-D for one attribute.
    groups : list of str -- the groups' names;  group_values : list -- the user's values.
    label_values : list -- the labels, in code order;  pos_label -- ``label_values[1]`` (binary).
    groups_declared, labels_declared : bool -- whether ``groups`` / ``label_values`` are a
        public declaration (see :meth:`check_public_schema`) rather than read from the data.
    n, n_features, n_labels, n_groups : int
    feature_names, sensitive_names : list of str

    Examples
    --------
    >>> import numpy as np
    >>> from privfair.data.dataset import Dataset
    >>> d = Dataset(np.eye(4), [0, 1, 1, 0], ["F", "M", "F", "M"])
    >>> d.n, d.n_features, d.groups, d.group.tolist()
    (4, 4, ['F', 'M'], [0, 1, 0, 1])
    >>> Dataset(np.eye(2), [0, 1], [["F", "M"], ["W", "B"]]).groups
    ['F|W', 'M|B']
    >>> e = Dataset(np.eye(2), [0, 1], ["F", "F"], group_names=["F", "M", "X"])  # empty groups
    >>> e.counts().sum(axis=1).tolist(), e.groups_declared
    ([2, 0, 0], True)
    """

    def __init__(self, X, y, sensitive, *, labels=None, feature_names=None, group_names=None,
                 sensitive_names=None, pos_label=None, copy=True):
        X, fnames = _as_features(X, feature_names, copy)
        n = X.shape[0]
        if n == 0:
            raise DataError("X", "0 rows", "a dataset needs at least one row")
        codes, label_values, labels_declared = _as_labels(y, n, labels, pos_label)
        raw, snames = _as_sensitive(sensitive, n, sensitive_names)
        keys, key_codes = _group_keys(raw)
        if group_names is None:
            # the user's value of every group (first row of it); numbers sort as numbers
            firsts = np.unique(key_codes, return_index=True)[1]
            value_of = {keys[key_codes[i]]: _raw_value(raw[i]) for i in firsts}
            groups = sorted(set(keys))
            if all(_is_number(v) and not isinstance(v, tuple) for v in value_of.values()):
                groups = sorted(groups, key=lambda g: value_of[g])
            values = [value_of[g] for g in groups]
        else:
            if isinstance(group_names, str) or not hasattr(group_names, "__iter__"):
                raise DataError("group_names", group_names,
                                "pass a list of group names, e.g. group_names=['F', 'M']")
            declared = [_declared_group(g) for g in group_names]
            groups = [name for name, _ in declared]
            values = [value for _, value in declared]
            if not groups:
                raise DataError("group_names", groups, "declare at least one group")
            if len(set(groups)) != len(groups):
                raise DataError("group_names", groups, "group names must be distinct")
        index = {g: k for k, g in enumerate(groups)}
        unknown = [key for key in keys if key not in index]
        if unknown:
            row = int(np.flatnonzero(key_codes == keys.index(unknown[0]))[0])
            raise DataError("sensitive", unknown[0], f"row {row} is in a group not among "
                                                     f"group_names {groups}; add it to group_names")
        group = np.asarray([index[key] for key in keys], dtype=np.int64)[key_codes]
        # A declared group may have no rows: nothing is refused on the private counts.
        self._set(X, codes, raw, group, groups, label_values, fnames, snames)
        self.groups_declared = group_names is not None
        self.labels_declared = bool(labels_declared)
        self._group_values = values
        first = np.full(len(groups), -1, dtype=np.int64)
        first[group[::-1]] = np.arange(n - 1, -1, -1)    # first row of every group
        self._group_raw = {k: raw[first[k]] if first[k] >= 0 else _raw_of_name(groups[k], raw)
                           for k in range(len(groups))}

    # -- construction helpers -----------------------------------------------------------
    def _set(self, X, y, raw, group, groups, label_values, fnames, snames, index=None):
        for a in (X, y, raw, group):
            a.setflags(write=False)
        # with ``index``, X is the parent's features and this dataset's rows are X[index]:
        # a view by index (Dataset.take(..., copy=False)), gathered chunk by chunk by rows()
        if index is None:
            self._X, self._base_X, self._index = X, None, None
        else:
            self._X, self._base_X, self._index = None, X, index
        self.y, self.sensitive, self.group = y, raw, group
        self.groups, self.label_values = list(groups), list(label_values)
        self.feature_names, self.sensitive_names = list(fnames), list(snames)

    def _same_schema(self, new):
        new._group_raw = self._group_raw
        new._group_values = getattr(self, "_group_values", None)
        new.groups_declared, new.labels_declared = self.groups_declared, self.labels_declared
        return new

    # -- the public schema ----------------------------------------------------------------
    def check_public_schema(self, privacy) -> None:
        """Refuse a private use of a schema that was read from the private data.

        The groups (and, under ``protect="row"``, the label set) are part of what a private
        release may depend on only if they are public.  Read from the data, they are not: a
        neighbour that removes the only row of a rare group changes ℓ's layout, and whether a
        solve succeeds.  So, when ``privacy`` is private (finite ε):

        * groups read from the sensitive column (no ``group_names=``) are refused under both
          relations;
        * a label set read from ``y`` (no ``labels=`` and labels other than 0/1) is refused
          under ``protect="row"``, which protects y (``protect="sensitive"`` leaves y public).

        Non-private runs (ε = ∞) may use an inferred schema.  Called by
        :meth:`privfair.Problem.solve` and :meth:`privfair.Problem.plan` before anything is
        planned or drawn.

        Parameters
        ----------
        privacy : privfair.DP

        Raises
        ------
        InvalidInputError
            With ``field="group_names"`` or ``field="labels"`` and the fix (declare them).

        Examples
        --------
        >>> import numpy as np, privfair as pf
        >>> d = pf.Dataset(np.zeros((2, 1)), [0, 1], ["a", "b"])
        >>> d.check_public_schema(pf.DP(float("inf")))           # non-private: allowed
        >>> d.check_public_schema(pf.DP(1.0))
        Traceback (most recent call last):
        ...
        privfair.errors.InvalidInputError: group_names=['a', 'b'] is invalid: ...
        >>> pf.Dataset(np.zeros((2, 1)), [0, 1], ["a", "b"],
        ...            group_names=["a", "b"]).check_public_schema(pf.DP(1.0))
        """
        if not getattr(privacy, "is_private", False):
            return
        if not getattr(self, "groups_declared", False):     # (a dataset pickled before the flag)
            raise InvalidInputError(
                "group_names", self.groups,
                "the groups were read from the private sensitive column, so which groups exist "
                "(and whether a solve succeeds) depends on the private data; declare the public "
                "list of groups: pf.Dataset(..., group_names=[...]) (a declared group may have "
                "no rows), or run non-privately with pf.DP(float('inf'))")
        labels_declared = getattr(self, "labels_declared", False)
        if getattr(privacy, "protect", None) == "row" and not labels_declared:
            raise InvalidInputError(
                "labels", self.label_values,
                "the label set was read from y, which protect='row' protects; declare the public "
                "label set: pf.Dataset(..., labels=[...]), or use protect='sensitive' (y public) "
                "or pf.DP(float('inf'))")

    @property
    def is_materialized(self) -> bool:
        """True when the features are held as one (n, d) array; False for a dataset taken by index
        (``take(rows, copy=False)``) whose rows have not been gathered yet (reading :attr:`X`
        gathers them; :meth:`rows` never does)."""
        return self._X is not None

    @property
    def view_base(self) -> np.ndarray | None:
        """The array a dataset taken by index gathers its rows from (its parent's X, shared, not
        copied); None once materialized."""
        return self._base_X if self._X is None else None

    @property
    def X(self) -> np.ndarray:
        """The (n, d) float features (read-only).  For a dataset taken by index
        (``take(rows, copy=False)``) the first access gathers its rows into a new array (kept);
        code that reads the rows through :meth:`rows` never does."""
        if self._X is None:
            X = self._base_X[self._index]
            X.setflags(write=False)
            self._X = X
        return self._X

    def __getstate__(self):
        state = dict(self.__dict__)
        if state.get("_X") is None and state.get("_base_X") is not None:
            # pickle this dataset's rows, not its parent's
            state["_X"], state["_base_X"], state["_index"] = self.X, None, None
        return state

    def __setstate__(self, state):
        if "X" in state:                      # a dataset pickled before X became a property
            state["_X"] = state.pop("X")
        state.setdefault("_base_X", None)
        state.setdefault("_index", None)
        self.__dict__.update(state)

    def take(self, rows, copy: bool = True) -> "Dataset":
        """The dataset restricted to ``rows`` (indices or boolean mask), same schema.

        The groups and labels of the result are those of ``self`` (the public schema), even
        when some of them have no rows left.

        With ``copy=False`` the features are not copied: the result keeps ``self``'s X and the
        row indices, its :meth:`rows` gathers one chunk at a time (the passes of
        :mod:`privfair.data.passes` read the same rows in the same chunks, so their sums are the
        same numbers), and its ``X`` is gathered on first access (#19: the training part of
        the held-out split, 0.8·X, is not copied by a backend that reads only passes).  y,
        the group codes and the sensitive column (n-vectors) are copied either way.

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> Dataset(np.eye(3), [0, 1, 0], ["a", "b", "a"]).take([0, 1]).n
        2
        """
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        rows = rows.astype(np.int64)
        if rows.size == 0:
            raise DataError("rows", "empty selection", "select at least one row")
        new = object.__new__(Dataset)
        if copy:
            X, index = self.X[rows], None
        elif self._X is None:                 # a view of a view: compose the indices
            X, index = self._base_X, self._index[rows]
        else:
            X, index = self._X, rows
        if index is not None:
            index.setflags(write=False)
        new._set(X, self.y[rows], self.sensitive[rows], self.group[rows],
                 self.groups, self.label_values, self.feature_names, self.sensitive_names,
                 index=index)
        origin, own = self.lineage
        new._lineage = (origin, rows if own is None else own[rows])
        return self._same_schema(new)

    @property
    def lineage(self) -> tuple:
        """``(origin, rows)``: the dataset this one was cut from by :meth:`take` (and so
        :meth:`split`, :meth:`subsample`, the held-out partition) — an opaque token — and its
        rows' indices there (``None``: all of them, this dataset is the origin).  Public: the
        cuts' indices come from public randomness.  :meth:`shares_rows_with` reads it."""
        lin = getattr(self, "_lineage", None)
        if lin is None:                   # an origin: built from arrays (or by with_row)
            lin = self._lineage = (object(), None)
        return lin

    def shares_rows_with(self, other) -> bool:
        """Whether ``self`` and ``other`` hold a common row of one dataset they were both cut
        from (:attr:`lineage`); datasets built separately share none, whatever their values.

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((8, 1)), [0, 1] * 4, ["a", "b"] * 4)
        >>> train, test = d.split(0.25, rng=0)
        >>> d.shares_rows_with(train), train.shares_rows_with(test)
        (True, False)
        """
        return lineages_overlap(self.lineage, getattr(other, "lineage", None))

    def with_row(self, i: int, *, x=None, group=None, label=None) -> "Dataset":
        """A neighbouring dataset: row ``i`` with new features, group and/or label.

        Changing only ``group`` gives a neighbour under the "sensitive" relation; changing any
        of the three, one under the "row" relation.  The schema is kept, so groups may become
        empty, as a declared group may be in any dataset.  Used by audits and by the
        brute-force sensitivity tests.

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((2, 1)), [0, 1], ["a", "b"])
        >>> d2 = d.with_row(1, group="a")
        >>> d2.group.tolist(), d2.groups, d2.sensitive.tolist()
        ([0, 0], ['a', 'b'], ['a', 'a'])
        """
        if not isinstance(i, numbers.Integral) or not 0 <= i < self.n:
            raise InvalidInputError("i", i, f"pass a row index in [0, {self.n})")
        X, y, g = self.X.copy(), self.y.copy(), self.group.copy()
        raw = self.sensitive.copy()   # a group's raw value came from this array (or its name)
        if x is not None:
            row = _as_features(np.reshape(x, (1, -1)), None)[0][0]   # checks finite, numeric
            if row.shape != (self.n_features,):
                raise DataError("x", f"length {row.shape[0]}", f"pass {self.n_features} features")
            X[i] = row
        if label is not None:
            if label not in self.label_values:
                raise DataError("label", label, f"choose one of {self.label_values}")
            y[i] = self.label_values.index(label)
        if group is not None:
            k = self.find_group(group)
            if k is None:
                raise DataError("group", group, f"choose one of {self.group_choices()}")
            g[i] = k
            value = self._group_raw[g[i]]
            try:
                raw[i] = value
                ok = np.asarray(raw[i]).tolist() == np.asarray(value).tolist()
            except (TypeError, ValueError):
                ok = False
            if not ok:    # an empty group's stand-in value does not fit the column's dtype
                raw = raw.astype(object)
                raw[i] = value
        new = object.__new__(Dataset)
        new._set(X, y, raw, g, self.groups, self.label_values, self.feature_names,
                 self.sensitive_names)
        return self._same_schema(new)

    def merge_groups(self, merges: dict) -> "Dataset":
        """The same rows with coarser groups: ``merges`` maps a new group's name to the groups
        it unites (names or values); the other groups keep their names and values.

        What the held-out check's warning advises where groups are too small to fit or check a
        gap (COMPAS's smallest races, a 1 % group).  The mapping is part of the public schema,
        and a row's new group is a function of its own group, so neighbours stay neighbours
        (one row's group changing becomes a change between merged groups, or none).  The
        groups are declared iff ``self``'s were.  The features are shared, not copied, and the
        result holds the same rows (:attr:`lineage`), so a score fitted on ``self`` is still
        recognized as fitted on it.  The new groups are ordered by their first member's
        place in ``groups``.  The sensitive column holds each row's group value (with several
        attributes, one column of tuples and the merged groups' names).

        Raises
        ------
        InvalidInputError
            ``merges`` is not a non-empty dict of lists, a group is named in two merges, or a
            new name is an unmerged group's.
        DataError
            A member is not a group of this dataset (the message lists the groups).

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((5, 1)), [0, 1, 0, 1, 0], ["a", "b", "c", "d", "a"],
        ...             group_names=["a", "b", "c", "d"])
        >>> m = d.merge_groups({"rest": ["c", "d"]})
        >>> m.groups, m.group.tolist(), m.sensitive.tolist()
        (['a', 'b', 'rest'], [0, 1, 2, 2, 0], ['a', 'b', 'rest', 'rest', 'a'])
        """
        if not isinstance(merges, dict) or not merges:
            raise InvalidInputError("merges", merges, "pass a dict {new group name: [groups "
                                    "it unites]}, e.g. {'Other': ['Asian', 'Native American']}")
        into = {}                              # old group index -> new name
        for name, members in merges.items():
            if isinstance(members, str) or not hasattr(members, "__iter__"):
                raise InvalidInputError(f"merges[{name!r}]", members,
                                        "pass a list of the groups it unites")
            members = list(members)
            if not members:
                raise InvalidInputError(f"merges[{name!r}]", members,
                                        "name at least one group it unites")
            for member in members:
                k = self.find_group(member)
                if k is None:
                    raise DataError(f"merges[{name!r}]", member,
                                    f"not a group; choose among {self.group_choices()}")
                if k in into:
                    raise InvalidInputError(f"merges[{name!r}]", member,
                                            f"{member!r} is already merged into {into[k]!r}; "
                                            "a group joins one merge")
                into[k] = str(name)
        kept = [g for k, g in enumerate(self.groups) if k not in into]
        clash = [str(nm) for nm in merges if str(nm) in kept]
        if clash:
            raise InvalidInputError("merges", clash[0], "a new group's name is an unmerged "
                                    "group's; choose another name or merge that group too")
        names, values = [], []
        for k, g in enumerate(self.groups):
            nm = into.get(k, g)
            if nm not in names:
                names.append(nm)
                values.append(nm if k in into else self.group_values[k])
        code = np.asarray([names.index(into.get(k, g)) for k, g in enumerate(self.groups)],
                          dtype=np.int64)
        group = code[self.group]
        table = np.empty(len(names), dtype=object)      # tuples stay tuples (one cell each)
        for j, v in enumerate(values):
            table[j] = v
        raw = table[group]
        if all(isinstance(v, str) for v in values):
            raw = raw.astype(str)
        new = object.__new__(Dataset)
        X, index = (self._X, None) if self._X is not None else (self._base_X, self._index)
        new._set(X, self.y.copy(), raw, group, names, self.label_values, self.feature_names,
                 self.sensitive_names, index=index)
        new._lineage = self.lineage                    # the same rows
        new._group_raw = {j: table[j] for j in range(len(names))}
        new._group_values = values
        new.groups_declared, new.labels_declared = self.groups_declared, self.labels_declared
        return new

    def subsample(self, m: int, rng=None) -> "Dataset":
        """A uniform random subsample of ``m`` distinct rows (same schema).

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((10, 1)), [0, 1] * 5, ["a", "b"] * 5)
        >>> d.subsample(4, rng=0).n
        4
        """
        if not isinstance(m, numbers.Integral) or not 1 <= m <= self.n:
            raise InvalidInputError("m", m, f"pass an integer between 1 and n={self.n}")
        rng = np.random.default_rng(rng)
        return self.take(np.sort(rng.choice(self.n, size=int(m), replace=False)))

    def split(self, test_size: float = 0.25, rng=None) -> "tuple[Dataset, Dataset]":
        """A random (train, test) split; ``test_size`` is a fraction in (0, 1).

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((8, 1)), [0, 1] * 4, ["a", "b"] * 4)
        >>> [part.n for part in d.split(0.25, rng=0)]
        [6, 2]
        """
        if not (isinstance(test_size, numbers.Real) and 0 < test_size < 1):
            raise InvalidInputError("test_size", test_size, "pass a fraction in (0, 1), e.g. 0.25")
        n_test = int(round(test_size * self.n))
        if not 1 <= n_test <= self.n - 1:
            raise InvalidInputError("test_size", test_size,
                                    f"leaves an empty part with n={self.n}; choose another size")
        perm = np.random.default_rng(rng).permutation(self.n)
        return self.take(np.sort(perm[n_test:])), self.take(np.sort(perm[:n_test]))

    @staticmethod
    def from_parquet(path, *, label, sensitive, groups, labels=(0, 1), features=None,
                     chunk_rows=None, scheduler=None, **read_kw):
        """A dataset over Parquet files, read and reduced by Dask (``privfair[dask]``).

        Files, directories and globs — local, or at any fsspec URL (``s3://``, ``gs://``,
        … with ``storage_options=``) — are read by privfair's own reader (pyarrow, one
        partition per file, float32 columns kept float32 until a pass casts a chunk); other
        ``read_kw`` go through ``dask.dataframe.read_parquet`` and pandas, which is slower.
        Files read fastest when written with float32 features, every column declared
        non-nullable (``pa.field(..., nullable=False)``: no definition levels to decode),
        ``use_dictionary=False`` and ``compression="none"`` (or lz4), 10⁵–10⁶ rows a file
        (docs/scale.md, *Writing Parquet files that read fast*).

        The rows stay on disk / on the workers: every pass over them (counts, the public
        score's XᵀWX and Xᵀy, the proxy statistic) runs per partition on the Dask workers and
        only the partial sums come back (docs/scale.md).  The schema is declared, never read
        from the rows.

        Parameters
        ----------
        path : str or list -- files or a directory (local: privfair's reader), or anything
            ``dask.dataframe.read_parquet`` takes.
        label : str -- the label column;  sensitive : str or list of str -- the sensitive
            column(s) (several form intersectional groups ``"F|W"``).
        groups : sequence -- the declared (public) groups: values of the sensitive column
            (tuples for several columns).
        labels : sequence, default (0, 1) -- the declared labels, ``[negative, positive]``.
        features : list of str, optional -- feature columns (default: every other column).
        chunk_rows : int, optional -- rows per chunk inside a partition.
        scheduler : optional -- a ``distributed.Client`` or scheduler name; default: the
            active client, else Dask's local scheduler.
        **read_kw -- passed to ``dask.dataframe.read_parquet`` (e.g. ``storage_options``).

        Returns
        -------
        privfair.data.dask_data.DaskDataset

        Raises
        ------
        DataError
            Non-numeric feature columns, non-finite features, labels or groups outside the
            declared sets (one validation pass, which also counts the rows).
        privfair.data.dask_data.DaskMissingError
            Without the optional extra (``pip install 'privfair[dask]'``).
        """
        from .dask_data import from_parquet

        return from_parquet(path, label=label, sensitive=sensitive, groups=groups,
                            labels=labels, features=features, chunk_rows=chunk_rows,
                            scheduler=scheduler, **read_kw)

    @staticmethod
    def from_dask(ddf, *, label, sensitive, groups, labels=(0, 1), features=None,
                  chunk_rows=None, scheduler=None):
        """A dataset over a Dask DataFrame; the parameters as in :meth:`from_parquet`."""
        from .dask_data import from_dask

        return from_dask(ddf, label=label, sensitive=sensitive, groups=groups, labels=labels,
                         features=features, chunk_rows=chunk_rows, scheduler=scheduler)

    def rows(self, chunk_rows=None):
        """The rows as a chunked source for :mod:`privfair.data.passes` (views of X, y and group:
        nothing is copied).  Every sum privfair reads from the rows is a pass over it."""
        from .passes import ArrayRows, IndexedRows

        if self._X is None:           # taken by index: chunks gathered from the parent's X
            return IndexedRows(self._base_X, self._index, self.y, self.group,
                               chunk_rows=chunk_rows)
        return ArrayRows(self._X, self.y, self.group, chunk_rows=chunk_rows)

    # -- shape ----------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.y.shape[0])

    def __len__(self) -> int:
        return self.n

    @property
    def n_features(self) -> int:
        """Number of feature columns d."""
        return int((self._base_X if self._X is None else self._X).shape[1])

    @property
    def n_labels(self) -> int:
        """Size L of the declared label set."""
        return len(self.label_values)

    @property
    def n_groups(self) -> int:
        """Number of declared groups."""
        return len(self.groups)

    @property
    def group_values(self) -> list:
        """The user's value of every group, in the order of ``groups``: the declared
        ``group_names`` as given (``0`` stays ``0``; a tuple of several attributes' values stays
        a tuple), or, read from the data, the sensitive value(s) of the group's rows.
        ``groups`` holds their names (``str(value)``, ``"v1|v2"``), which name ℓ's coordinates.

        Examples
        --------
        >>> import numpy as np
        >>> from privfair.data.dataset import Dataset
        >>> d = Dataset(np.zeros((3, 1)), [0, 1, 0], [0, 1, 1], group_names=[0, 1])
        >>> d.groups, d.group_values, d.group_index(1), d.group_index("1")
        (['0', '1'], [0, 1], 1, 1)
        """
        values = getattr(self, "_group_values", None)     # (a dataset pickled before it)
        return list(values) if values is not None else list(self.groups)

    def group_index(self, group) -> int:
        """The position of ``group`` in ``groups``, given its name or its value
        (:attr:`group_values`), e.g. ``0`` or ``"0"`` for a group declared as ``0``.

        Raises
        ------
        InvalidInputError
            With ``field="group"`` and the groups to choose from.
        """
        k = self.find_group(group)
        if k is None:
            raise InvalidInputError("group", group, f"choose one of {self.group_choices()}")
        return k

    def find_group(self, group):
        """The index of ``group`` (a name or a value, a list read as a tuple), or None."""
        if isinstance(group, str) and group in self.groups:
            return self.groups.index(group)
        if isinstance(group, list):
            group = tuple(group)
        for k, value in enumerate(self.group_values):
            if _equal_value(value, group):
                return k
        return None

    def group_choices(self) -> str:
        """The groups as a user names them, for messages: the values, and the names too where
        they differ (``[0, 1]``; ``[('F', 'W'), ...] (names ['F|W', ...])``)."""
        values = self.group_values
        if all(str(v) == g for v, g in zip(values, self.groups)):
            return str(values)
        return f"{values} (names {self.groups})"

    @property
    def pos_label(self):
        """The positive class of binary labels (``label_values[1]``, code 1); None for more
        than two labels."""
        return self.label_values[1] if self.n_labels == 2 else None

    def counts(self) -> np.ndarray:
        """Rows per (group, label): an int array of shape (n_groups, n_labels).

        These counts are private; use them for non-private reference runs and tests only.
        """
        flat = self.group * self.n_labels + self.y
        return np.bincount(flat, minlength=self.n_groups * self.n_labels).reshape(
            self.n_groups, self.n_labels)

    def __repr__(self) -> str:
        return (f"Dataset(n={self.n}, n_features={self.n_features}, labels={self.label_values}, "
                f"groups={self.groups})")
