"""The soak's invariant checker: what must hold after every period, read from the stores alone.

It opens no stage and calls no reconf code that could hide a fault: the Delta tables through
delta-rs, `LATEST` and the manifests as files (the newest one parsed by the contract's reader,
schemas/manifest.py, which recomputes its checksum), the MLflow store's SQLite tables and artifact files, the validation reports,
the runtime's state files, the job's lock files, the log of every command the soak ran
(`runs.jsonl`, bench/soak/world.py) and the disk. The rules (docs/operations.md, "What reconf
guarantees"):

- versions: the version table holds 1..N without a gap, a manifest for each, LATEST = N, and
  N's manifest's checksum holds and its assignment's digest is its version row's;
- provenance: a version came from a plan of a period whose validation passed for the collect it
  was planned from, or from a recorded rollback or healing;
- immutable: a published version's plan row, moves, MLflow run (params, metrics, tags and
  artifacts but what later steps add by design: the what-if, the execution record, the note)
  and manifest hash the same as when the checker first saw them;
- runtime: it runs a published version, or a recorded partial wave state between two of them;
- stale: every version was planned when the one before it was the newest;
- locks: no lock is left held between periods;
- messages: every refusal said what, where and how to fix it, nothing printed a traceback or
  exited "unexpected error" or hung past its timeout, and each step that had to succeed did;
- disk: no period grows the home beyond a bound, and no temporary file outlives its period.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DISK_PER_PERIOD", "Checker", "Violation"]

#: the most a period may grow the home (bytes): a soak period's own data is about 0.5 MiB
DISK_PER_PERIOD = 8 * 2**20
#: what later steps add to a published run by design (docs/operations.md)
_LATER_TAGS = ("reconf.whatif.", "reconf.execution.", "mlflow.note.content")
_LATER_METRICS = ("whatif_", "execution_")
_LATER_ARTIFACTS = ("whatif", "execution")


@dataclass(frozen=True)
class Violation:
    """A broken invariant at a period (the seed and the replay are the report's)."""

    period: int
    invariant: str
    detail: str
    known: str | None = None


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


class Checker:
    """Checks one job's stores under `home` after each period; remembers what it has seen."""

    def __init__(self, home: Path, job: str, runs: Path) -> None:
        self.home, self.job, self.runs = home, job, runs
        self.hashes: dict[tuple[int, str], str] = {}  # (version, part) -> digest at first sight
        self.runs_read = 0
        self.size: int | None = None
        self.files: dict[Path, tuple[tuple[int, int, int], str]] = {}  # path -> (stat, digest)

    def check(self, period: int) -> list[Violation]:
        out: list[Violation] = []

        def bad(invariant: str, detail: str, known: str | None = None) -> None:
            out.append(Violation(period, invariant, detail, known))

        versions = self._table("assignment_versions")
        ids = [v["plan_id"] for v in versions]
        plans = {str(r["plan_id"]): r for r in self._table(
            "plans", lambda t: t.filter(_in(t, "plan_id", ids)))}
        moves: dict[str, list[dict[str, Any]]] = {}
        for m in self._table("plan_moves", lambda t: t.filter(_in(t, "plan_id", ids))):
            moves.setdefault(str(m["plan_id"]), []).append(m)
        newest = self._versions(versions, bad)
        db = self.home / "mlflow" / "mlflow.db"
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) \
            if db.is_file() else None
        try:
            for row in versions:
                plan = plans.get(str(row["plan_id"]))
                self._version(row, plan, sorted(moves.get(str(row["plan_id"]), []),
                                                key=lambda m: str(m["keygroup"])), conn, bad)
        finally:
            if conn is not None:
                conn.close()
        self._runtime(newest, bad)
        self._locks(bad)
        self._messages(bad)
        self._disk(bad)
        return out

    # -- the stores ------------------------------------------------------------------------
    def _table(self, name: str, where: Any = None) -> list[dict[str, Any]]:
        from deltalake import DeltaTable

        path = self.home / "lake" / name
        if not (path / "_delta_log").is_dir():
            return []
        table = DeltaTable(str(path)).to_pyarrow_table()
        table = table.filter(_in(table, "job_id", [self.job]))
        return (where(table) if where else table).to_pylist()

    def _manifest(self, version: int) -> tuple[bytes, dict[str, Any]] | None:
        path = self.home / "published" / self.job / f"v{version}.json"
        try:
            data = path.read_bytes()
            return data, json.loads(data)
        except (OSError, ValueError):
            return None

    # -- the rules -------------------------------------------------------------------------
    def _versions(self, rows: list[dict[str, Any]], bad: Any) -> int:
        numbers = sorted(int(r["version"]) for r in rows)
        newest = numbers[-1] if numbers else 0
        if numbers != list(range(1, newest + 1)):
            bad("versions", f"the version table holds {numbers}, not 1..{newest}")
        latest = self.home / "published" / self.job / "LATEST"
        text = latest.read_text().strip() if latest.is_file() else ""
        if newest and text != str(newest):
            bad("versions", f"LATEST names {text or 'nothing'}, the newest version is v{newest}")
        folder = self.home / "published" / self.job
        for n in numbers:
            if not (folder / f"v{n}.json").is_file():
                bad("versions", f"v{n} has a version row but no manifest")
        if newest:
            from schemas.manifest import ManifestError, read_manifest

            row = next(r for r in rows if int(r["version"]) == newest)
            try:  # the contract's own reader: strict parse, the checksum recomputed
                manifest = read_manifest(self.home / "published", self.job, newest)
            except ManifestError as exc:
                bad("versions", f"v{newest}'s checksum does not hold: {str(exc)[:200]}")
            else:
                # what the version row keeps: the assignment's digest (a manifest's checksum
                # may also bind its schedule)
                digest = getattr(manifest, "assignment_digest", manifest.actual_checksum)
                if manifest.actual_checksum != manifest.checksum or digest != row["checksum"]:
                    bad("versions", f"v{newest}'s checksum does not hold: manifest "
                        f"{manifest.checksum}, version row {row['checksum']}, computed "
                        f"{manifest.actual_checksum}")
        return newest

    def _digest_file(self, path: Path) -> str | None:
        """The file's SHA-256, hashed again only when its stat changed (hundreds of versions'
        files are compared every period)."""
        try:
            st = path.stat()
        except OSError:
            return None
        sig = (st.st_size, st.st_mtime_ns, st.st_ino)
        cached = self.files.get(path)
        if cached is None or cached[0] != sig:
            cached = (sig, hashlib.sha256(path.read_bytes()).hexdigest())
            self.files[path] = cached
        return cached[1]

    def _version(self, row: dict[str, Any], plan: dict[str, Any] | None,
                 moves: list[dict[str, Any]], conn: sqlite3.Connection | None, bad: Any) -> None:
        version = int(row["version"])
        if plan is None:
            bad("provenance", f"v{version}'s plan {row['plan_id']} has no plans row")
            return
        first = (version, "plan") not in self.hashes
        plan_json = json.loads(plan["plan_json"] or "{}")
        if first:
            self._provenance(version, plan, plan_json, bad)
            seen = plan_json.get("newest_version", plan["base_version"]) or 0
            if int(seen) != version - 1:
                bad("stale", f"v{version} (plan {plan['plan_id']}) was planned when the newest "
                    f"version was v{seen}, not v{version - 1}")
        manifest = self.home / "published" / self.job / f"v{version}.json"
        parts = {"plan": plan, "manifest": self._digest_file(manifest), "moves": moves,
                 "mlflow": self._run(conn, plan.get("mlflow_run_id"))}
        for part, value in parts.items():
            digest = _digest(value)
            before = self.hashes.setdefault((version, part), digest)
            if before != digest:
                bad("immutable", f"v{version}'s {part} changed after publish (plan "
                    f"{plan['plan_id']})")

    def _provenance(self, version: int, plan: dict[str, Any], plan_json: dict[str, Any],
                    bad: Any) -> None:
        strategy = str(plan["strategy"])
        if strategy == "rollback":
            if "rollback to v" not in str(plan["message"] or ""):
                bad("provenance", f"v{version} is a rollback without its record")
            return
        if strategy == "healing":
            heals = [h for h in self._table("healings") if h.get("version") == version]
            if not heals:
                bad("provenance", f"v{version} is a healing with no healings row")
            return
        stamp = _stamp(plan["period_end"])
        report = self.home / "reports" / self.job / stamp / "validation.json"
        try:
            verdict = json.loads(report.read_text())
        except (OSError, ValueError):
            bad("provenance", f"v{version}: period {stamp} has no validation report")
            return
        if not verdict.get("success") or verdict.get("collect_id") != plan_json.get("collect_id"):
            bad("provenance", f"v{version}: period {stamp} was published without passing "
                "validation of the stats it was planned from")

    def _run(self, conn: sqlite3.Connection | None, run_id: str | None) -> Any:
        """A run as it reads in the MLflow store, but for what later steps add by design."""
        if not run_id or conn is None:
            return None
        params = conn.execute("SELECT key, value FROM params WHERE run_uuid = ?",
                              (run_id,)).fetchall()
        metrics = conn.execute("SELECT key, value, step FROM latest_metrics WHERE run_uuid = ?",
                               (run_id,)).fetchall()
        tags = conn.execute("SELECT key, value FROM tags WHERE run_uuid = ?", (run_id,)).fetchall()
        (uri,) = conn.execute("SELECT artifact_uri FROM runs WHERE run_uuid = ?",
                              (run_id,)).fetchone() or (None,)
        files = {}
        folder = Path(str(uri).removeprefix("file://")) if uri else None
        if folder is not None and folder.is_dir():
            for f in sorted(folder.rglob("*")):
                name = str(f.relative_to(folder))
                if f.is_file() and not name.startswith(_LATER_ARTIFACTS):
                    files[name] = self._digest_file(f)
        return {"params": sorted(params),
                "metrics": sorted(m for m in metrics if not m[0].startswith(_LATER_METRICS)),
                "tags": sorted(t for t in tags if not t[0].startswith(_LATER_TAGS)),
                "artifacts": files}

    def _runtime(self, newest: int, bad: Any) -> None:
        folder = self.home / "runtime" / self.job
        try:
            state = json.loads((folder / "runtime.json").read_text())
        except (OSError, ValueError):
            return  # the runtime has not applied anything yet
        running = state["version"]
        if running is None:
            return
        if not 1 <= running <= newest:
            bad("runtime", f"the runtime runs v{running}, which is not published (newest "
                f"v{newest})")
            return
        try:
            execution = json.loads((folder / "execution.json").read_text())
        except (OSError, ValueError):
            execution = None
        target = int(execution["version"]) if execution else running
        if target <= running:  # applied whole: exactly its version's assignment
            found = self._manifest(running)
            if found is not None and found[1]["assignment"] != state["assignment"]:
                bad("runtime", f"the runtime says it runs v{running} but its assignment is not "
                    f"v{running}'s")
            return
        # a schedule stopped, failed or killed between waves: each unit where a version put it
        allowed: dict[str, set[str]] = {}
        for v in range(running, target + 1):
            found = self._manifest(v)
            for unit, node in (found[1]["assignment"] if found else {}).items():
                allowed.setdefault(unit, set()).add(node)
        stray = sorted(u for u, n in state["assignment"].items() if n not in allowed.get(u, {n}))
        if stray:
            bad("runtime", f"between v{running} and v{target} ({execution['status']}) units run "
                f"where no version put them: {stray[:5]}")

    def _locks(self, bad: Any) -> None:
        for path in (self.home / "locks" / f"{self.job}.lock",
                     self.home / "runtime" / self.job / "live.lock"):
            if not path.is_file():
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                bad("locks", f"{path} is still held after the period")
            finally:
                os.close(fd)

    def _messages(self, bad: Any) -> None:
        lines = self.runs.read_text().splitlines() if self.runs.is_file() else []
        for line in lines[self.runs_read:]:
            run = json.loads(line)
            rc, expected, argv = run["rc"], run["expected"], " ".join(run["argv"])
            err = Path(run["stderr_log"]).read_text(errors="replace")
            out_log = Path(run["stderr_log"]).with_suffix(".out")
            out = out_log.read_text(errors="replace") if out_log.is_file() else ""
            if run.get("hung"):
                bad("messages", f"`{argv}` ({run['purpose']}) hung: killed after "
                    f"{run['seconds']:.0f} s")
            elif "Traceback (most recent call last)" in err or "unexpected error" in err:
                bad("messages", f"`{argv}` exited {rc} with a traceback or an unexpected error:"
                    f" {err.strip().splitlines()[-1][:200] if err.strip() else ''}")
            elif rc == 2 and not ("where:" in err and "fix:" in err):
                bad("messages", f"`{argv}` was refused without where and fix: {err[-200:]}")
            elif rc != 0 and not (rc == -9 or (rc == 2 and expected != "ok") or expected == "any"
                                  or (rc == 1 and expected in ("alert-ok", "refused-apply"))):
                bad("messages", f"`{argv}` ({run['purpose']}) had to {expected}, exited {rc}: "
                    f"{(err or out).strip()[-200:]}")
            if rc == 0 and expected == "refused":
                bad("messages", f"`{argv}` ({run['purpose']}) should have been refused, "
                    "exited 0")
        self.runs_read = len(lines)
        logs = self.home / "logs"
        if logs.is_dir() and any(logs.glob("*-error-*.log")):
            names = sorted(p.name for p in logs.glob("*-error-*.log"))
            bad("messages", f"traceback files: {names[:3]}")
            for p in logs.glob("*-error-*.log"):  # reported once
                p.rename(p.with_suffix(".seen"))

    def _disk(self, bad: Any) -> None:
        size = sum(f.stat().st_size for f in self.home.rglob("*") if f.is_file())
        if self.size is not None and size - self.size > DISK_PER_PERIOD:
            bad("disk", f"the home grew by {(size - self.size) / 2**20:.1f} MiB in one period "
                f"(bound {DISK_PER_PERIOD / 2**20:.0f} MiB)")
        self.size = size
        temps = [p for p in (self.home / "published" / self.job).glob(".*.tmp")] + [
            p for p in (self.home / "landing" / self.job).glob(".period_end=*")]
        if temps:
            bad("disk", f"temporary files outlived their period: {[p.name for p in temps][:3]}")


def _in(table: Any, column: str, values: list[Any]) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.is_in(table[column], value_set=pa.array([str(v) for v in values], pa.string()))


def _stamp(value: Any) -> str:
    from datetime import UTC, datetime

    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
