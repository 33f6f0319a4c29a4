"""``pytest-genai cache info|clear``: what the cache holds -- converted models (:mod:`pytest_genai.evals.models`) and
compiled kernels (:mod:`pytest_genai.runtime.native`) -- and emptying it. Only what the cache recognises is listed
or removed; a conversion or compile in progress is never removed."""
from __future__ import annotations

import argparse
import json
import sys
import time

from pytest_genai.evals.models import CacheEntry, cache_entries, cache_root, clear_cache
from pytest_genai.runtime import native


def size_text(n: int) -> str:
    """Bytes in binary units with 3-4 significant digits (``517 MiB``, ``1.01 GiB``)."""
    value, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{n} B" if unit == "B" else f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def _entries_text(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _entry_json(e: CacheEntry) -> dict:
    return {"name": e.name, "path": str(e.path), "source": e.source, "size_bytes": e.size_bytes, "sha256": e.sha256,
            "converted_from": e.converted_from, "created": e.created, "in_progress": e.in_progress,
            "last_used": e.last_used}


def info(as_json: bool) -> int:
    root = cache_root()
    entries = cache_entries(root)
    done = [e for e in entries if not e.in_progress]
    busy = [e for e in entries if e.in_progress]
    if as_json:
        kernels = native.cached_libraries(root)
        print(json.dumps({"location": str(root), "total_bytes": sum(e.size_bytes for e in entries),
                          "entries": [_entry_json(e) for e in entries],
                          "compiled_kernels": [{"path": str(k), "size_bytes": k.stat().st_size} for k in kernels]},
                         indent=2))
        return 0
    exists = "" if root.is_dir() else " (does not exist yet)"
    print(f"location: {root}{exists} (set PYTEST_GENAI_CACHE to move it)")
    print(f"{_entries_text(len(done))}, {size_text(sum(e.size_bytes for e in done))}"
          + (f"; {len(busy)} conversion(s) in progress, {size_text(sum(e.size_bytes for e in busy))}" if busy else ""))
    kernels = native.cached_libraries(root)
    if kernels:
        print(f"compiled kernels: {len(kernels)}, {size_text(sum(k.stat().st_size for k in kernels))} "
              f"in {root / 'native'} (rebuilt on first use)")
    for e in entries:
        used = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(e.last_used)) if e.last_used else "?"
        when = "in progress" if e.in_progress else f"created {e.created or '?'}, last used {used}"
        print(f"\n{e.name}  {size_text(e.size_bytes)}  {when}")
        origin = f", converted from {e.converted_from}" if e.converted_from else ""
        sha = f" (sha256 {e.sha256[:16]})" if e.sha256 else ""
        print(f"  source {e.source}{origin}{sha}")
    return 0


def clear() -> int:
    root = cache_root()
    removed, kept = clear_cache(root)
    kernels = native.clear_libraries(root)
    parts = []
    if removed:
        parts.append(f"{_entries_text(len(removed))} ({size_text(sum(e.size_bytes for e in removed))})")
    if kernels:
        n = len(kernels)
        parts.append(f"{n} compiled kernel{'' if n == 1 else 's'} ({size_text(sum(s for _, s in kernels))})")
    line = (f"pytest-genai cache: removed {' and '.join(parts)} from {root}" if parts
            else f"pytest-genai cache: nothing to remove in {root}")
    if kept:
        line += f"; left {len(kept)} conversion(s) another process is still writing"
    print(line)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pytest-genai cache",
                                     description="the model-conversion cache ($PYTEST_GENAI_CACHE or "
                                                 "~/.cache/pytest-genai): one converted model per source")
    sub = parser.add_subparsers(dest="action", required=True, metavar="{info,clear}")
    p_info = sub.add_parser("info", help="location, entries, sizes and what each was converted from")
    p_info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sub.add_parser("clear", help="remove every entry and compiled kernel (conversions in progress are left alone)")
    args = parser.parse_args(argv)
    return info(args.json) if args.action == "info" else clear()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
