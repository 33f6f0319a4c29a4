import math

import pytest
from hypothesis import given, strategies as st

from pytest_genai.claims import ClaimsError, check_value, load_claims, load_metrics

METRICS = '''
[[metric]]
name = "ppl_ratio"
unit = "1"
direction = "lower"
'''


def write(tmp_path, claims_text, metrics_text=METRICS):
    (tmp_path / "metrics_t.toml").write_text(metrics_text)
    (tmp_path / "paper_t.toml").write_text(claims_text)
    return tmp_path


def claim(**fields):
    body = {"id": '"T.x"', "section": '"A1"', "basis": '"paper"', "metric": '"ppl_ratio"', "max": "1.035"}
    body.update(fields)
    return 'paper = "T"\n[[claim]]\n' + "\n".join(f"{k} = {v}" for k, v in body.items() if v is not None) + "\n"


def test_packaged_claims_load_and_cover_both_papers() -> None:
    claims = load_claims()
    ids = {c.id for c in claims}
    assert {"A1.ppl_ratio", "A1.compression_ratio", "A2.gen.gaudi_gaudi2", "B1.wse2_allocation",
            "B1.identical_layers_li"} <= ids
    assert {c.paper for c in claims} == {"A", "B"}
    metrics = load_metrics()
    assert all(c.metric in metrics for c in claims)


@pytest.mark.parametrize(
    ("fields", "metrics_text", "message"),
    [
        ({"metric": '"nope"'}, METRICS, "paper_t.toml: claim 'T.x': field 'metric' names unknown metric 'nope'"),
        ({"min": "2.0", "max": "1.0"}, METRICS, "paper_t.toml: claim 'T.x': field 'min' (2.0) is greater than field 'max' (1.0)"),
        ({"max": None}, METRICS, "paper_t.toml: claim 'T.x': needs a bound"),
        ({"max": '"high"'}, METRICS, "paper_t.toml: claim 'T.x': field 'max' must be a finite number"),
        ({"colour": '"red"'}, METRICS, "paper_t.toml: claim 'T.x': unknown field(s) ['colour']"),
        ({"unit": '"s"'}, METRICS, "paper_t.toml: claim 'T.x': field 'unit' is 's'"),
        ({"kind": '"generation"'}, METRICS, "needs fields 'from_generation' and 'to_generation'"),
        ({}, METRICS.replace('"lower"', '"sideways"'), "metrics_t.toml: metric 'ppl_ratio': field 'direction'"),
        ({"basis": None}, METRICS, "paper_t.toml: claim 'T.x': field 'basis' must be one of"),
        ({"devices": '["gaudi9"]'}, METRICS, "paper_t.toml: claim 'T.x': field 'devices' names unknown device(s) ['gaudi9']"),
        ({"experiment": '"qaunt"'}, METRICS, "paper_t.toml: claim 'T.x': field 'experiment' is 'qaunt'"),
        ({"experiment": '"quant"', "where": '{ mdoe = "real" }'}, METRICS,
         "paper_t.toml: claim 'T.x': 'where' key(s) ['mdoe'] are not config keys of quant; known: backend,"),
        ({"where": '{ colour = "red" }'}, METRICS, "'where' key(s) ['colour'] are not config keys of any experiment"),
        ({"basis": '"hunch"'}, METRICS, "paper_t.toml: claim 'T.x': field 'basis' must be one of"),
        ({"basis": '"physics"', "paper_value": "1.0"}, METRICS, "field 'paper_value' is for basis = \"paper\""),
        ({}, METRICS + "timing = 1\n", "metrics_t.toml: metric 'ppl_ratio': field 'timing' must be true or false"),
        ({}, METRICS + "machine_normalized = 1\n",
         "metric 'ppl_ratio': field 'machine_normalized' must be true or false"),
        ({}, METRICS + "machine_normalized = true\n", "'machine_normalized = true' is for a timing ratio"),
        ({}, METRICS + "measured_inputs = 1\n", "metric 'ppl_ratio': field 'measured_inputs' must be true or false"),
        ({"timing": '"yes"'}, METRICS, "paper_t.toml: claim 'T.x': field 'timing' must be true or false, got 'yes'"),
        ({"timing": "false"}, METRICS + "timing = true\n",
         "paper_t.toml: claim 'T.x': field 'timing' is false but metric 'ppl_ratio' is a timing metric"),
        # fourth reliability round: accepted before, and the claim never applied / the paper failed its own claim
        ({"kind": '"generation"', "from_generation": '"h100"', "to_generation": '"h10O"'}, METRICS,
         "paper_t.toml: claim 'T.x': field 'to_generation' is 'h10O', no device generation"),
        ({"paper_value": "1.2"}, METRICS,
         "paper_t.toml: claim 'T.x': field 'paper_value' (1.2) is outside the claim's own bounds [, 1.035]"),
    ],
)
def test_malformed_claim_files_name_file_claim_and_field(tmp_path, fields, metrics_text, message) -> None:
    write(tmp_path, claim(**fields), metrics_text)
    with pytest.raises(ClaimsError) as info:
        load_claims(tmp_path)
    assert message in str(info.value)


