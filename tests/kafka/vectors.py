"""The shared manifest vectors (tests/kafka/vectors/, written by make_vectors.py): lay one out on
disk and run runtime/client.py's rules over it, the way the Java ManifestClient does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime.client import AssignmentClient, AssignmentRefused

VECTORS = Path(__file__).parent / "vectors"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def lay_out(vector: dict[str, Any], root: Path) -> Path:
    """Write the vector's published files under `root/<job>/`; returns `root`."""
    job_dir = root / vector["job_id"]
    job_dir.mkdir(parents=True, exist_ok=True)
    for name, body in vector["files"].items():
        text = body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False)
        (job_dir / name).write_text(text, encoding="utf-8")
    return root


def python_outcome(vector: dict[str, Any], root: Path) -> str:
    """apply / unchanged / nothing, or the refusal's class name."""
    client = AssignmentClient(lay_out(vector, root), vector["job_id"])
    try:
        manifest = client.fetch_latest()
        if manifest is None:
            return "nothing"
        fresh = client.accept(manifest, current_version=vector["current_version"],
                              known_keygroups=set(vector["known_units"]),
                              known_nodes=set(vector["known_nodes"]))
    except AssignmentRefused as exc:
        return type(exc).__name__
    return "apply" if fresh else "unchanged"
