"""The terminal's closing tables."""
from __future__ import annotations


def test_the_closing_claims_table_shows_each_intervals_own_level() -> None:
    """Two launches a side give a 50% interval, five rounds 93.75%: the header said 95% for all of them."""
    from pytest_genai.plugin.summary import claims_table

    verdict = {"id": "A2.ddp_vs_fsdp", "basis": "paper", "verdict": "inconclusive", "measured": 1.1, "min": 1.0,
               "interval": {"lo": 1.02, "hi": 1.2, "level": 0.5, "n": 2}}
    lines = claims_table([verdict])
    assert "95%" not in lines[0] and "50% [1.02, 1.2] n=2" in "\n".join(lines)
