"""ab_table's rows against figures worked by hand."""

import pytest

from ab_table import ab_cells


def test_rows_give_median_range_and_median_ratio():
    # Run ratios b/a: 2.0, 1.0, 2.0 -> median 2.0; b's own median 2.0 of (2, 2, 6).
    rows = ab_cells({"a": [1.0, 2.0, 3.0], "b": [2.0, 2.0, 6.0]}, scale=1e3)
    assert rows == [("a", "2000.0 (1000.0-3000.0)", "1.00x"),
                    ("b", "2000.0 (2000.0-6000.0)", "2.00x")]


def test_ratio_is_per_run_not_of_medians():
    # Both medians are 2, so a ratio of medians would say 1.00x; the runs' ratios are 4, 0.5, 0.5.
    rows = ab_cells({"a": [1.0, 2.0, 4.0], "b": [4.0, 1.0, 2.0]})
    assert rows[1] == ("b", "2.0 (1.0-4.0)", "0.50x")


def test_unequal_runs_are_refused_by_name():
    with pytest.raises(ValueError, match="'b' has 1 runs, the first build 2"):
        ab_cells({"a": [1.0, 2.0], "b": [1.0]})


def test_no_builds_refused():
    with pytest.raises(ValueError, match="no builds"):
        ab_cells({})
