"""The table of experiments (pytest_genai/experiments.py) against the tree: benchmark files, recorded names,
metrics registries, packages, docs and the README all agree with it."""
import ast
import re
from pathlib import Path

import pytest

from pytest_genai import experiments
from pytest_genai.claims.model import load_claims

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "pytest_genai" / "claims" / "data"


def _recorded_experiments(path: Path) -> set[str]:
    """Every experiment name a benchmark file passes to genai.start (literals or module constants)."""
    tree = ast.parse(path.read_text())
    constants = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "start":
            for kw in node.keywords:
                if kw.arg == "experiment":
                    value = kw.value
                    names.add(value.value if isinstance(value, ast.Constant) else constants.get(value.id, value.id))
    return names


def test_every_benchmark_file_belongs_to_exactly_one_experiment():
    files = sorted(p.name for p in (ROOT / "benchmarks").glob("test_*.py"))
    owners = {f: [e.name for e in experiments.EXPERIMENTS if f in e.benchmarks] for f in files}
    assert {f: o for f, o in owners.items() if len(o) != 1} == {}
    listed = {f for e in experiments.EXPERIMENTS for f in e.benchmarks}
    assert listed <= set(files), f"registered but missing: {sorted(listed - set(files))}"


@pytest.mark.parametrize("experiment", experiments.EXPERIMENTS, ids=lambda e: e.name)
def test_a_benchmark_records_the_experiment_of_its_file(experiment):
    for filename in experiment.benchmarks:
        recorded = _recorded_experiments(ROOT / "benchmarks" / filename)
        # genai.start() without experiment= takes the file's row (pytest_genai.plugin.recorder.GenaiRecorder.start)
        assert recorded <= {experiment.name}, f"{filename} records {recorded}"


def test_every_metrics_file_belongs_to_one_experiment_or_is_shared():
    files = sorted(p.name for p in DATA.glob("metrics_*.toml"))
    owned = [f for e in experiments.EXPERIMENTS for f in e.metrics_files]
    assert len(owned) == len(set(owned))
    assert sorted(owned + list(experiments.SHARED_METRICS_FILES)) == files


@pytest.mark.parametrize("experiment", experiments.EXPERIMENTS, ids=lambda e: e.name)
def test_an_experiment_s_own_metrics_file_carries_its_name(experiment):
    # one name everywhere: the experiment recorded in the JSON names its metrics file (metrics_<name>.toml)
    assert f"metrics_{experiment.name}.toml" in experiment.metrics_files


@pytest.mark.parametrize("experiment", experiments.EXPERIMENTS, ids=lambda e: e.name)
def test_packages_and_docs_exist_and_the_readme_links_them(experiment):
    readme = (ROOT / "README.md").read_text()
    for package in experiment.packages:
        assert (ROOT / package / "__init__.py").is_file(), package
    row = next((line for line in readme.splitlines() if line.startswith(f"| {experiment.section} ")), None)
    assert row is not None, f"README's experiments table has no {experiment.section} row"
    for page in experiment.docs:
        assert (ROOT / "docs" / page).is_file()
        assert f"(docs/{page})" in row
    for filename in experiment.benchmarks:
        assert f"`{filename}`" in row
    assert f"`{experiment.marker}`" in row


def test_the_readme_table_has_no_row_the_registry_lacks():
    readme = (ROOT / "README.md").read_text()
    sections = re.findall(r"^\| ([AB]\d) ", readme, flags=re.M)
    assert sorted(sections) == sorted(e.section for e in experiments.EXPERIMENTS)


def test_claims_name_registered_experiments_only():
    assert {c.experiment for c in load_claims() if c.experiment} <= set(experiments.NAMES)


def test_markers_and_lookup():
    assert set(experiments.markers()) == {"quant", "finetune", "diffusion", "dabench"}
    assert experiments.get("dabench_level2").section == "B2"
    assert experiments.label("quant") == "A1 quant" and experiments.label(None) == "pytest-benchmark"
    assert experiments.label("toy") == "toy"
    with pytest.raises(ValueError, match="unknown experiment 'quantization'; registered: quant, "):
        experiments.get("quantization")


def test_a_registered_benchmark_file_gets_its_marker_without_marking_itself(pytester):
    bench = pytester.mkdir("benchmarks")
    (bench / "test_quantizer.py").write_text("def test_plain():\n    pass\n")
    (bench / "test_other.py").write_text("def test_unregistered():\n    pass\n")
    result = pytester.runpytest("benchmarks", "-m", "quant", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1, deselected=1)


