#!/usr/bin/env bash
# The Gaudi-stack CI leg: optimum-habana 1.21 and what it pins, neural-compressor-pt, peft and DeepSpeed, in their own
# virtual environment (ci/constraints-gaudi.txt, the lock the README's Gaudi line uses), running the real library code
# on the CPU with the stand-in bridge of tests/gaudi_standin (its docstring says what it is). tests/gaudi_leg says
# what runs and where each path stops without a card; docs/devices.md lists it. .ci/run calls this after its two runs.
# About 5 minutes on 2 shared cores at dbaac5d (install 61 s with downloads, 13 tests 231 s; load 3 falling to 1).
#   GENAI_GAUDI_VENV  where the venv goes (default: a fresh folder under ${TMPDIR:-/tmp}, removed at the end)
#   PYTHON            the interpreter whose site-packages (torch, this checkout's CI install) the venv sees
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1
start=$(date +%s)
venv=${GENAI_GAUDI_VENV:-}
if [ -z "$venv" ]; then
  venv=$(mktemp -d "${TMPDIR:-/tmp}/genai-gaudi-leg.XXXXXX")
  trap 'rm -rf "$venv"' EXIT
fi
# --system-site-packages: the base environment's CPU torch is reused, never downloaded again
"${PYTHON:-python3}" -m venv --system-site-packages "$venv"
# torch pinned to the base environment's CI lock: a bare torch requirement would pull a multi-GB CUDA build
grep -E '^torch==' ci/constraints.txt > "$venv/torch-pin.txt"
# torchvision: optimum-habana imports its transforms
"$venv/bin/python" -m pip install -q -c ci/constraints-gaudi.txt -c "$venv/torch-pin.txt" \
  -e ".[hpu]" neural-compressor-pt deepspeed torchvision
echo "gaudi leg: installed in $(( $(date +%s) - start )) s"
# the venv's pip first on PATH: optimum.habana reads the bridge's version from `pip list` at import;
# DeepSpeed picks its HPU accelerator when habana_frameworks imports, and the stand-in has no card.
# Besides tests/gaudi_leg, A1's two WikiText rows of the embedded model (fp32 and real mode) under transformers 4.55,
# with a cache of their own so the GGUF conversion runs under 4.55 too. -m "": both the slow rows and the others.
a1="benchmarks/test_quantization.py::test_quantized_model_quality"
status=0
PATH="$venv/bin:$PATH" PYTHONPATH="$PWD/tests/gaudi_standin${PYTHONPATH:+:$PYTHONPATH}" DS_ACCELERATOR=cpu \
  PYTEST_GENAI_CACHE="$venv/genai-cache" \
  "$venv/bin/python" -m pytest tests/gaudi_leg "$a1[smollm2-135m-cpu-fp32-wikitext]" \
  "$a1[smollm2-135m-cpu-real-wikitext]" -m "" -p no:cacheprovider "$@" || status=$?
echo "gaudi leg: $(( $(date +%s) - start )) s in all"
exit "$status"
