import math

import pytest

from pyapp.predict import brier_score, calibration_cells, cost_errors, wilson_interval


def test_wilson_hand_computed():
    # 8/10 at 95%: p = .8, z = 1.96: centre = (.8 + 1.92/10) / 1.384 = 0.71676...
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4901624, abs=1e-6)
    assert high == pytest.approx(0.9433178, abs=1e-6)


def test_wilson_degenerate_inputs():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(0, 5)
    assert low == 0.0 and high == pytest.approx(0.4344825, abs=1e-6)
    low, high = wilson_interval(5, 5)
    assert high == 1.0 and low == pytest.approx(0.5655175, abs=1e-6)
    for bad in [(-1, 3), (4, 3), (1, -1)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)


def test_brier_hand_computed_and_empty():
    assert brier_score([], []) is None
    assert brier_score([1.0, 0.0], [True, False]) == 0.0
    assert brier_score([0.25, 0.5], [True, False]) == pytest.approx((0.5625 + 0.25) / 2)
    with pytest.raises(ValueError):
        brier_score([0.5], [])
    with pytest.raises(ValueError):
        brier_score([1.5], [True])


def test_cost_errors_hand_computed_and_empty():
    empty = cost_errors([], [])
    assert empty.n == 0 and empty.mean_absolute_error_ms is None
    errors = cost_errors([10.0, 30.0], [20.0, 20.0])
    assert errors.mean_absolute_error_ms == 10.0
    assert errors.mean_signed_error_ms == 0.0
    assert errors.mean_relative_error == 0.5
    assert cost_errors([1.0], [0.0]).mean_relative_error is None


def test_calibration_cells():
    cells = calibration_cells([0.1, 0.15, 0.9, 1.0], [False, True, True, True], bins=5)
    assert [c.n for c in cells] == [2, 0, 0, 0, 2]
    assert cells[0].observed_rate == 0.5 and cells[0].mean_predicted == pytest.approx(0.125)
    # an empty bin has no interval (metrics/2); metrics/1 said [0, 1]
    assert cells[1].observed_rate is None and (cells[1].wilson_low, cells[1].wilson_high) == (
        None,
        None,
    )
    assert cells[4].observed_rate == 1.0
    assert all(c.n == 0 for c in calibration_cells([], []))
    assert math.isclose(cells[4].high, 1.0)
