"""Vendor profile readers on inputs built to the real layouts (tests/dabench/vendor_fixtures.py)."""
from types import SimpleNamespace

import pytest

from . import vendor_fixtures

from pytest_genai.dabench.readers import DataflowProfile, LayoutError, parse_cell, parse_number
from pytest_genai.dabench.readers.cerebras import kernel_category, parse_compile_report, read_compile_report
from pytest_genai.dabench.readers.graphcore import (execution_cycles_from_report, profile_from_report,
                                                    read_execution_profile, read_popvision)
from pytest_genai.dabench.readers.sambanova import parse_section_report, read_section_report

COMPILE_REPORT = vendor_fixtures.compile_report(48)  # 48 GPT-2 blocks: 583 kernel rows, nested, with '--' cells


def test_cerebras_real_layout_dashes_hierarchy_and_non_layer_kernels(tmp_path):
    profile = parse_compile_report(COMPILE_REPORT)
    assert profile.extra["kernel_rows"] > 500  # hundreds of rows, as real reports have
    assert profile.allocation_ratio == pytest.approx(0.92)
    # Top-level kernels: embedding, ln_f, lm_head, loss, optimizer, 48 x (layer_norm, attention, fc).
    assert profile.extra["kernels"] == 5 + 3 * 48
    assert profile.extra["layer_kernels"] == 2 * 48  # attention<i> and fc<i>; norms, loss, optimizer kept apart
    assert profile.extra["non_layer_kernels"] == 5 + 48
    loads = [1 / vendor_fixtures.layer_rate(i, part) for i in range(48) for part in ("attention", "fc")]
    assert sorted(profile.subtask_loads) == pytest.approx(sorted(loads))
    assert profile.load_imbalance == pytest.approx(sum(loads) / len(loads) / max(loads))
    assert profile.extra["li_subtask_rows"] == 2 * 48
    assert "fc<i> and attention<i> rows" in profile.li_subtasks
    # Nested rows are parts of their parent: counted once (summing every row would give far more).
    per_layer = 20_000 * 2
    assert profile.extra["layer_kernel_active_pes"] == 48 * per_layer
    all_rows = sum(float(line.split("|")[5].replace(",", "")) for line in COMPILE_REPORT.splitlines()
                   if line.startswith("| ") and line.split("|")[5].strip() not in ("--", "Active PEs"))
    assert profile.extra["kernel_active_pes_total"] < all_rows / 2
    # '--' is missing, never zero and never an error; the overall Transmission Samples/s is '--' here.
    assert profile.extra["missing_cells"] > 100
    assert "transmission_samples_per_s" not in profile.extra
    path = tmp_path / "compile_report.txt"
    path.write_text(COMPILE_REPORT)
    assert read_compile_report(path) == profile


def test_cerebras_parent_without_figures_takes_its_parts():
    profile = parse_compile_report(vendor_fixtures.compile_report(12, parent_cells=False))
    # The fc<i> parents are all '--': rate from their slowest listed part (fc<i>.io), PEs from the direct parts
    # (compute_core 15,000 + io 5,000), not from compute_core's own parts as well.
    assert profile.extra["layer_kernels_without_rate"] == 0
    assert profile.extra["layer_kernel_active_pes"] == 12 * (20_000 + 20_000)
    loads = [1 / vendor_fixtures.layer_rate(i, part) for i in range(12) for part in ("attention", "fc")]
    assert profile.extra["load_imbalance_all_layer_kernels"] == pytest.approx(sum(loads) / len(loads) / max(loads))
    # The authors' LI reads each fc<i> / attention<i> row's own cell: the '--' fc<i> rows are left out, not folded.
    assert profile.extra["li_subtask_rows_without_rate"] == 12
    assert sorted(profile.subtask_loads) == pytest.approx([1 / 1000.0] * 12)
    assert "12 such row(s) without a figure left out" in profile.li_subtasks


