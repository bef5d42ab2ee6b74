"""The runtime's assignment client: fetch the newest published manifest and decide if it is safe.

A manifest is applied only if it is intact (checksum recomputed from the assignment), newer than
what runs, and covers exactly the key groups the job has, on nodes the runtime knows (its own plus
the ones the manifest's scaling section adds). For a job whose units come and go (`dynamic`, a
query platform) the unit set is the manifest's to change: units new to the runtime are placed,
units it no longer lists have left; everything else is checked as strictly. Anything else raises an `AssignmentRefused`
subclass whose message says what is wrong, where (the manifest path) and how to fix it; the caller
keeps running its current assignment.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from runtime.source import ApplyResult, RuntimeState
from schemas.manifest import (
    Manifest,
    ManifestError,
    latest_path,
    manifest_path,
    read_latest_version,
    read_manifest,
)

__all__ = [
    "AssignmentClient",
    "AssignmentRefused",
    "ChecksumMismatch",
    "CorruptManifest",
    "MissingKeygroups",
    "StaleVersion",
    "TerminatedNodeInUse",
    "UnknownKeygroups",
    "UnknownNodes",
    "UnscheduledManifest",
    "next_state",
]

log = logging.getLogger(__name__)

_SHOW = 5  # ids listed in a message; the rest are counted, so messages stay readable


class AssignmentRefused(Exception):
    """A published assignment the runtime will not apply; `path` is the offending file."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


class CorruptManifest(AssignmentRefused):
    """LATEST or the manifest is missing, unreadable, or not a valid manifest."""


class ChecksumMismatch(AssignmentRefused):
    """The assignment does not hash to the recorded checksum (tampered or torn)."""


class StaleVersion(AssignmentRefused):
    """The manifest is older than the version already running."""


class UnknownKeygroups(AssignmentRefused):
    """The assignment places key groups this job does not have."""


class MissingKeygroups(AssignmentRefused):
    """The assignment leaves some of the job's key groups without a node."""


class UnknownNodes(AssignmentRefused):
    """The assignment uses nodes the runtime neither has nor is told to add."""


class TerminatedNodeInUse(AssignmentRefused):
    """The scaling section terminates a node that the assignment still places key groups on."""


class UnscheduledManifest(AssignmentRefused):
    """A manifest without a move schedule that would move units of a job applied in waves."""


def _ids(ids: Iterable[str]) -> str:
    ordered = sorted(ids)
    shown = ", ".join(ordered[:_SHOW])
    more = len(ordered) - _SHOW
    return f"{shown} (+{more} more)" if more > 0 else shown


class AssignmentClient:
    """Reads ``<published_root>/<job_id>/{LATEST,v<N>.json}``; never writes there."""

    def __init__(self, published_root: Path, job_id: str) -> None:
        self.published_root = Path(published_root)
        self.job_id = job_id

    def path_of(self, version: int) -> Path:
        return manifest_path(self.published_root, self.job_id, version)

    def fetch_latest(self) -> Manifest | None:
        """The manifest LATEST names, or None if nothing is published yet.

        Raises `CorruptManifest` when LATEST or the manifest it names cannot be read or parsed.
        """
        try:
            version = read_latest_version(self.published_root, self.job_id)
        except ManifestError as exc:
            raise CorruptManifest(
                latest_path(self.published_root, self.job_id),
                f"{exc}; the publisher must rewrite LATEST with a published version number",
            ) from exc
        if version is None:
            return None
        try:
            return read_manifest(self.published_root, self.job_id, version)
        except ManifestError as exc:
            raise CorruptManifest(
                self.path_of(version),
                f"cannot use v{version} named by LATEST: {exc}; republish it with `publish` "
                "(the current assignment stays in place meanwhile)",
            ) from exc

    def nodes_after_skipped(self, nodes: Iterable[str], running: int | None, newest: int
                            ) -> set[str]:
        """`nodes` after the scaling sections of every version strictly between `running` (None:
        the runtime's initial allocation, before v1) and `newest`, in version order.

        A manifest's scaling section says what changes from the version before it, so a runtime
        that jumps from v_a to v_c must still add and terminate what v_a+1 … v_c-1 said, or it
        keeps paying for a node a skipped version terminated (and refuses v_c for placing units
        on a node a skipped version added). Set arithmetic in order gives exactly what applying
        each version in turn would have. A version in between that cannot be read is a refusal:
        its actions are unknown, and guessing either way is worse than keeping what runs."""
        out = set(nodes)
        for version in range((running or 0) + 1, newest):
            try:
                scaling = read_manifest(self.published_root, self.job_id, version).scaling
            except ManifestError as exc:
                raise CorruptManifest(
                    self.path_of(version),
                    f"v{version} lies between v{running or 0} (running) and v{newest} (LATEST), "
                    f"so its scaling actions must be applied on the way, but it cannot be read: "
                    f"{exc}; republish v{version} from the assignments table (the current "
                    "assignment stays in place meanwhile)",
                ) from exc
            out = (out | set(scaling.nodes_to_add)) - set(scaling.nodes_to_terminate)
        return out

    def accept(
        self,
        manifest: Manifest,
        *,
        current_version: int | None,
        known_keygroups: set[str],
        known_nodes: set[str],
        dynamic: bool = False,
    ) -> bool:
        """Check `manifest` against what runs; True = apply it, False = nothing new (same version).

        Raises an `AssignmentRefused` subclass for anything unsafe to apply. `dynamic`: the job's
        units come and go, so the manifest's unit set may differ from `known_keygroups`.
        """
        path = self.path_of(manifest.version)
        if manifest.job_id != self.job_id:
            raise CorruptManifest(
                path,
                f"manifest is for job {manifest.job_id!r}, this runtime runs {self.job_id!r}; "
                "publish it under its own job directory",
            )
        actual = manifest.actual_checksum  # taken while the manifest was parsed and validated
        if actual != manifest.checksum:
            raise ChecksumMismatch(
                path,
                f"checksum {manifest.checksum} does not match the assignment ({actual}); "
                "the file was altered or torn — republish this version from the assignments table",
            )
        if current_version is not None and manifest.version < current_version:
            raise StaleVersion(
                path,
                f"version {manifest.version} is older than v{current_version} already running; "
                f"LATEST must name v{current_version} or newer (versions only go up)",
            )
        if current_version is not None and manifest.version == current_version:
            return False
        # set differences that hold only the offending ids: no second copy of the assignment
        placed = manifest.assignment
        unknown = set() if dynamic else {kg for kg in placed if kg not in known_keygroups}
        if unknown:
            raise UnknownKeygroups(
                path,
                f"{len(unknown)} key group(s) not in job {self.job_id!r}: {_ids(unknown)}; "
                "the plan was made for another job shape — re-run collect and plan for this job",
            )
        missing = set() if dynamic else {kg for kg in known_keygroups if kg not in placed}
        if missing:
            raise MissingKeygroups(
                path,
                f"{len(missing)} key group(s) of job {self.job_id!r} have no node: {_ids(missing)}; "
                "the assignment must place every key group — re-run plan and publish",
            )
        nodes = known_nodes | set(manifest.scaling.nodes_to_add)
        used = set(manifest.assignment.values())  # the nodes in use: O(nodes), not O(units)
        stray = used - nodes
        if stray:
            raise UnknownNodes(
                path,
                f"{len(stray)} node(s) unknown to the runtime and not in scaling.nodes_to_add: "
                f"{_ids(stray)}; add them via the scaling section or re-plan on the current nodes",
            )
        busy = set(manifest.scaling.nodes_to_terminate) & used
        if busy:
            raise TerminatedNodeInUse(
                path,
                f"scaling.nodes_to_terminate lists node(s) that still host key groups: {_ids(busy)}; "
                "only empty nodes may be terminated — re-run plan and publish",
            )
        return True


