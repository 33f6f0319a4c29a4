"""``--genai-store URL``: this session's run stored after its JSON was written (an unreachable store never costs it)."""
from __future__ import annotations

import os
from typing import Any

from pytest_genai.store.write import Added


def session_command(args: Any) -> str:
    """The pytest command line as stored in ``runs.command``, any password in a URL argument masked."""
    from pytest_genai.store.location import shown_url

    return " ".join(["pytest", *(shown_url(str(a)) for a in args)])


def store_session(config: Any, state: Any, url: str, benchmark_json: str | None) -> Added | None:
    """Add this session's run (the --benchmark-json file, if any) to the store at ``url``; None when none ran."""
    from pytest_genai.plugin.outputs import STDOUT
    from pytest_genai.plugin.session_report import SESSION_SOURCE, session_json
    from pytest_genai.store.engine import open_store
    from pytest_genai.store.write import add_document, add_file

    command = session_command(config.invocation_params.args)
    with open_store(url) as store:
        if benchmark_json and benchmark_json != STDOUT and os.path.isfile(benchmark_json):
            return add_file(store, benchmark_json, command)
        doc = session_json(config, state)
        if not doc.get("benchmarks"):
            return None
        return add_document(store, doc, SESSION_SOURCE, command)
