"""Key -> key group, stable across processes and machines, as Apache Flink computes it.

Flink assigns a key to a key group with ``murmurHash(key.hashCode()) % maxParallelism``
(``KeyGroupRangeAssignment.computeKeyGroupForKeyHash``). We do the same for string keys:
Java's ``String.hashCode`` (31-polynomial over UTF-16 code units, 32-bit wrap-around), then
Flink's ``MathUtils.murmurHash`` (the Murmur3 32-bit mix of one int). Python's ``hash`` is salted
per process, so it must never decide placement. The second PoTC candidate (`alt_key_group`)
re-mixes the same Java hash with a seed, so it is just as stable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["alt_key_group", "flink_murmur", "java_string_hash", "key_group", "key_groups"]

_MASK = 0xFFFFFFFF


def _int32(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x & 0x80000000 else x


def _rotl(x: int, r: int) -> int:
    x &= _MASK
    return ((x << r) | (x >> (32 - r))) & _MASK


def java_string_hash(key: str) -> int:
    """``String.hashCode()`` of Java: s[0]*31^(n-1) + ... + s[n-1], as a signed 32-bit int."""
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK
    return _int32(h)


def flink_murmur(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: Murmur3 mix of one int, made non-negative."""
    h = (code & _MASK) * 0xCC9E2D51 & _MASK
    h = _rotl(h, 15)
    h = h * 0x1B873593 & _MASK
    h = _rotl(h, 13)
    h = (h * 5 + 0xE6546B64) & _MASK
    h ^= 4
    h ^= h >> 16
    h = h * 0x85EBCA6B & _MASK
    h ^= h >> 13
    h = h * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    signed = _int32(h)
    if signed >= 0:
        return signed
    return 0 if signed == -(1 << 31) else -signed


def key_group(key: str, max_parallelism: int) -> int:
    """The key group of `key` among `max_parallelism` key groups (Flink's formula)."""
    if max_parallelism < 1:
        raise ValueError(f"max_parallelism must be >= 1, got {max_parallelism}")
    return flink_murmur(java_string_hash(key)) % max_parallelism


def alt_key_group(key: str, max_parallelism: int, seed: int) -> int:
    """PoTC's second candidate: the Java hash re-mixed with a seed (golden-ratio multiplier)."""
    mixed = _int32(java_string_hash(key) * 0x9E3779B1 + flink_murmur(seed))
    return flink_murmur(mixed) % max_parallelism


def key_groups(keys: Sequence[str], max_parallelism: int, seed: int | None = None) -> np.ndarray:
    """Key groups of many keys (the first candidate, or PoTC's second one when `seed` is given)."""
    if seed is None:
        out = [key_group(k, max_parallelism) for k in keys]
    else:
        out = [alt_key_group(k, max_parallelism, seed) for k in keys]
    return np.asarray(out, dtype=np.int64)