def _check_scheduled(client: AssignmentClient, manifest: Manifest, current: RuntimeState
                     ) -> None:
    """A job applied in waves never applies moves at once: a manifest that would move a unit
    and carries no schedule is refused (an unscheduled manifest that moves nothing is fine)."""
    if manifest.schedule is not None:
        return
    running = current.assignment
    moved = [kg for kg, node in manifest.assignment.items()
             if kg in running and running[kg] != node]
    if moved:
        raise UnscheduledManifest(
            client.path_of(manifest.version),
            f"v{manifest.version} has no move schedule but moves {len(moved)} unit(s) "
            f"({_ids(moved)}); job {client.job_id!r} applies plans in waves under its execution "
            "limits, never all at once — plan and publish again (a new plan's manifest "
            "carries its schedule; the current assignment stays in place meanwhile)")


def next_state(published_root: Path, current: RuntimeState, known_keygroups: Iterable[str],
               *, dynamic: bool = False, require_schedule: bool = False
               ) -> tuple[Manifest, RuntimeState] | ApplyResult:
    """What a runtime should run next: the accepted newest manifest and the state it leads to
    (nodes it and every skipped version add joined, nodes they terminate gone), or, when there is nothing to
    apply, the `unchanged`/`refused` result to return (a refusal is logged; the runtime keeps
    its current assignment). Saving the state and moving the key groups are the caller's.
    `dynamic`: the state's assignment is the manifest's, whatever units it lists (see
    `AssignmentClient.accept`); a runtime reconciles it with the units it runs.
    `require_schedule`: the job has execution limits, so a manifest that moves units without a
    schedule is refused (`UnscheduledManifest`)."""
    client = AssignmentClient(Path(published_root), current.job_id)
    try:
        manifest = client.fetch_latest()
        if manifest is None:
            return ApplyResult("unchanged", current.version,
                               f"nothing published yet under {published_root}")
        known = set(current.nodes)
        if current.version is None or manifest.version > current.version:
            known = client.nodes_after_skipped(known, current.version, manifest.version)
        fresh = client.accept(manifest, current_version=current.version,
                              known_keygroups=set(known_keygroups), known_nodes=known,
                              dynamic=dynamic)
        if fresh and require_schedule:
            _check_scheduled(client, manifest, current)
    except AssignmentRefused as exc:
        log.warning("job %s keeps v%s: %s", current.job_id, current.version, exc)
        return ApplyResult("refused", current.version, str(exc))
    if not fresh:
        return ApplyResult("unchanged", current.version, f"v{manifest.version} is already running")
    nodes = (known | set(manifest.scaling.nodes_to_add)) - set(
        manifest.scaling.nodes_to_terminate)
    return manifest, RuntimeState(current.job_id, manifest.version, manifest.assignment,
                                  tuple(nodes))
