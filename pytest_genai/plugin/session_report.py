"""``--genai-report PATH``: this session's report at its end, rendered as ``pytest-genai report`` renders its JSON."""
from __future__ import annotations

import datetime
import tempfile
from pathlib import Path
from typing import Any, Sequence

HTML_SUFFIXES = (".html", ".htm")
SESSION_SOURCE = "pytest session"


def session_json(config: Any, state: Any) -> dict[str, Any]:
    """This session's run as pytest-benchmark JSON (the document ``--benchmark-json`` receives)."""
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None and not getattr(bs, "disabled", False):
        commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
        config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
        output = config.hook.pytest_benchmark_generate_json(config=config, benchmarks=bs.benchmarks, include_data=False,
                                                            machine_info=bs.get_machine_info(), commit_info=commit_info)
        config.hook.pytest_benchmark_update_json(config=config, benchmarks=bs.benchmarks, output_json=output)
        return output
    return {"machine_info": {"genai": state.machine_info()}, "benchmarks": list(state.records),
            "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat()}


def write_session_report(config: Any, state: Any, path: str | Path, images: Sequence[Path] = (),
                         benchmark_json: str | None = None) -> Path:
    """Write this session's report atomically to ``path`` (format from its suffix; Markdown links relative to it),
    with the --genai-plots ``images``; ``benchmark_json`` names the run in the heading."""
    from pytest_genai.atomic import write_text_atomic
    from pytest_genai.claims import claims_by_id, default_metric_info
    from pytest_genai.plugin.outputs import STDOUT
    from pytest_genai.report.plots import PlotsUnavailable, write_plots
    from pytest_genai.report.render import render
    from pytest_genai.results.runs import run_from_json

    path = Path(path)
    run = run_from_json(session_json(config, state), benchmark_json if benchmark_json not in (None, "", STDOUT)
                        else SESSION_SOURCE)
    info, _ = default_metric_info()
    claims, warning = claims_by_id(state.claims)
    notes = [warning] if warning else []
    if not run.records:
        absent = "".join(f"; {kind}: {why}" for kind, why in run.absent.items())
        notes.append("no benchmark ran in this session — check the -m/-k selection, and that benchmarks were not "
                     f"disabled or skipped{absent}")
    html = path.suffix.lower() in HTML_SUFFIXES
    with tempfile.TemporaryDirectory(prefix="pytest-genai-plots-") as tmp:
        shown = list(images)
        if html and not shown and run.records:  # as `pytest-genai report -o x.html`: the page embeds its plots
            try:
                shown = write_plots(run.records, Path(tmp), info)
            except PlotsUnavailable as exc:
                notes.append(str(exc))
        return write_text_atomic(path, render(run, info, claims, shown, notes, "html" if html else "md", path.parent))