def test_cerebras_dash_overall_fields_are_missing_not_zero():
    profile = parse_compile_report(vendor_fixtures.compile_report(2, active_pes="--"))
    assert profile.allocation_ratio is None
    assert "wafer_utilization_estimate" not in profile.extra


@pytest.mark.parametrize("kind", ["optimizer", "loss", "embedding", "layer_norm", "head"])
def test_cerebras_kernel_categories(kind):
    names = {"optimizer": ["adamw_optimizer", "sgd", "grad_norm"], "loss": ["loss_cross_entropy", "loss"],
             "embedding": ["embedding", "wte", "position_embeddings"], "layer_norm": ["ln_f", "layer_norm3", "ln2"],
             "head": ["lm_head"]}[kind]
    assert {kernel_category(n) for n in names} == {kind}
    assert kernel_category("attention3") == kernel_category("ffn11") == kernel_category("fc11") == "layer"


def test_cerebras_kernels_named_like_a_category_inside_a_block_are_layers():
    """Substrings once sorted these out of the load balance: a decoder block's position-wise FFN, attention head
    and block norm are its parts."""
    for name in ("position_wise_ffn3", "positionwise_feedforward3", "attn_head", "transformer_block_norm_ffn3",
                 "multihead_attention2", "optimized_ffn1"):
        assert kernel_category(name) == "layer", name
    assert kernel_category("final_layer_norm") == kernel_category("rms_norm7") == "layer_norm"
    assert kernel_category("position_embeddings") == kernel_category("token_type_embeddings") == "embedding"


def test_cerebras_unknown_layout_names_file_line_and_expectation(tmp_path):
    with pytest.raises(LayoutError, match="Estimated Overall Performance"):
        parse_compile_report("Samples/s: 1\n")
    with pytest.raises(LayoutError, match="'Active PEs'"):
        parse_compile_report("Estimated Overall Performance\nSamples/s: 1\nCompute Utilization: 5%\n")
    newer = COMPILE_REPORT.replace("Compute Utilization |", "Compute Util. (%) |", 1)
    path = tmp_path / "compile_report.txt"
    path.write_text(newer)
    with pytest.raises(LayoutError, match=rf"{path}:10: expected the kernel table header Kernel Name \| Samples/s"):
        read_compile_report(path)
    lines = COMPILE_REPORT.splitlines()
    lines[14] = lines[14] + " 7 |"
    with pytest.raises(LayoutError, match=r"compile_report.txt:15: expected a kernel row of 6 cells"):
        parse_compile_report("\n".join(lines))


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
    # the authors' SN30 statistic (their table's "Highest pcu utilization"), under a name that says so, and the
    # latency-weighted mean beside it under its own name
    assert profile.allocation_ratio == pytest.approx(0.5)
    assert profile.allocation_metric == "allocation_ratio_section_max"
    assert profile.other_allocations == {
        "latency_weighted": pytest.approx((0.002 * 0.5 + 0.004 * 0.25 + 0.001 * 0.10) / 0.007)}
    assert profile.load_imbalance == pytest.approx((0.007 / 3) / 0.004)
    assert profile.extra["ddr_total_bytes"] == pytest.approx((80 * 0.002 + 120 * 0.004 + 200 * 0.001) * 1e9)
    assert profile.extra["ddr_total_bw_gbs_max"] == 200  # the run's own DDR ceiling, for the RDU bound


def test_sambanova_missing_column_is_named():
    with pytest.raises(LayoutError, match=r"section_report.csv:1: expected a column 'measured pcu utilization'"):
        parse_section_report("section_id,measured latency (sec)\n0,1\n")


