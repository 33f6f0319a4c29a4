"""The paper-scale fit table: what the planner says fits on Gaudi2/3, A100-80GB, H100 and H200, and the docs show it."""
from pathlib import Path

from pytest_genai.train.fit_table import ASSUMPTIONS, DEVICES, fit_rows, fit_table_markdown, spec_capacities
from pytest_genai.train.lora import LoraSpec

DOC = Path(__file__).resolve().parents[2] / "docs" / "finetune.md"


def test_capacities_come_from_the_specs_table():
    assert spec_capacities() == {"Gaudi2": 96 * 10**9, "Gaudi3": 128 * 10**9, "A100-80GB": 80 * 10**9,
                                 "H100": 80 * 10**9, "H200": 141 * 10**9}
    assert [t for t, _ in DEVICES] == list(spec_capacities())
    assert ASSUMPTIONS["world"] == 8 and ASSUMPTIONS["seq_len"] == 2048


def test_lora_brings_gemma2_27b_ddp_within_one_card_where_full_fine_tuning_never_fits():
    """Full fine-tuning needs ~450 GiB per device under DDP for Gemma-2-27B; LoRA needs ~90 GiB, which
    fits a Gaudi3 and an H200 (90% usable) but not a 96 GB Gaudi2 or an 80 GB GPU."""
    rows = {(r[0], r[1].split()[0]): r for r in fit_rows(spec_capacities())}
    full, lora = rows[("gemma-2-27b", "full")], rows[("gemma-2-27b", "lora")]
    assert 440 < float(full[2]) < 460 and "ddp" not in full[4:]
    assert 80 < float(lora[2]) < 100
    assert dict(zip([t for t, _ in DEVICES], lora[4:])) == {
        "Gaudi2": "fsdp", "Gaudi3": "ddp", "A100-80GB": "fsdp", "H100": "fsdp", "H200": "ddp"}
    assert set(rows[("llama-3.1-8b", "lora")][4:]) == {"ddp"}
    assert set(rows[("llama-3.3-70b", "full")][4:]) == {"none"}


def test_a_bigger_card_never_fits_less():
    small, big = fit_rows({"a": 80 * 10**9}), fit_rows({"a": 2000 * 10**9})  # 70B full DDP: 1110 GiB
    assert all(b[4] == "ddp" for b in big)
    order = ["ddp", "zero2", "fsdp", "zero3", "none"]
    assert all(order.index(b[4]) <= order.index(s[4]) for s, b in zip(small, big))
    assert fit_rows({"a": 10**12}, LoraSpec(rank=64))[1][1] == "lora r64 (q_proj/k_proj/v_proj/o_proj)"


def test_docs_show_the_generated_table():
    assert fit_table_markdown() in DOC.read_text(encoding="utf-8"), (
        "docs/finetune.md's fit table is stale: paste python3 -c 'from pytest_genai.train.fit_table import "
        "fit_table_markdown; print(fit_table_markdown())'")