def test_a_claim_can_mark_its_measurement_timed_where_the_metric_is_not(tmp_path) -> None:
    write(tmp_path, claim(timing="true"))
    (c,) = load_claims(tmp_path)
    assert c.timing
    assert check_value(c, 1.0).verdict == "inconclusive"  # one value of a timed measurement decides nothing
    write(tmp_path, claim())
    assert not load_claims(tmp_path)[0].timing  # the metric's own flag by default


def test_not_toml_names_the_file(tmp_path) -> None:
    write(tmp_path, "paper = [unclosed")
    with pytest.raises(ValueError, match="paper_t.toml: not valid TOML"):
        load_claims(tmp_path)


def test_a_generation_family_names_its_variants(tmp_path) -> None:
    write(tmp_path, claim(kind='"generation"', from_generation='"a100"', to_generation='"h100"', paper_value="1.0"))
    (c,) = load_claims(tmp_path)
    assert c.matches_generations("a100-sxm4-80gb", "h100-sxm")


def test_a_utf16_claims_file_is_named_and_a_bom_is_read(tmp_path) -> None:
    """UTF-16: a UnicodeDecodeError naming no file; a UTF-8 BOM: refused as invalid TOML."""
    write(tmp_path, "")
    (tmp_path / "paper_t.toml").write_bytes(b"\xef\xbb\xbf" + claim().encode())
    assert [c.id for c in load_claims(tmp_path)] == ["T.x"]
    (tmp_path / "paper_t.toml").write_bytes(claim().encode("utf-16"))
    with pytest.raises(ClaimsError, match="paper_t.toml: not UTF-8 text"):
        load_claims(tmp_path)


