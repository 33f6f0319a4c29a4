"""A run written before a metric rename is read under the current names, so gate/compare pair it with new runs."""
from pytest_genai.results.renames import current_names
from pytest_genai.results.runs import run_from_json

from .runfiles import bench, run_doc


def test_an_old_run_is_read_under_the_current_names_with_their_sources() -> None:
    old = {"bytes_moved": 10.0, "compute_bound": 1.0, "matmul_efficiency": 0.5, "compute_efficiency": 0.3,
           "step_time_s": 0.1}
    (rec,) = run_from_json(run_doc([bench("l1", "dabench", {"layers": 2}, old)]), "old.json").records
    assert {"bytes_moved_modeled", "compute_bound_modeled", "matmul_efficiency_modeled", "compute_efficiency_spec",
            "step_time_s"} <= set(rec.metrics)
    assert not {"bytes_moved", "compute_bound", "matmul_efficiency", "compute_efficiency"} & set(rec.metrics)
    assert rec.sources["bytes_moved_modeled"] == "modeled" and rec.sources["compute_efficiency_spec"] == "spec"
    assert rec.metrics["bytes_moved_modeled"] == 10.0


def test_a_current_name_wins_over_a_retired_one() -> None:
    m, s, u = current_names({"efficiency": 0.1, "efficiency_modeled": 0.2}, {"efficiency": "measured",
                                                                            "efficiency_modeled": "modeled"}, {})
    assert m == {"efficiency_modeled": 0.2} and s == {"efficiency_modeled": "modeled"}


def test_an_old_fine_tuning_run_reads_its_flop_counter_ratio_as_modeled() -> None:
    """flop_counter_ratio (two counts of the model's work, no timing) was recorded as measured until 2026-12-02."""
    old = {"flop_counter_ratio": 1.0, "tokens_per_s": 100.0}
    (rec,) = run_from_json(run_doc([bench("ft", "finetune", {"strategy": "ddp"}, old)]), "old.json").records
    assert rec.metrics["flop_counter_ratio_modeled"] == 1.0 and rec.sources["flop_counter_ratio_modeled"] == "modeled"
    assert "flop_counter_ratio" not in rec.metrics