def test_claims_scope_only_on_config_keys_a_real_run_records():
    """Every registered config key is recorded by the experiment's benchmarks in the suite's CPU reference runs
    (keys of device-only configs are listed here with the reason)."""
    import gzip
    import json

    runs = [json.loads((ROOT / "docs/results/2026-11-30-cpu-amd-epyc-2vcpu/out.json").read_text()),
            json.loads(gzip.decompress((ROOT / "tests/report/realistic_run.json.gz").read_bytes()))]
    recorded: dict[str, set] = {}
    for run in runs:
        for bench in run["benchmarks"]:
            genai = bench.get("extra_info", {}).get("genai", {})
            recorded.setdefault(genai.get("experiment"), set()).update(genai.get("config") or {})
    for experiment in experiments.EXPERIMENTS:
        missing = set(experiment.config_keys) - recorded.get(experiment.name, set())
        assert not missing, f"{experiment.name}: {sorted(missing)} are registered but no reference run records them"


def test_the_readme_stays_under_10_kb_and_ci_runs_its_test_command():
    # the brief: a README under 10 KB whose test command is exactly what .ci/run runs
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) < 10_000, f"README.md is {len(readme)} bytes; move detail to docs/ to keep it under 10 KB"
    blocks = re.findall(r"```bash\n(.*?)\n```", readme.decode(), flags=re.S)
    assert blocks[1] == "python3 -m pytest tests benchmarks"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    at = ci.index("# --- the README's test command ---")
    assert ci[at + 1] == f"{blocks[1]} || status=$?"
    # and the slow set the default run leaves out, which the README names
    assert ci[at + 3] == f"{blocks[1]} -m slow || status=$?" and ci[-1] == 'exit "$status"'
    assert "-m slow" in readme.decode() and "'not slow'" in (ROOT / "pyproject.toml").read_text()


LIST_PLUGIN = '''
import json


def pytest_collection_finish(session):
    rows = [{"id": item.nodeid, "selfcheck": item.get_closest_marker("selfcheck") is not None,
             "extension": item.get_closest_marker("extension") is not None,
             "claims": [c for m in item.iter_markers("claims") for c in m.args]} for item in session.items]
    print("ITEMS=" + json.dumps(rows))
'''


def test_leaving_out_the_selfchecks_and_extensions_keeps_every_paper_claim_of_the_cpu_run(tmp_path):
    """``-m 'cpu and not selfcheck and not extension'`` (the README's main job: the papers' experiments alone) drops
    only the suite's comparisons with other tools and bare code paths and the A1 rows beyond the paper's plan: every
    paper and physics claim of the CPU run is still checked by some benchmark, and every fp32 / fake / real row runs."""
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "genai_list_items.py").write_text(LIST_PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-m", "cpu", "--collect-only", "-q",
                          "-p", "genai_list_items", "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    line = next((x for x in out.stdout.splitlines() if x.startswith("ITEMS=")), None)
    assert line, out.stdout[-2000:] + out.stderr[-2000:]
    items = json.loads(line[len("ITEMS="):])
    selfchecks = {i["id"].split("::")[1].split("[")[0] for i in items if i["selfcheck"]}
    assert selfchecks == {"test_wikitext_word_perplexity_and_speed_vs_lm_eval",
                          "test_multiple_choice_accuracy_and_speed_vs_lm_eval",
                          "test_quantizer_speed_and_memory_vs_torchao_and_inc", "test_sensitivity_analysis_bandwidth",
                          "test_launcher_vs_bare_cpu", "test_timer_path_vs_bare_cpu"}
    extensions = [i["id"].split("[")[1] for i in items if i["extension"]]
    # exactly the extra methods: an explicit tier pair, an FP8 compute backend or pruning, on every task
    assert extensions and all("bf16-fp8_e4m3" in x or "pruned" in x for x in extensions), extensions
    assert all(i["id"].split("::")[1].startswith("test_quantized_model_quality[") for i in items if i["extension"])
    plan = [i["id"] for i in items if "test_quantized_model_quality[" in i["id"] and not i["extension"]]
    assert {x.split("-cpu-")[1].split("]")[0] for x in plan} == {
        f"{mode}-{task}" for mode in ("fp32", "fake", "real") for task in ("wikitext", "hellaswag", "boolq")}
    basis = {c.id: c.basis for c in load_claims()}
    kept = {c for i in items if not (i["selfcheck"] or i["extension"]) for c in i["claims"]}
    for item in items:
        if item["selfcheck"] or item["extension"]:
            lost = {c for c in item["claims"] if basis[c] != "target" and c not in kept}
            assert not lost, f"{item['id']} is the only CPU benchmark checking {sorted(lost)}"
