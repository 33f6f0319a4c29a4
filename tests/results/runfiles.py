"""tests/report/runfiles.py's run builders, loaded by path: one test package cannot import another."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("genai_runfiles", Path(__file__).parents[1] / "report" / "runfiles.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
bench, run_doc, write_run = _module.bench, _module.run_doc, _module.write_run
