"""pytest_genai.identity: a benchmark's identity (what it is) vs its environment (where and how it ran).

Example tests pin the decisions for the suite's config keys (docs/report.md has the table); properties pin the rules:
no identity ever holds a local path, the split loses nothing, and it is idempotent (the report reader applies it
again to files the recorder already split).
"""
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_genai.identity import (
    ENVIRONMENT_KEYS, data_label, differences, environment_differences, environment_reason, identity_key,
    looks_like_local_path, merge_environment, split_config, split_model,
)

# as benchmarks/test_quantization.py records a row (values from a CPU run: docs/results/2026-11-30-*/report.md)
QUANT_ROW = {
    "mode": "real", "task": "wikitext", "precision": "bf16/int8", "backend": "native",
    "data_source": "/work/shared/data/wikitext-2-raw-v1/test.raw", "n_examples": 1, "seed": 1234, "limit": None,
    "wikitext_tokens": 2048, "max_length": 512, "context": 512, "stride": 512, "batch_size": 4, "threads": 2,
    "trust_remote_code": False, "throughput_batch": "1x256",
}
# benchmarks/test_finetune.py, test_finetune_wikitext
WIKITEXT_FINETUNE = {
    "model_path": "/root/.cache/pytest-genai/models/smollm2-135m-fp32", "text_path":
    "../shared/data/wikitext-2-raw-v1/test.raw", "model_name": "smollm2-135m", "strategy": "ddp", "micro_batch": 1,
    "seq_len": 128, "steps": 8, "eval_blocks": 8, "lr": 1e-4, "seed": 0,
    "id": "smollm2-135m-wikitext-ddp-mb1-s128-8steps", "weights": "pretrained", "world_size": 2,
}


def test_a_quant_row_keeps_its_workload_and_drops_the_data_path_and_threads() -> None:
    split = split_config(QUANT_ROW)
    assert split.environment == {"data_source": QUANT_ROW["data_source"], "threads": 2}
    assert split.identity == {k: v for k, v in QUANT_ROW.items() if k not in ("data_source", "threads")}


def test_a_fine_tune_keeps_world_size_and_moves_its_folders_and_rank_placement() -> None:
    split = split_config(WIKITEXT_FINETUNE)
    assert set(split.environment) == {"model_path", "text_path"}
    assert split.identity["world_size"] == 2 and split.identity["model_name"] == "smollm2-135m"
    throughput = {"model": "llama-like", "strategy": "ddp", "micro_batch": 2, "world_size": 4, "nproc": 2, "nnodes": 2,
                  "sharded": None, "fits": True}
    split = split_config(throughput)
    assert split.environment == {"nproc": 2, "nnodes": 2}  # 2 nodes x 2 ranks or 1 x 4: the same 4-rank workload
    assert split.identity == {"model": "llama-like", "strategy": "ddp", "micro_batch": 2, "world_size": 4,
                              "sharded": None, "fits": True}


def test_nproc_without_a_world_size_is_the_size_of_the_workload() -> None:
    assert split_config({"strategy": "ddp", "nproc": 4}).identity == {"strategy": "ddp", "nproc": 4}


def test_scaling_world_size_is_identity_and_nested_environment_is_split_key_by_key() -> None:
    config = {"strategy": "dp", "world_size": 4, "workload": {"layers": 4, "batch": 8, "threads": 1,
                                                                "cache_dir": "/tmp/cache"}}
    split = split_config(config)
    assert split.identity == {"strategy": "dp", "world_size": 4, "workload": {"layers": 4, "batch": 8}}
    assert split.environment == {"workload": {"threads": 1, "cache_dir": "/tmp/cache"}}
    assert identity_key(config) != identity_key({**config, "world_size": 2})  # 2 ranks vs 4 ranks: two benchmarks


