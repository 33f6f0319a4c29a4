"""Keep the reliability tests honest: break one guarded behaviour at a time in a scratch copy of the repository and
expect its tests to fail. Exit 0 when every mutation was caught, 1 otherwise (and say which survived).

    python3 scripts/mutation_check.py            # all mutations
    python3 scripts/mutation_check.py atomic     # one

Each mutation is a literal replacement in one file (it must match exactly once, so the check notices when the code
it targets moves) and the test files that must catch it. Run from the repository root; about 2-4 minutes on 2 cores.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("atomic", "pytest_genai/atomic.py", "        os.replace(tmp, path)\n",
             "        path.write_bytes(open(tmp, 'rb').read()); os.unlink(tmp)\n",  # a plain, non-atomic write
             ("tests/test_atomic.py",)),
    Mutation("stray-workers", "pytest_genai/runtime/processes.py",
             " and proc_env_has(int(entry), needle)]\n",
             " and False]\n",  # workers found only as descendants
             ("tests/runtime/test_launcher.py",)),
    Mutation("gate-nan", "pytest_genai/report/compare.py",
             "    if current is not None and not math.isfinite(current) and direction in _DIRECTED:\n",
             "    if False:\n",  # nan/inf in the current run no longer fails by itself
             ("tests/report/test_reliability.py", "tests/report/test_gate.py")),
    Mutation("timing-interval", "pytest_genai/claims/check.py",
             "    if out != _outside(claim, interval.hi):  # the interval crosses a bound\n",
             "    if False:\n",  # an interval straddling the bound would be judged by its lower end
             ("tests/claims/test_verdicts.py",)),
    Mutation("benchmark-json-atomic", "pytest_genai/plugin/outputs.py",
             "            write_bytes_atomic(self.path, self._buffer.getvalue())\n",
             "            open(self.path, 'wb').write(self._buffer.getvalue())\n",  # --benchmark-json written in place
             ("tests/plugin/test_outputs.py",)),
    Mutation("output-is-input", "pytest_genai/plugin/outputs.py",
             "        if path and path != STDOUT and same_path(output, path):\n",
             "        if False:\n",  # `report/compare/gate -o` may overwrite the run it reads
             ("tests/plugin/test_outputs.py", "tests/report/test_reliability.py")),
    Mutation("duplicate-keys", "pytest_genai/report/matching.py",
             "    groups = duplicate_groups(run.records)\n    if not groups:\n",
             "    groups = duplicate_groups(run.records)\n    if True:\n",  # two benchmarks with one key pass the gate
             ("tests/report/test_reliability.py", "tests/report/test_gate.py")),
    Mutation("unknown-threshold", "pytest_genai/report/thresholds.py",
             "        unknown = self.unknown_names(metrics, experiments)\n        if not unknown:\n",
             "        unknown = self.unknown_names(metrics, experiments)\n        if True:\n",  # typos fall to defaults
             ("tests/report/test_thresholds.py", "tests/report/test_reliability.py")),
    Mutation("claims-devices", "pytest_genai/claims/model.py",
             "    bad = [d for d in devices if d not in KINDS and d not in generations]\n    if bad:\n",
             "    bad = [d for d in devices if d not in KINDS and d not in generations]\n    if False:\n",  # a 'gaudi9' claim never applies
             ("tests/claims/test_claims.py",)),
    Mutation("scale-parse", "pytest_genai/plugin/options.py",
             "    if scale not in SCALES:\n",
             "    if False:\n",  # a --genai-scale typo is no longer a usage error at configure
             ("tests/test_scales.py",)),
    Mutation("scan-kernel", "pytest_genai/quant/csrc/scan.c",
             "            above_f += (x > hi) ? 1.0f : 0.0f;\n",
             "            above_f += (x >= hi) ? 1.0f : 0.0f;\n",  # the portable scan counts a tie as above the bracket
             ("tests/quant/test_threshold.py",)),
    Mutation("select-kernel", "pytest_genai/quant/csrc/scan.c",
             "    while (*k >= hist[j]) *k -= hist[j++];\n",
             "    while (*k > hist[j]) *k -= hist[j++];\n",  # the radix selection stops one bucket early on ties
             ("tests/quant/test_threshold.py",)),
    Mutation("int8-kernel", "pytest_genai/quant/csrc/int8.c",
             "            float c = nearbyintf(p[i] / s);\n",
             "            float c = roundf(p[i] / s);\n",  # ties away from zero instead of torch's ties to even
             ("tests/quant/test_codecs.py",)),
    Mutation("parent-death", "pytest_genai/runtime/processes.py",
             "            prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG\n",
             "            pass\n",  # torchrun outlives a SIGKILLed pytest unless something else reaps it
             ("tests/runtime/test_processes.py", "tests/runtime/test_launcher.py")),
    Mutation("sigterm", "pytest_genai/runtime/processes.py",
             "            self.previous = signal.signal(signal.SIGTERM, handler)\n",
             "            pass\n",  # SIGTERM ends pytest without tearing the job down first
             ("tests/runtime/test_processes.py", "tests/runtime/test_launcher.py")),
    Mutation("broken-probe", "pytest_genai/devices/probes.py",
             '        return _broken(kind, f"{type(exc).__name__}: {exc}")\n',
             '        return ProbeResult(kind, reason=f"probe failed: {exc}")\n',  # a failing driver reads as absent
             ("tests/devices/test_devices.py", "tests/plugin/test_plugin.py")),
    Mutation("hpu-mark-step", "pytest_genai/diffusion/train.py",
             "    mark_step = graph_break(device)\n",
             "    mark_step = lambda: None  # noqa: E731\n",  # Gaudi lazy mode never flushes its graph
             ("tests/diffusion/test_hpu_lazy_mode.py",)),
    Mutation("ipu-bound", "pytest_genai/dabench/readers/graphcore.py",
             "        return None if fraction is None else sum(self.compute) >= sum(self.movement)\n",
             "        return None if fraction is None else sum(self.compute) <= sum(self.movement)\n",  # bound flipped
             ("tests/dabench/test_readers.py", "tests/dabench/test_vendor_artifacts.py")),
    Mutation("ipu-min-failing", "pytest_genai/dabench/capacity.py",
             "    return min(failing) if failing else None\n",
             "    return max(failing) if failing else None\n",  # "some config fails" read as "every config fails"
             ("tests/dabench/test_vendor_artifacts.py",)),
    Mutation("batch-linearity", "pytest_genai/dabench/level2/artifacts.py",
             "    return (samples_per_s[hi] / samples_per_s[lo]) / (batches[hi] / batches[lo])\n",
             "    return samples_per_s[hi] / samples_per_s[lo]\n",  # a throughput gain read as linear scaling
             ("tests/dabench/test_vendor_artifacts.py",)),
    Mutation("o3-li-trend", "pytest_genai/dabench/balance.py",
             "    (_, shallow), (_, deep) = known[0], known[-1]\n",
             "    (_, deep), (_, shallow) = known[0], known[-1]\n",  # a falling balance read as rising
             ("tests/dabench/test_vendor_artifacts.py",)),
)


def run(mutation: Mutation) -> bool:
    """True when the mutation was caught (its tests failed)."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutation.name}-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".benchmarks",
                                                                   ".hypothesis", "plots", "out.json"))
        target = copy / mutation.file
        text = target.read_text(encoding="utf-8")
        if text.count(mutation.old) != 1:
            print(f"{mutation.name}: the code it breaks is not in {mutation.file} exactly once; update the mutation")
            return False
        target.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
        if missing := [t for t in mutation.tests if not (copy / t).exists()]:
            print(f"{mutation.name}: its test file(s) {', '.join(missing)} do not exist; update the mutation")
            return False
        # -m "": the tests that catch the process mutations are slow ones, which pyproject's addopts deselects
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-m", "", "-p", "no:cacheprovider",
                               *mutation.tests],
                              cwd=copy, capture_output=True, text=True)
        caught = proc.returncode == 1
        last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{mutation.name}: {'caught' if caught else 'SURVIVED'} ({last})")
        return caught


def main(argv: list[str] | None = None) -> int:
    names = sys.argv[1:] if argv is None else argv
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    if names and len(chosen) != len(names):
        print(f"unknown mutation(s); known: {', '.join(m.name for m in MUTATIONS)}", file=sys.stderr)
        return 2
    return 0 if all([run(m) for m in chosen]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
