"""Both assignment clients on the shared vectors: runtime/client.py and the Java ManifestClient
(run through its `VectorCheck` main on the Maven-built classpath) reach the expected outcome on
every case, hence agree with each other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.kafka_streams.build import java_argv
from schemas.manifest import assignment_checksum
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


_ASSIGNMENTS = st.lists(st.dictionaries(st.text(max_size=12), st.text(min_size=1, max_size=12),
                                        max_size=8), min_size=20, max_size=40)


@pytest.mark.kafka
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=_ASSIGNMENTS)
def test_java_checksum_is_pythons_for_any_assignment(batch: list[dict[str, str]],
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    """The canonical bytes agree for any keys and nodes (quotes, backslashes, control
    characters, non-ASCII, astral code points): the checksum never refuses an honest manifest."""
    path = tmp_path_factory.mktemp("checksums") / "batch.json"
    path.write_text(json.dumps(batch, ensure_ascii=False), encoding="utf-8")
    out = subprocess.run(java_argv("dev.reconf.kstreams.VectorCheck", "--checksums", str(path)),
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == [assignment_checksum(a) for a in batch]


@pytest.mark.kafka
def test_java_checksum_of_a_large_assignment_is_pythons(tmp_path: Path) -> None:
    """Past one hashing block (65,536 characters of canonical JSON; `Manifest.checksumOf` hashes
    a block at a time): 30,000 units, ids with quotes, non-ASCII and astral code points."""
    marks = ("", "é", "😀", '"', "\\")
    big = {f"op{i % 7}-kg{i:06d}" + marks[i % 5]: f"node-{i % 97:03d}" for i in range(30_000)}
    path = tmp_path / "big.json"
    path.write_text(json.dumps([big, dict(sorted(big.items()))], ensure_ascii=False),
                    encoding="utf-8")
    out = subprocess.run(java_argv("dev.reconf.kstreams.VectorCheck", "--checksums", str(path)),
                         capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == [assignment_checksum(big)] * 2