@pytest.mark.parametrize("path", [
    "/home/me/wikitext.raw", "~/data/boolq.jsonl", "./data/x", "../shared/data/hellaswag/validation.jsonl",
    "C:\\data\\boolq.jsonl", "d:/models/smollm2", "\\\\server\\share\\x", "file:///data/x",
])
def test_an_absolute_or_local_path_put_into_an_identity_field_moves_to_the_environment(path) -> None:
    split = split_config({"task": path, "mode": "fp32", "plan": {"sensitivity": path, "bits": 8}})
    assert split.identity == {"mode": "fp32", "plan": {"bits": 8}}
    assert split.environment == {"task": path, "plan": {"sensitivity": path}}


@pytest.mark.parametrize("value", ["bf16/int8", "1x256", "hub:Salesforce/wikitext", "hf://datasets/boolq", "int8",
                                   "L2-h64-a1-s128-b1-fp32-forward", "amp_bf16", "", "a/b"])
def test_workload_strings_are_not_paths(value) -> None:
    assert not looks_like_local_path(value)
    assert split_config({"x": value}).identity == {"x": value}


def test_a_location_key_is_environment_unless_it_names_a_remote_dataset() -> None:
    assert split_config({"data_source": "hub:Salesforce/wikitext"}).identity == {"data_source": "hub:Salesforce/wikitext"}
    assert split_config({"data_source": "shared/data/test.raw"}).environment == {"data_source": "shared/data/test.raw"}
    assert split_config({"checkpoint_dir": "ckpt"}).environment == {"checkpoint_dir": "ckpt"}
    assert split_config({"data_origin": "data dir", "dataset": "wikitext-2-raw-v1", "split": "test",
                         "sha256": "ab" * 32}).identity == {"dataset": "wikitext-2-raw-v1", "split": "test",
                                                           "sha256": "ab" * 32}


def test_a_model_given_as_a_folder_is_named_by_its_last_part() -> None:
    assert split_model("/models/tiny-llama/") == ("tiny-llama", {"model_path": "/models/tiny-llama/"})
    assert split_model("C:\\models\\smollm2") == ("smollm2", {"model_path": "C:\\models\\smollm2"})
    assert split_model("smollm2-135m") == ("smollm2-135m", {})
    assert split_model(None) == (None, {})


def test_differences_never_show_a_whole_path() -> None:
    base = {"data_source": "/work/shared/data/wikitext-2-raw-v1/test.raw", "threads": 2, "cwd": "/work/main"}
    cur = {"data_source": "/mnt/ci/data/wikitext-2-raw-v1/test.raw", "threads": 16, "cwd": "/builds/x/main",
           "cache_dir": "/home/ci/.cache"}
    lines = environment_differences(base, cur)
    assert lines == ["data_source: folder differs (test.raw)", "threads 2 -> 16", "cwd: folder differs (main)",
                     "cache_dir (not recorded) -> .cache"]
    assert not any("/" in line for line in lines)
    assert differences({"data_source": "/a/test.raw"}, {"data_source": "/a/valid.raw"}) == [
        "data_source test.raw -> valid.raw"]
    assert environment_differences(base, dict(base)) == []


def test_data_is_named_by_dataset_and_short_hash_else_by_the_file_name() -> None:
    sha = "0123456789abcdef" * 4
    assert data_label({"dataset": "wikitext-2-raw-v1", "split": "test", "sha256": sha}, {}) == \
        "wikitext-2-raw-v1/test @0123456789ab"
    assert data_label({"task": "boolq"}, {"data_source": "/work/shared/data/boolq/validation.jsonl"}) == \
        "validation.jsonl"
    assert data_label({"data_source": "hub:super_glue"}, {}) == "hub:super_glue"
    assert data_label({"task": "x"}, {"threads": 2}) is None


def test_every_claim_scopes_on_identity_keys() -> None:
    """genai.check scopes claims on the recorded config, which is the identity: a claim's ``where`` on an
    environment key would never apply."""
    from pytest_genai.claims import load_claims

    for claim in load_claims():
        for key, value in (getattr(claim, "where", None) or {}).items():
            assert split_config({key: value}).identity == {key: value}, (claim.id, key)


