"""Make the project root importable when pytest is run as a script (not `python -m pytest`)."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from hypothesis import settings  # noqa: E402

# No example database: the suite must not leave a .hypothesis/ folder in the work tree.
settings.register_profile("placement", database=None)
settings.load_profile("placement")
