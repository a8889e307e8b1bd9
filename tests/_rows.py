"""Shared by the tests that check a fit reads its rows through ``data.rows()`` (#19; imported,
not a test module)."""

from privfair.data import dataset as dataset_module


def forbid_whole_x(monkeypatch):
    """From now to the test's end ``Dataset.X`` raises; the list of attempted reads (each the
    dataset's n) is returned."""
    reads = []

    def whole_x(self):
        reads.append(self.n)
        raise AssertionError("Dataset.X read: the rows must be read through data.rows()")

    monkeypatch.setattr(dataset_module.Dataset, "X", property(whole_x))
    return reads