def test_the_recorder_writes_identity_and_environment_side_by_side(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_benchmark")
    pytester.makepyfile(f"""
def test_row(benchmark, genai, cpu):
    genai.start(experiment="quant", device=cpu, model="/models/tiny-llama", config={QUANT_ROW!r})
    benchmark.pedantic(lambda: None, rounds=1)
    genai.metric("tokens_per_s", 1.0)
""")
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-json", "out.json")
    result.assert_outcomes(passed=1)
    genai = json.loads((pytester.path / "out.json").read_text())["benchmarks"][0]["extra_info"]["genai"]
    assert genai["config"] == {k: v for k, v in QUANT_ROW.items() if k not in ("data_source", "threads")}
    assert genai["environment"] == {"data_source": QUANT_ROW["data_source"], "threads": 2,
                                    "model_path": "/models/tiny-llama"}
    assert genai["model"] == "tiny-llama"


# -- properties ---------------------------------------------------------------------------------------------------

PATHS = st.one_of(
    st.builds(lambda parts, head: head + "/".join(parts),
              st.lists(st.text("abcXYZ019-_. ", min_size=1, max_size=6), min_size=1, max_size=4),
              st.sampled_from(["/", "~/", "./", "../", "C:\\", "d:/", "\\\\srv\\", "file:///"])),
)
WORDS = st.text("abcdefghij_-0123456789:", max_size=8)
KEYS = st.one_of(st.sampled_from(sorted(ENVIRONMENT_KEYS) + ["world_size", "data_source", "model_path", "task",
                                                             "batch", "dtype", "workload", "log_dir"]), WORDS)
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-5, 1 << 20), st.floats(allow_nan=False), WORDS, PATHS,
                   st.lists(st.one_of(WORDS, PATHS), max_size=3))
CONFIGS = st.recursive(st.dictionaries(KEYS, LEAVES, max_size=6),
                       lambda inner: st.dictionaries(KEYS, st.one_of(LEAVES, inner), max_size=5), max_leaves=20)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _without_empty(d):
    return {k: (_without_empty(v) if isinstance(v, dict) else v) for k, v in d.items()
            if not (isinstance(v, dict) and v and not _without_empty(v))}


@settings(max_examples=300, deadline=None)
@given(CONFIGS)
@example({"nnodes": None, "world_size": None})  # found in CI: nnodes is environment only beside world_size
def test_no_identity_holds_a_local_path_and_the_split_loses_nothing(config) -> None:
    split = split_config(config)
    assert not any(looks_like_local_path(s) for s in _strings(split.identity))
    assert split_config(split.identity).identity == split.identity  # the reader's second split changes nothing
    rebuilt = merge_environment(split.identity, split.environment)
    # Re-split in context (nnodes / nproc are environment only beside world_size, so the environment alone may
    # re-split otherwise): the rebuilt config splits exactly as the original did.
    again = split_config(rebuilt)
    assert (again.identity, _without_empty(again.environment)) == (split.identity, _without_empty(split.environment))
    assert json.dumps(_without_empty(rebuilt), sort_keys=True) == json.dumps(_without_empty(config), sort_keys=True)


@settings(max_examples=200, deadline=None)
@given(CONFIGS, st.data())
def test_changing_environment_values_never_changes_the_identity(config, data) -> None:
    environment = split_config(config).environment

    def rehome(env, original):
        out = {}
        for key, value in env.items():
            if isinstance(value, dict) and value and environment_reason(key, value, original) is None:
                out[key] = rehome(value, original[key])
            else:
                # a declared key may take any value (threads 2 -> 16); anything else was moved for being a place
                declared = environment_reason(key, 1, original) is not None
                out[key] = data.draw(st.one_of(st.integers(1, 256), PATHS) if declared else PATHS)
        return out

    moved = merge_environment(config, rehome(environment, config))
    assert identity_key(moved) == identity_key(config)