def test_sambanova_multi_chip_rows_fold_into_sections_with_dash_cells():
    # 3 sections on 2 chips (tensor parallel): 6 rows. Section 1's chip 1 has no latency ('--'), section 2's
    # chip 0 no PCU figure; section 3 has no latency at all (left out of the balance, counted).
    text = vendor_fixtures.section_report([
        ("0", "0", "Forward", "0.002", "40.0", "50%"), ("0", "1", "Forward", "0.0025", "40.0", "30%"),
        ("1", "0", "Backward", "0.004", "60.0", "20%"), ("1", "1", "Backward", "--", "--", "30%"),
        ("2", "0", "Optimizer", "0.001", "100.0", "--"), ("2", "1", "Optimizer", "0.001", "100.0", "10%"),
        ("3", "0", "Optimizer", "--", "--", "5%"),
    ])
    profile = parse_section_report(text)
    assert profile.extra["sections"] == 4 and profile.extra["chips"] == 2
    assert profile.extra["sections_without_latency"] == 1
    latencies = [0.0025, 0.004, 0.001]  # the slowest chip of each section, not 6 subtasks
    assert profile.subtask_loads == pytest.approx(latencies)
    pcu = [0.40, 0.25, 0.10]  # mean over the chips that have a figure
    assert profile.allocation_ratio == pytest.approx(0.40)  # the highest section's
    assert profile.other_allocations["latency_weighted"] == pytest.approx(
        sum(u * t for u, t in zip(pcu, latencies)) / sum(latencies))
    assert profile.extra["ddr_total_bw_gbs_max"] == 200.0  # both chips' DDR traffic of section 2
    assert "2 chip(s)" in profile.li_subtasks


def test_sambanova_bad_rows_name_file_and_line(tmp_path):
    text = vendor_fixtures.section_report([("0", "0", "Forward", "0.002", "40.0", "50%")])
    with pytest.raises(LayoutError, match=r"section_report.csv:3: expected one row per \(section, chip\)"):
        parse_section_report(text + text.splitlines()[1] + "\n")
    path = tmp_path / "section_report.csv"
    path.write_text(text + "1,0,short row\n")
    with pytest.raises(LayoutError, match=rf"{path}:3: expected 14 cells"):
        read_section_report(path)


def _tile(used: int, vertex_state: int | None = None):
    memory = SimpleNamespace(total=SimpleNamespace(excludingGaps=used, includingGaps=used + 8))
    if vertex_state is not None:
        memory.category = SimpleNamespace(vertexInstanceState=SimpleNamespace(total=vertex_state))
    return SimpleNamespace(memory=memory)


