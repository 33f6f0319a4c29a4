#!/usr/bin/env bash
# The CUDA benchmarks as one prepared run, for a session that is lent a GPU machine (the `device` tool, ~15 min of
# device time in all). Run it there from the repository root:
#
#     bash scripts/cuda_session.sh            # writes under $OUT (the device tool's result folder)
#
# That machine has torch, transformers, pytest, pytest-benchmark and hypothesis but no network: this project is
# installed without dependencies, and whatever else is absent (lm-eval, deepspeed, torchao, INC, gguf) makes its
# rows skip with the reason. The embedded SmolLM2 GGUF (93 MiB) is over the tool's 64 MiB carry limit, so the
# pretrained-model evaluations (quant x task rows) are not run there; the rest is: DABench Level 1 and the in-process
# Level 2 deployment sweeps, diffusion training, fine-tuning of the tiny-random architectures, and the quantizer's
# speed and memory. Everything the runs measure stays in $OUT: cuda.json (pytest-benchmark JSON, extended),
# report.md, the log, and nvidia-smi's view. Copy them to docs/results/<date>-cuda-<gpu>/ with a README saying
# the date, device, commit and command.
set -uo pipefail
OUT=${OUT:-/tmp/genai-cuda}
KIND=${GENAI_KIND:-cuda}   # GENAI_KIND=cpu GENAI_SELECT=diffusion: a dry run of this script on a CPU machine
SELECT=(${GENAI_SELECT:+-k "$GENAI_SELECT"})
PLUGIN=()
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$OUT/nvidia-smi.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 || {
    echo "editable install failed (see install.log); using PYTHONPATH and -p pytest_genai.plugin"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
    PLUGIN=(-p pytest_genai.plugin)
}
python3 - <<'PY' | tee "$OUT/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
PY
git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null || true
# 8 minutes at most for the benchmarks, so a second try still fits the session's device time.
timeout 480 python3 -m pytest benchmarks "${PLUGIN[@]}" -m "$KIND and not quant" "${SELECT[@]}" -p no:cacheprovider \
    --benchmark-json "$OUT/cuda.json" -q 2>&1 | tee "$OUT/log.txt"
rc=${PIPESTATUS[0]}
timeout 120 python3 -m pytest benchmarks/test_quantizer.py "${PLUGIN[@]}" -m "$KIND" "${SELECT[@]}" -p no:cacheprovider \
    --benchmark-json "$OUT/cuda_quantizer.json" -q 2>&1 | tee "$OUT/log_quantizer.txt"
python3 -m pytest_genai.cli report "$OUT/cuda.json" -o "$OUT/report.md" > /dev/null 2>&1 || true
echo "benchmarks exit code: $rc"
exit "$rc"
