"""CPU contention from Linux's pressure stall information (pytest_genai.runtime.pressure): parsing, the share of a
window, and a window read from a file that grows as the kernel's does."""
import pytest
from hypothesis import given, strategies as st

from pytest_genai.runtime import pressure

PSI = "some avg10=0.06 avg60=0.25 avg300=1.03 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def test_parse_some_total_reads_the_some_line_only():
    assert pressure.parse_some_total(PSI.format(some=3155932813)) == 3155932813
    assert pressure.parse_some_total("full avg10=0.00 total=7\n") is None
    assert pressure.parse_some_total("some avg10=0.00 total=abc\n") is None
    assert pressure.parse_some_total("") is None


def test_stall_share_is_stalled_time_over_wall_time():
    assert pressure.stall_share(1_000_000, 1_650_000, 1.0) == pytest.approx(0.65)
    assert pressure.stall_share(0, 0, 5.0) == 0.0
    assert pressure.stall_share(0, 10_000_000, 1.0) == 1.0  # clamped: a counter read late cannot exceed the window
    with pytest.raises(ValueError, match="wall time must be positive"):
        pressure.stall_share(0, 1, 0.0)
    with pytest.raises(ValueError, match="went backwards"):
        pressure.stall_share(5, 4, 1.0)


@given(st.integers(0, 10**12), st.integers(0, 10**9), st.floats(1e-3, 1e4))
def test_stall_share_is_a_share(before, grown, wall):
    share = pressure.stall_share(before, before + grown, wall)
    assert 0.0 <= share <= 1.0
    assert share == min(1.0, grown / 1e6 / wall)


def test_a_window_reads_the_growth_since_it_opened(tmp_path):
    psi = tmp_path / "cpu"
    psi.write_text(PSI.format(some=5_000_000))
    window = pressure.Window.open(str(psi))
    assert window.stall_us == 5_000_000
    psi.write_text(PSI.format(some=5_000_000 + 10**9))  # far more stall than the window's wall time
    reading = window.reading(str(psi))
    assert reading["stall_share_measured"] == 1.0 and reading["window_s"] >= 0 and "pressure" in reading["method"]


def test_without_psi_nothing_is_read(tmp_path):
    missing = str(tmp_path / "absent")
    assert pressure.stall_us(missing) is None
    assert pressure.Window.open(missing).reading(missing) is None


def test_the_module_default_is_the_kernel_file(monkeypatch, tmp_path):
    psi = tmp_path / "cpu"
    psi.write_text(PSI.format(some=42))
    monkeypatch.setattr(pressure, "PSI_CPU", str(psi))
    assert pressure.stall_us() == 42
