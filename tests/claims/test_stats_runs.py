"""A baseline of several runs: Student's t quantiles and the run-to-run prediction interval."""
import math

import pytest

from pytest_genai.stats import run_spread_interval, t_quantile


@pytest.mark.parametrize(("df", "value"), [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)])
def test_t_quantiles_match_the_printed_tables(df: int, value: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-3)  # two-sided 95 %, any Student t table


def test_the_interval_widens_with_the_spread_between_runs_and_narrows_with_more_runs() -> None:
    tight = run_spread_interval([1.0], [[1.0], [1.01], [0.99], [1.0], [1.0]])
    loose = run_spread_interval([1.0], [[1.0], [1.08], [0.93], [1.05], [1.0]])
    assert tight.lo < 1.0 < tight.hi and loose.hi - loose.lo > 5 * (tight.hi - tight.lo)
    few = run_spread_interval([1.0], [[1.0], [1.05]])
    many = run_spread_interval([1.0], [[1.0], [1.05]] * 5)
    assert few.hi - few.lo > 4 * (many.hi - many.lo) and few.n == 2 and many.n == 10
    # the rounds inside a run give its median; the centre is the current median over the runs' geometric mean
    shifted = run_spread_interval([1.2, 1.2, 1.21], [[1.0, 1.0, 5.0], [1.0], [1.0, 1.0]])
    assert math.sqrt(shifted.lo * shifted.hi) == pytest.approx(1.2)


def test_too_few_runs_or_non_positive_values_are_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 baseline runs"):
        run_spread_interval([1.0], [[1.0, 1.1]])
    with pytest.raises(ValueError, match="positive"):
        run_spread_interval([1.0], [[0.0], [1.0]])