def test_claims_of_an_unknown_paper_is_exit_2(capsys) -> None:
    """`claims --paper Z` printed an empty table and exit 0."""
    from pytest_genai.cli import main

    assert main(["claims", "--paper", "Z"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "pytest-genai claims: --paper Z: no claims of that paper; use one of A, B"
    assert main(["claims", "--paper", "b"]) == 0


def test_duplicate_ids_across_files(tmp_path) -> None:
    write(tmp_path, claim())
    (tmp_path / "paper_u.toml").write_text(claim())
    with pytest.raises(ClaimsError, match="'T.x' already defined in paper_t.toml"):
        load_claims(tmp_path)


def test_min_max_checks_and_message(tmp_path) -> None:
    write(tmp_path, claim(min="0.9", paper_text='"12.39 vs 12.02"'))
    (c,) = load_claims(tmp_path)
    assert check_value(c, 1.0).verdict == "pass"
    assert check_value(c, 1.035).verdict == "pass"  # bounds are inclusive
    assert check_value(c, 1.071).message == "claim T.x: measured 1.071 > max 1.035 (Paper T, A1: 12.39 vs 12.02)"
    assert check_value(c, 0.5).message.startswith("claim T.x: measured 0.5 < min 0.9")
    assert check_value(c, math.nan).verdict == "fail"
    assert c.direction == "lower"


@given(lo=st.floats(-1e6, 1e6), width=st.floats(0, 1e6), x=st.floats(-3e6, 3e6))
def test_check_is_exactly_the_interval(tmp_path_factory, lo, width, x) -> None:
    from pytest_genai.claims.model import Claim

    c = Claim(id="p", paper="T", section="S", metric="m", unit="1", direction="none", min=lo, max=lo + width)
    assert (check_value(c, x).verdict == "pass") == (lo <= x <= lo + width)


def test_scope_matching() -> None:
    claims = {c.id: c for c in load_claims()}
    g2 = claims["A1.gaudi2_tinyllama_compression"]
    ok, _ = g2.applies_to(device_kind="hpu", generation="gaudi2", model="TinyLlama-1.1B", experiment="quant",
                          config={"mode": "real"})
    assert ok
    ok, why = g2.applies_to(device_kind="cuda", generation="h100-sxm", model="tinyllama-1.1b", experiment="quant",
                            config={"mode": "real"})
    assert not ok and "h100-sxm" in why
    ok, why = claims["A1.compression_ratio"].applies_to(device_kind="cpu", generation="cpu", model=None,
                                                         experiment="quant", config={"mode": "fake"})
    assert not ok and "mode" in why
    gen = claims["A2.gen.gaudi_gaudi2"]
    assert gen.matches_generations("gaudi", "gaudi2")
    assert not gen.matches_generations("gaudi2", "gaudi3")
    assert claims["A3.gen.a100_h100"].matches_generations("a100-sxm4-80gb", "h100-sxm")


def test_a_where_range_matches_a_recorded_number_inside_it(tmp_path) -> None:
    """``where = { world_size = { min = 2 } }``: inclusive, on numbers only; the reason names the range."""
    write(tmp_path, claim(experiment='"finetune"', where='{ world_size = { min = 2 }, sharded = "fsdp" }'))
    (c,) = load_claims(tmp_path)

    def applies(config):
        return c.applies_to(device_kind="cpu", generation="cpu", model=None, experiment="finetune", config=config)

    assert applies({"world_size": 2, "sharded": "fsdp"}) == (True, "")
    assert applies({"world_size": 8, "sharded": "fsdp"})[0]
    assert applies({"world_size": 1, "sharded": "fsdp"}) == (False, "config world_size=1, claim needs world_size >= 2")
    assert not applies({"sharded": "fsdp"})[0] and not applies({"world_size": "2", "sharded": "fsdp"})[0]
    assert not applies({"world_size": True, "sharded": "fsdp"})[0]
    write(tmp_path, claim(experiment='"finetune"', where="{ world_size = { min = 2, max = 4 } }"))
    (c,) = load_claims(tmp_path)
    assert not applies({"world_size": 5})[0] and applies({"world_size": 4})[0]
    assert applies({"world_size": 5})[1] == "config world_size=5, claim needs world_size >= 2 and world_size <= 4"


@pytest.mark.parametrize(("where", "message"), [
    ("{ world_size = { least = 2 } }", "'where' world_size = {'least': 2}: a range takes 'min' and/or 'max' only"),
    ("{ world_size = {} }", "a range takes 'min' and/or 'max' only"),
    ('{ world_size = { min = "2" } }', "paper_t.toml: claim 'T.x': field 'where.world_size' must be a finite number"),
])
def test_a_malformed_where_range_names_the_claim_and_the_key(tmp_path, where, message) -> None:
    write(tmp_path, claim(experiment='"finetune"', where=where))
    with pytest.raises(ClaimsError) as info:
        load_claims(tmp_path)
    assert message in str(info.value)
