"""``--genai-report PATH``: this session's report, written at its end (failed tests included).

Rendered as ``pytest-genai report RUN.json`` renders the document ``--benchmark-json`` would receive, so both show the
same run the same way; without an active pytest-benchmark, from the plugin's own records.
"""
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
        output = config.hook.pytest_benchmark_generate_json(
            config=config, benchmarks=bs.benchmarks, include_data=False, machine_info=bs.get_machine_info(),
            commit_info=commit_info,
        )
        config.hook.pytest_benchmark_update_json(config=config, benchmarks=bs.benchmarks, output_json=output)
        return output
    return {
        "machine_info": {"genai": state.machine_info()},
        "benchmarks": list(state.records),
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }


def render_session_report(doc: dict[str, Any], source: str, path: Path, images: Sequence[Path], state: Any) -> str:
    """The report of ``doc`` for the file ``path`` (format from its suffix; Markdown links relative to it)."""
    from pytest_genai.report.plots import PlotsUnavailable, write_plots
    from pytest_genai.claims import claims_by_id, default_metric_info
    from pytest_genai.report.render import render
    from pytest_genai.results.runs import run_from_json

    run = run_from_json(doc, source)
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
        return render(run, info, claims, shown, notes, "html" if html else "md", path.parent)


def write_session_report(config: Any, state: Any, path: str | Path, images: Sequence[Path] = (),
                         benchmark_json: str | None = None) -> Path:
    """Render this session's report and write it atomically to ``path``; ``images``: the --genai-plots PNGs;
    ``benchmark_json`` names the run in the heading."""
    from pytest_genai.atomic import write_text_atomic
    from pytest_genai.plugin.outputs import STDOUT

    path = Path(path)
    source = benchmark_json if benchmark_json and benchmark_json != STDOUT else SESSION_SOURCE
    text = render_session_report(session_json(config, state), source, path, images, state)
    return write_text_atomic(path, text)
