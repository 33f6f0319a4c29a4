"""Vendor profile readers on small inputs built to each documented format (see the readers' docstrings)."""
from types import SimpleNamespace

import pytest

from pytest_genai.dabench.readers import DataflowProfile, parse_number
from pytest_genai.dabench.readers.cerebras import parse_compile_report, read_compile_report
from pytest_genai.dabench.readers.graphcore import profile_from_report, read_popvision
from pytest_genai.dabench.readers.sambanova import parse_section_report

COMPILE_REPORT = """\
Estimated Overall Performance
-------------------------------
Samples/s:                    1200.0
Compute Samples/s:            1250.0
Transmission Samples/s:       1200.0
Active PEs:                   92%
Compute Utilization:          80%
+---------------------------+----------+-------------------+------------------------+------------+---------------------+
| Kernel Name               | Samples/s | Compute Samples/s | Transmission Samples/s | Active PEs | Compute Utilization |
+---------------------------+----------+-------------------+------------------------+------------+---------------------+
|                           |          |                   |                        |            |                     |
| decoder_0.attn            |   1200.0 |            1250.0 |                 9000.0 |      5,203 |                100% |
| decoder_0.ffn             |   1250.0 |            1250.0 |                 9000.0 |       5301 |                 96% |
| decoder_1.attn            |   1500.0 |            1500.0 |                 9000.0 |       4100 |                 80% |
"""


def test_cerebras_compile_report(tmp_path):
    profile = parse_compile_report(COMPILE_REPORT)
    assert profile.allocation_ratio == pytest.approx(0.92)
    loads = [1 / 1200.0, 1 / 1250.0, 1 / 1500.0]
    assert profile.subtask_loads == pytest.approx(loads)
    assert profile.load_imbalance == pytest.approx(sum(loads) / 3 / max(loads))
    assert profile.extra["wafer_utilization_estimate"] == pytest.approx(0.92 * 0.80)
    assert profile.extra["kernel_active_pes_total"] == 5203 + 5301 + 4100
    assert "mean(load) / max(load)" == profile.li_definition
    path = tmp_path / "compile_report.txt"
    path.write_text(COMPILE_REPORT)
    assert read_compile_report(path) == profile


def test_cerebras_missing_fields_are_named():
    with pytest.raises(ValueError, match="Estimated Overall Performance"):
        parse_compile_report("Samples/s: 1\n")
    with pytest.raises(ValueError, match="'Active PEs' is missing"):
        parse_compile_report("Estimated Overall Performance\nSamples/s: 1\nCompute Utilization: 5%\n")




def _section_csv() -> str:
    import csv
    import io

    header = ["section_id", "chip_id", "partition_id", "section type", "measured throughput, samples/s",
              "measured latency (cycles)", "measured latency (sec)", "measured DDR read BW, GB/s",
              "measured DDR write BW, GB/s", "measured DDR total BW, GB/s", "measured PMU count",
              "measured PMU utilization", "measured PCU count", "measured PCU utilization"]
    rows = [
        ["0", "0", "0, 0", "Forward", "1,248,679.50", "1,000,000", "0.002", "50.0", "30.0", "80.0", "200", "31.25%", "320", "50%"],
        ["1", "0", "1, 0", "Backward", "624,339.75", "2,000,000", "0.004", "70.0", "50.0", "120.0", "300", "46.875%", "160", "25%"],
        ["2", "0", "2, 0", "Optimizer", "2,497,359.00", "500,000", "0.001", "100.0", "100.0", "200.0", "100", "15.625", "64", "10"],
    ]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def test_sambanova_section_report():
    profile = parse_section_report(_section_csv())
    latencies = [0.002, 0.004, 0.001]
    assert profile.subtask_loads == pytest.approx(latencies)
    assert profile.allocation_ratio == pytest.approx((0.002 * 0.5 + 0.004 * 0.25 + 0.001 * 0.10) / 0.007)
    assert profile.load_imbalance == pytest.approx((0.007 / 3) / 0.004)
    assert profile.extra["ddr_total_bytes"] == pytest.approx((80 * 0.002 + 120 * 0.004 + 200 * 0.001) * 1e9)
    assert profile.extra["ddr_total_bw_gbs_max"] == 200  # the run's own DDR ceiling, for the RDU bound
    assert profile.extra["pcu_utilization_max"] == pytest.approx(0.5)


def test_sambanova_missing_column_is_named():
    with pytest.raises(ValueError, match="measured pcu utilization"):
        parse_section_report("section_id,measured latency (sec)\n0,1\n")


def _tile(used: int):
    return SimpleNamespace(memory=SimpleNamespace(total=SimpleNamespace(excludingGaps=used, includingGaps=used + 8)))


def _pva_report(tiles_used, *, tiles_per_ipu, bytes_per_tile=1000, with_bytes_per_tile=True):
    target = SimpleNamespace(numTiles=len(tiles_used), tilesPerIpu=tiles_per_ipu,
                             numIPUs=len(tiles_used) // tiles_per_ipu)
    if with_bytes_per_tile:
        target.bytesPerTile = bytes_per_tile
    else:
        target.bytesPerIPU = bytes_per_tile * tiles_per_ipu
    return SimpleNamespace(compilation=SimpleNamespace(target=target, tiles=[_tile(u) for u in tiles_used]))


@pytest.mark.parametrize("with_bytes_per_tile", [True, False])
def test_graphcore_tile_memory(with_bytes_per_tile):
    used = [500, 1000, 250, 0]  # 2 IPUs x 2 tiles, 1,000 B per tile
    profile = profile_from_report(_pva_report(used, tiles_per_ipu=2, with_bytes_per_tile=with_bytes_per_tile))
    assert profile.allocation_ratio == pytest.approx(1750 / 4000)
    assert profile.load_imbalance == pytest.approx((1750 / 4) / 1000)
    assert profile.extra["tiles_in_use_fraction"] == 0.75
    assert profile.extra["ipu_memory_max_fraction"] == pytest.approx(1500 / 2000)


def test_graphcore_needs_pva_for_files(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pva", None)
    with pytest.raises(ImportError, match="Poplar SDK"):
        read_popvision(tmp_path / "profile.pop")
    with pytest.raises(ValueError, match="not a PopVision report"):
        profile_from_report(SimpleNamespace())


def test_numbers_and_profile_validation():
    assert parse_number("1,248,679.50", field="x") == 1248679.5
    assert parse_number(" 93% ", field="x") == 93.0
    with pytest.raises(ValueError, match="field 'x'"):
        parse_number("n/a", field="x")
    with pytest.raises(ValueError, match="allocation_ratio"):
        DataflowProfile("v", "f", 1.5, "u", None, "d", "s", ())
