"""Key -> key group is Flink's formula, stable across processes (Python's hash is salted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.replay.geohash import encode
from runtime.replay.hashing import (
    alt_key_group,
    flink_murmur,
    java_string_hash,
    key_group,
    key_groups,
)

ROOT = Path(__file__).resolve().parents[3]
# Computed with jshell (OpenJDK) running Flink's MathUtils.murmurHash on String.hashCode().
JAVA = [("N14228", -2015042201, 890727078, 78, 38), ("N24211", -2014118718, 142246326, 26, 54),
        ("EWR-IAH", -618877757, 1971074958, 58, 14), ("UA1545", -1799948239, 414420728, 28, 120),
        ("", 0, 593689054, 54, 94), ("a", 97, 1455541201, 1, 81),
        ("dr5r7>LAX", -430410703, 1614925554, 54, 114), ("N0EGMQ", -2015438232, 998313627, 27, 27)]
KEYS = [row[0] for row in JAVA] + [f"N{i}XY" for i in range(50)]


@pytest.mark.parametrize(("key", "java", "murmur", "kg100", "kg128"), JAVA)
def test_matches_java_and_flink(key: str, java: int, murmur: int, kg100: int, kg128: int) -> None:
    assert java_string_hash(key) == java
    assert flink_murmur(java) == murmur
    assert key_group(key, 100) == kg100
    assert key_group(key, 128) == kg128


def test_murmur_of_an_int_and_non_ascii_keys() -> None:
    assert flink_murmur(2) == 1085422463
    assert java_string_hash("é") == 233  # one UTF-16 code unit
    assert java_string_hash("😀") == 1772899  # a surrogate pair: two code units


def test_same_key_groups_in_another_process_with_another_hash_seed() -> None:
    code = ("import json, sys; from runtime.replay.hashing import key_groups; "
            f"print(json.dumps([key_groups({KEYS!r}, 100).tolist(), "
            f"key_groups({KEYS!r}, 100, seed=7).tolist()]))")
    here = [key_groups(KEYS, 100).tolist(), key_groups(KEYS, 100, seed=7).tolist()]
    for salt in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": salt, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout
        assert json.loads(out) == here


def test_potc_candidate_differs_and_depends_on_the_seed() -> None:
    first = key_groups(KEYS, 100)
    second = key_groups(KEYS, 100, seed=1)
    assert (first != second).mean() > 0.9
    assert [alt_key_group(k, 100, 1) for k in KEYS] == second.tolist()
    assert second.tolist() != key_groups(KEYS, 100, seed=2).tolist()
    with pytest.raises(ValueError, match="max_parallelism"):
        key_group("x", 0)


def test_geohash() -> None:
    assert encode(57.64911, 10.40744, 11) == "u4pruydqqvj"  # the Wikipedia example
    assert encode(40.6925, -74.168667) == "dr5r2"  # EWR
    with pytest.raises(ValueError, match="coordinate"):
        encode(float("nan"), 0.0)
