"""Make the repo root importable and hand each test a fresh clean period."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run from anywhere: `jobs` and `schemas` live at the repo root
    sys.path.insert(0, str(ROOT))

from period_frames import clean_edges, clean_keygroups, clean_nodes  # noqa: E402


@pytest.fixture
def frames() -> dict[str, pd.DataFrame]:
    return {"keygroups": clean_keygroups(), "edges": clean_edges(), "nodes": clean_nodes()}
