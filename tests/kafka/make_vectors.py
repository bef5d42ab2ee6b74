"""Writes tests/kafka/vectors/*.json: the manifest cases both assignment clients must agree on.

Each case lays out a published directory (`files`: name -> raw text, or an object written as
JSON), says what the runtime runs (`current_version`, `known_units`, `known_nodes`) and the
outcome both runtime/client.py and the Java ManifestClient must reach (`expect`: apply,
unchanged, nothing, or the refusal's class name). Regenerate with
`.venv/bin/python tests/kafka/make_vectors.py` after changing a case here; the files are
committed so the JUnit test (runtime/kafka_streams) needs no Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas.manifest import assignment_checksum, manifest_checksum

JOB = "kjob"
UNITS = ["0_0", "0_1", "0_2", "0_3"]
NODES = ["node-00", "node-01"]
HERE = Path(__file__).parent / "vectors"


def manifest(number: int = 1, assignment: dict[str, Any] | None = None, **over: Any) -> dict[str, Any]:
    a = assignment if assignment is not None else {u: NODES[i % 2] for i, u in enumerate(UNITS)}
    body: dict[str, Any] = {
        "job_id": JOB, "version": number, "period_end": "2026-01-01T00:05:00Z", "plan_id": f"p{number}",
        "created_at": "2026-01-01T00:05:03Z", "checksum": assignment_checksum(a), "assignment": a,
        "scaling": {"nodes_to_add": [], "nodes_to_mark": [], "nodes_to_terminate": [], "reason": ""},
    }
    for key, value in over.items():
        if key.startswith("scaling_"):
            body["scaling"][key[8:]] = value
        elif value is None:
            del body[key]
        else:
            body[key] = value
    return body


def case(expect: str, files: dict[str, Any], current: int | None = None,
         units: list[str] | None = None, nodes: list[str] | None = None) -> dict[str, Any]:
    return {"job_id": JOB, "current_version": current, "known_units": units or UNITS,
            "known_nodes": nodes or NODES, "files": files, "expect": expect}


def one(version: int, body: Any, latest: str | None = None) -> dict[str, Any]:
    return {"LATEST": latest if latest is not None else f"{version}\n", f"v{version}.json": body}


ODD = {"0_0": "nöde-\"q\"\\\t", "\ue000": "node-01", "\U0001f600": "node-00", "0_1": "ノード"}
ODD_NODES = sorted(set(ODD.values()))
tampered = manifest(2)
tampered["assignment"] = {**tampered["assignment"], "0_3": "node-00"}

def scheduled(number: int) -> dict[str, Any]:
    """A manifest with a move schedule (schemas/schedule.py): the Java assignor applies its final
    assignment and ignores the schedule; both clients accept it."""
    from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits

    body = manifest(number, {"0_0": "node-01", "0_1": "node-01", "0_2": "node-00", "0_3": "node-01"})
    waves = (Wave((ScheduledMove("0_0", "node-00", "node-01", 10),), 50.0),)
    schedule = Schedule.sealed(waves, WaveLimits(), body["checksum"])
    body["schedule"] = schedule.to_dict()
    body["checksum"] = manifest_checksum(body["checksum"], schedule)  # covers the schedule
    return body


def unscheduled(number: int) -> dict[str, Any]:
    """`scheduled` with its schedule deleted (its checksum left as it was): a mismatch."""
    body = scheduled(number)
    del body["schedule"]
    return body


def scheduled_text(number: int, tamper: str = "") -> str:
    """A scheduled manifest as the publisher writes it (raw text, so its numbers keep Python's
    notation: the Java client checks the schedule's checksum over the numbers as written). Two
    waves with floats in every notation Python's repr uses and a byte rate (the limit added with
    it); `tamper`: "bytes" alters a move after
    sealing, "elsewhere" sends a move where the assignment does not place its unit."""
    from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits

    body = manifest(number, {"0_0": "node-01", "0_1": "node-00", "0_2": "node-00", "0_3": "node-01"})
    dst = "node-00" if tamper == "elsewhere" else "node-01"
    limits = WaveLimits(max_moves_per_node=2, max_bytes_per_wave=1.5e7, ceiling_pct=95.0,
                        max_bytes_per_second=2.5e5)
    waves = (Wave((ScheduledMove("0_0", "node-00", "node-01", 1e-05),
                   ScheduledMove("0_3", "node-00", dst, 1e+20)), 93.7),
             Wave((ScheduledMove("0_1", "node-01", "node-00", 0.1 + 0.2),), 12.5, True))
    schedule = Schedule.sealed(waves, limits, body["checksum"])
    body["schedule"] = schedule.to_dict()
    body["checksum"] = manifest_checksum(body["checksum"], schedule)
    if tamper == "bytes":
        body["schedule"]["waves"][1]["moves"][0]["state_bytes"] = 0.25
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


CASES: dict[str, dict[str, Any]] = {
    "nothing_published": case("nothing", {}),
    "first_version_applies": case("apply", one(1, manifest(1))),
    "newer_version_applies": case("apply", one(3, manifest(3)), current=2),
    "same_version_unchanged": case("unchanged", one(2, manifest(2)), current=2),
    "older_version_refused": case("StaleVersion", one(1, manifest(1)), current=2),
    "tampered_assignment": case("ChecksumMismatch", one(2, tampered), current=1),
    "latest_not_a_number": case("CorruptManifest", {"LATEST": "two\n", "v2.json": manifest(2)}),
    "latest_zero": case("CorruptManifest", {"LATEST": "0\n"}),
    "latest_padded_spaces": case("apply", one(3, manifest(3), latest=" 3 \n")),
    "latest_leading_zeros": case("apply", one(3, manifest(3), latest="003\n")),
    "latest_names_missing_file": case("CorruptManifest", {"LATEST": "4\n"}),
    "not_json": case("CorruptManifest", one(1, "{\"job_id\": ")),
    "top_level_list": case("CorruptManifest", one(1, "[]")),
    "unknown_field": case("CorruptManifest", one(1, manifest(1, extra="x"))),
    "schedule_applies": case("apply", one(2, scheduled(2)), current=1),
    "schedule_deleted": case("ChecksumMismatch", one(2, unscheduled(2)), current=1),
    "schedule_float_notations": case("apply", one(2, scheduled_text(2)), current=1),
    "schedule_tampered": case("CorruptManifest", one(2, scheduled_text(2, "bytes")), current=1),
    "schedule_elsewhere": case("CorruptManifest", one(2, scheduled_text(2, "elsewhere")),
                               current=1),
    "missing_scaling": case("CorruptManifest", one(1, manifest(1, scaling=None))),
    "unknown_scaling_field": case("CorruptManifest", one(1, manifest(1, scaling_extra=[]))),
    "version_float": case("CorruptManifest", one(1, manifest(1, version=1.0))),
    "version_bool": case("CorruptManifest", one(1, manifest(1, version=True))),
    "version_not_file_name": case("CorruptManifest", one(1, manifest(2))),
    "job_filed_elsewhere": case("CorruptManifest", one(1, manifest(1, job_id="other"))),
    "period_end_not_canonical": case(
        "CorruptManifest", one(1, manifest(1, period_end="2026-01-01T00:05:00+00:00"))),
    "period_end_invalid_date": case(
        "CorruptManifest", one(1, manifest(1, period_end="2026-02-30T00:05:00Z"))),
    "created_at_no_zone": case(
        "CorruptManifest", one(1, manifest(1, created_at="2026-01-01T00:05:03"))),
    "created_at_offset_ok": case(
        "apply", one(1, manifest(1, created_at="2026-01-01T01:05:03.250+01:00"))),
    "checksum_upper_hex": case(
        "CorruptManifest", one(1, manifest(1, checksum="sha256:" + "A" * 64))),
    "empty_plan_id": case("CorruptManifest", one(1, manifest(1, plan_id=""))),
    "node_not_a_string": case("CorruptManifest", one(1, manifest(1, assignment={"0_0": 3}))),
    "empty_node_in_scaling": case("CorruptManifest", one(1, manifest(1, scaling_nodes_to_add=[""]))),
    "unknown_unit": case("UnknownKeygroups", one(1, manifest(1, assignment={
        **{u: "node-00" for u in UNITS}, "1_0": "node-01"}))),
    "missing_unit": case("MissingKeygroups", one(1, manifest(1, assignment={
        u: "node-00" for u in UNITS[:3]}))),
    "unknown_node": case("UnknownNodes", one(1, manifest(1, assignment={
        **{u: "node-00" for u in UNITS}, "0_3": "node-09"}))),
    "added_node_known": case("apply", one(1, manifest(1, assignment={
        **{u: "node-00" for u in UNITS}, "0_3": "node-09"}, scaling_nodes_to_add=["node-09"]))),
    "terminated_node_in_use": case("TerminatedNodeInUse", one(1, manifest(
        1, scaling_nodes_to_terminate=["node-01"]))),
    "terminated_empty_node": case("apply", one(1, manifest(1, assignment={
        u: "node-00" for u in UNITS}, scaling_nodes_to_terminate=["node-01"]))),
    # the canonical bytes: non-ASCII kept raw, Python's escapes, keys in code-point order (U+E000
    # sorts before U+1F600, unlike UTF-16 order)
    "checksum_unicode_and_escapes": case("apply", one(1, manifest(1, assignment=ODD)),
                                         units=sorted(ODD), nodes=ODD_NODES),
}


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for old in HERE.glob("*.json"):
        old.unlink()
    for name, body in CASES.items():
        (HERE / f"{name}.json").write_text(
            json.dumps({"name": name, **body}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(CASES)} vectors to {HERE}")


if __name__ == "__main__":
    main()