def _pva_report(tiles_used, *, tiles_per_ipu, bytes_per_tile=1000, with_bytes_per_tile=True, vertex_state=None):
    target = SimpleNamespace(numTiles=len(tiles_used), tilesPerIpu=tiles_per_ipu,
                             numIPUs=len(tiles_used) // tiles_per_ipu)
    if with_bytes_per_tile:
        target.bytesPerTile = bytes_per_tile
    else:
        target.bytesPerIPU = bytes_per_tile * tiles_per_ipu
    states = vertex_state or [None] * len(tiles_used)
    return SimpleNamespace(compilation=SimpleNamespace(target=target,
                                                       tiles=[_tile(u, v) for u, v in zip(tiles_used, states)]))


@pytest.mark.parametrize("with_bytes_per_tile", [True, False])
def test_graphcore_allocation_is_tiles_used_and_memory_is_separate(with_bytes_per_tile):
    used = [500, 1000, 250, 0]  # 2 IPUs x 2 tiles, 1,000 B per tile
    profile = profile_from_report(_pva_report(used, tiles_per_ipu=2, with_bytes_per_tile=with_bytes_per_tile))
    assert profile.allocation_ratio == 0.75  # Paper B: tiles used / tiles available, not memory
    assert profile.extra["tile_memory_fraction"] == pytest.approx(1750 / 4000)
    assert profile.load_imbalance == pytest.approx((1750 / 4) / 1000)
    assert profile.extra["ipu_memory_max_fraction"] == pytest.approx(1500 / 2000)  # memory per IPU, its own metric
    assert profile.extra["ipu_memory_used_bytes_max"] == 1500
    assert "memory excluding gaps" in profile.allocation_units


def test_graphcore_tile_with_only_code_is_not_in_use():
    # Every tile holds some memory (code, exchange buffers); only 2 of 4 hold vertex state (compute placed there).
    profile = profile_from_report(_pva_report([900, 800, 100, 100], tiles_per_ipu=4, vertex_state=[64, 32, 0, 0]))
    assert profile.allocation_ratio == 0.5
    assert profile.extra["tiles_used"] == 2
    assert "vertexInstanceState" in profile.allocation_units


def test_graphcore_report_in_an_unknown_layout_names_the_file(tmp_path, monkeypatch):
    import sys

    fake_pva = SimpleNamespace(openReport=lambda path: SimpleNamespace(compilation=SimpleNamespace()))
    monkeypatch.setitem(sys.modules, "pva", fake_pva)
    with pytest.raises(LayoutError, match=rf"{tmp_path / 'profile.pop'}: expected a PopVision report"):
        read_popvision(tmp_path / "profile.pop")


def test_graphcore_needs_pva_for_files(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pva", None)
    with pytest.raises(ImportError, match="Poplar SDK"):
        read_popvision(tmp_path / "profile.pop")
    with pytest.raises(ValueError, match="not a PopVision report"):
        profile_from_report(SimpleNamespace())


MEMORY_BOUND = {"compute": 1000, "exchange": 1500, "stream": 400}  # per layer: exchange outweighs the matmuls
COMPUTE_BOUND = {"compute": 3000, "exchange": 800, "stream": 200}


def _bound(report: dict):
    from pytest_genai.dabench.results import ipu_bound_result

    return ipu_bound_result(execution_cycles_from_report(vendor_fixtures.as_pva(report)))


def test_graphcore_execution_memory_bound_profile_reads_0():
    report = vendor_fixtures.execution_profile(**MEMORY_BOUND)  # 2 IPUs, 4 layers, 3 runs (the first skipped)
    cycles = execution_cycles_from_report(vendor_fixtures.as_pva(report))
    assert (cycles.runs_read, cycles.runs_skipped) == (2, 1)
    assert cycles.compute == (4000.0, 4000.0)  # 2 layers per IPU x 1,000 cycles x 2 runs
    assert cycles.exchange == (2 * (2 * 1500 + 375),) * 2  # DoExchange per layer + one GlobalExchange per run
    assert cycles.stream_copy == (800.0, 800.0)  # StreamCopyMid only: inputs on IPU 0, outputs on IPU 1
    assert sum(cycles.wait) == 2 * (4 * 2 * 120 + 2 * 300 + 900 + 60 + 700 + 40)  # syncs and copy Begin/End
    result = _bound(report)
    m = {name: item.value for name, item in result.metrics.items()}
    assert m["compute_bound_measured"] == 0.0
    assert m["compute_cycle_fraction_measured"] == pytest.approx(8000 / (8000 + 13500 + 1600))
    assert {item.source for item in result.metrics.values()} == {"measured"}
    source = result.labels["bound_source"]
    assert "StreamCopyMid" in source and "first of 3 runs skipped" in source


def test_graphcore_execution_compute_bound_profile_reads_1_and_fails_the_claim():
    from pytest_genai.claims import load_claims
    from pytest_genai.claims.check import check_value

    m = {name: item.value for name, item in _bound(vendor_fixtures.execution_profile(**COMPUTE_BOUND)).metrics.items()}
    assert m["compute_bound_measured"] == 1.0
    assert m["compute_cycle_fraction_measured"] == pytest.approx(0.75)
    claim = {c.id: c for c in load_claims()}["B1.ipu_memory_bound"]
    assert claim.metric == "compute_bound_measured" and claim.max == 0.0
    assert check_value(claim, m["compute_bound_measured"]).verdict == "fail"
    assert check_value(claim, 0.0).verdict == "pass"


def test_graphcore_execution_skips_the_warm_up_run_and_keeps_unknown_programs_apart():
    # The first run's stream copies are inflated (host warm-up): counted, they would make the profile memory-bound.
    report = vendor_fixtures.execution_profile(**COMPUTE_BOUND, warmup_stream=10**6)
    assert execution_cycles_from_report(vendor_fixtures.as_pva(report)).compute_bound is True
    one_run = vendor_fixtures.execution_profile(**COMPUTE_BOUND, runs=1, warmup_stream=10**6)
    assert execution_cycles_from_report(vendor_fixtures.as_pva(one_run)).compute_bound is False  # nothing to skip
    report["execution"]["runs"][1]["steps"].append(vendor_fixtures._step("SomeNewerProgramType", "x", [5, 7]))
    cycles = execution_cycles_from_report(vendor_fixtures.as_pva(report))
    assert cycles.other == (5.0, 7.0) and cycles.other_types == ("SomeNewerProgramType",)
    assert _bound(report).labels["execution_other_programs"] == "SomeNewerProgramType"


def test_graphcore_profile_without_execution_raises_layout_error_naming_the_file(tmp_path, monkeypatch):
    import sys

    fake_pva = SimpleNamespace(openReport=lambda path: vendor_fixtures.as_pva(vendor_fixtures.graph_profile()))
    monkeypatch.setitem(sys.modules, "pva", fake_pva)
    path = tmp_path / "execution" / "profile.pop"
    with pytest.raises(LayoutError, match=rf"{path}: expected a PopVision report with an execution profile.*"
                                          r"no execution steps"):
        read_execution_profile(path)
    bad = vendor_fixtures.execution_profile(**MEMORY_BOUND)
    del bad["execution"]["runs"][1]["steps"][0]["ipus"]
    with pytest.raises(ValueError, match=r"ipus\[\]\.cycles"):
        execution_cycles_from_report(vendor_fixtures.as_pva(bad))


def test_numbers_and_profile_validation():
    assert parse_cell(" -- ", field="x") is None and parse_cell("n/a", field="x") is None
    assert parse_cell("pending", field="x") is None and parse_cell("1.2.3", field="x") is None  # non-numeric: missing
    assert parse_cell("0", field="x") == 0.0
    assert parse_number("1,248,679.50", field="x") == 1248679.5
    assert parse_number(" 93% ", field="x") == 93.0
    with pytest.raises(ValueError, match="field 'x'"):
        parse_number("n/a", field="x")
    with pytest.raises(ValueError, match="allocation_ratio"):
        DataflowProfile("v", "f", 1.5, "u", None, "d", "s", ())


@pytest.mark.parametrize("cut", ["before_a_row", "no_table"])
def test_a_truncated_compile_report_is_refused_not_read_with_fewer_kernels(cut):
    """Cut at a row boundary the report looked complete: one layer kernel fewer, LI 0.81 -> 1.0 (a fail became a
    pass); cut before its table it gave no LI and no error."""
    text = vendor_fixtures.compile_report(12)
    lines = text.splitlines()
    if cut == "before_a_row":
        at = next(i for i, line in enumerate(lines) if line.startswith("| fc11 "))
        truncated = "\n".join(lines[:at]) + "\n"
        match = r"the kernel table's closing \+---\+ rule after its last row \(file truncated\?\)"
    else:
        at = lines.index("Compute Utilization:          71%")
        truncated = "\n".join(lines[:at + 1]) + "\n"
        match = r"the kernel table \(Kernel Name \| .*\) with its rows after the overall estimate \(file truncated\?\)"
    with pytest.raises(LayoutError, match=match):
        parse_compile_report(truncated, source="compile_report.txt")
    assert parse_compile_report(text).extra["layer_kernels"] == 24  # the whole report still reads
