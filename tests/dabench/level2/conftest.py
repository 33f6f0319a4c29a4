import sys
from pathlib import Path

# threadgroup.py is a test helper next to the tests (imported as a plain module under --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))
