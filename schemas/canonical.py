"""The assignment's JSON, encoded a chunk at a time: the checksum's canonical bytes and the
manifest's pretty lines from the same encoded strings, never the whole assignment as one string.

`schemas.manifest.canonical_assignment_bytes` defines the bytes the checksum covers:
``json.dumps(assignment, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` in UTF-8.
For keys in ascending code-point order that is ``{`` + ``"k":"v"`` joined by ``,`` + ``}``, where
each string is encoded by `json.encoder.encode_basestring` (the very function ``json.dumps`` calls
for a string when ``ensure_ascii=False``); the manifest (``json.dumps(indent=2)``) writes the
same strings as ``"k": "v"`` lines indented by four spaces. So one pass over sorted
(keys, nodes) chunks gives both, each chunk encoded once, and memory stays O(chunk), not
O(units), beyond the caller's own arrays. Property-tested against ``json.dumps`` in
tests/schemas/test_manifest_stream.py.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from json.encoder import encode_basestring

__all__ = ["CHUNK", "EncodedChunk", "OrderError", "assignment_checksum",
           "canonical_assignment_bytes", "chunked", "encode_chunks", "mapping_chunks",
           "sorted_checksum"]

#: units encoded at a time: ~4 MB of strings, a few ms of work
CHUNK = 65_536


class OrderError(ValueError):
    """The chunks are not one assignment: keys out of order or repeated, a key or node that is
    empty or not a string, or a chunk whose keys and nodes differ in length."""


@dataclass(frozen=True)
class EncodedChunk:
    """One chunk, encoded: its canonical and pretty bytes (no separator before or after) and its
    keys (for a caller that needs to look a few of them up, e.g. a schedule's moved units)."""

    canonical: bytes
    pretty: bytes
    keys: Sequence[str]
    nodes: Sequence[str]


def chunked(keys: Sequence[str], nodes: Sequence[str], size: int = CHUNK
            ) -> Iterator[tuple[Sequence[str], Sequence[str]]]:
    """(keys, nodes) in slices of `size`: the chunks `encode_chunks` takes from two arrays."""
    if len(keys) != len(nodes):
        raise OrderError(f"{len(keys)} keys but {len(nodes)} nodes")
    for start in range(0, len(keys), size):
        yield keys[start:start + size], nodes[start:start + size]


def mapping_chunks(assignment: Mapping[str, str], size: int = CHUNK
                   ) -> Iterator[tuple[Sequence[str], Sequence[str]]]:
    """(keys, nodes) chunks of a mapping, in its own order (a dict's keys and values iterate in
    the same order), without a tuple per item."""
    keys, nodes = iter(assignment), iter(assignment.values())
    while True:
        block = list(islice(keys, size))
        if not block:
            return
        yield block, list(islice(nodes, len(block)))


def _is_str(values: Sequence[object]) -> bool:
    return all(type(v) is str for v in values)


def encode_chunks(chunks: Iterable[tuple[Sequence[str], Sequence[str]]], *, pretty: bool = True
                  ) -> Iterator[EncodedChunk]:
    """Each non-empty chunk encoded, after checking it continues a strictly ascending run of keys
    (code-point order, as ``sort_keys`` sorts) with non-empty string keys and nodes. `pretty`:
    also the manifest's lines (a checksum alone needs only the canonical bytes)."""
    last: str | None = None
    for keys, nodes in chunks:
        if len(keys) != len(nodes):
            raise OrderError(f"a chunk has {len(keys)} keys but {len(nodes)} nodes")
        if not keys:
            continue
        if not _is_str(keys) or not _is_str(nodes):
            raise OrderError("every key and node must be a string")
        if "" in keys or "" in nodes:
            raise OrderError("keys and nodes must not be empty")
        if (last is not None and not last < keys[0]) or not all(
                map(operator.lt, keys, islice(keys, 1, None))):
            raise OrderError("keys must be unique and in ascending code-point order")
        last = keys[-1]
        ek = list(map(encode_basestring, keys))
        ev = list(map(encode_basestring, nodes))
        yield EncodedChunk(
            ",".join(map(":".join, zip(ek, ev, strict=True))).encode("utf-8"),
            ",\n    ".join(map(": ".join, zip(ek, ev, strict=True))).encode("utf-8") if pretty
            else b"", keys, nodes)


def sorted_checksum(chunks: Iterable[tuple[Sequence[str], Sequence[str]]]) -> str:
    """``"sha256:" + hex`` of the canonical bytes of the assignment the sorted chunks make."""
    digest = hashlib.sha256(b"{")
    first = True
    for chunk in encode_chunks(chunks, pretty=False):
        if not first:
            digest.update(b",")
        digest.update(chunk.canonical)
        first = False
    digest.update(b"}")
    return "sha256:" + digest.hexdigest()


def canonical_assignment_bytes(assignment: Mapping[str, str]) -> bytes:
    """The bytes the checksum covers: independent of dict order and of pretty-printing."""
    return json.dumps(
        dict(assignment), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def assignment_checksum(assignment: Mapping[str, str]) -> str:
    """sha256 of `canonical_assignment_bytes`, hashed a chunk at a time (`sorted_checksum`)
    so the whole canonical string never exists; the definition itself for anything but
    non-empty strings."""
    keys = sorted(assignment)  # linear when already sorted, as plans and manifests are
    try:
        return sorted_checksum(chunked(keys, [assignment[k] for k in keys]))
    except OrderError:
        return "sha256:" + hashlib.sha256(canonical_assignment_bytes(assignment)).hexdigest()
