"""Both assignment clients on the shared vectors: runtime/client.py and the Java ManifestClient
(run through its `VectorCheck` main on the Maven-built classpath) reach the expected outcome on
every case, hence agree with each other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from runtime.kafka_streams.build import java_argv
from tests.kafka.vectors import VECTORS, load, python_outcome

CASES = sorted(VECTORS.glob("*.json"))


def test_there_are_vectors_of_every_outcome() -> None:
    outcomes = {load(p)["expect"] for p in CASES}
    assert {"apply", "unchanged", "nothing", "CorruptManifest", "ChecksumMismatch",
            "StaleVersion", "UnknownKeygroups", "MissingKeygroups", "UnknownNodes",
            "TerminatedNodeInUse"} <= outcomes


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_python_client_on_vector(path: Path, tmp_path: Path) -> None:
    vector = load(path)
    assert python_outcome(vector, tmp_path) == vector["expect"]


@pytest.mark.kafka
def test_java_client_agrees_with_python(tmp_path: Path) -> None:
    out = subprocess.run(java_argv("dev.reconf.kstreams.VectorCheck", str(VECTORS)),
                         capture_output=True, text=True, timeout=120, check=True)
    java = json.loads(out.stdout)
    python = {p.stem: python_outcome(load(p), tmp_path / p.stem) for p in CASES}
    assert java == python
    assert len(java) == len(CASES)
