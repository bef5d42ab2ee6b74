"""The what-if's input, fixed at plan time: the state, budget and plan in force, and the shadows.

`store_input` is what the plan stage calls (jobs/plan/record.py) before the plan's MLflow run is
logged; the what-if stage (jobs/whatif/stage.py) reads it back with `load_input`. Stored as JSON
(jobs/whatif/codec.py: data, never a pickle) in a file under RECONF_HOME keyed by the plan id
(`whatif/<job>/<plan id>.json`), not as an MLflow artifact: the state is O(units + edges)
(24 MB at 32,768 key groups with 16 pairs each) and the run stays O(nodes + moves + top pairs)
(jobs/tracking/bounded.py). The run records the file's key and SHA-256 (tags
`reconf.whatif.input`, `reconf.whatif.input_sha256`), so the what-if of a run reads exactly
the input kept with it, or refuses. Runs of older releases kept it as the artifact
`whatif/input.json`, which is still read.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.whatif.shadow import choose_shadows
from placement.model import Budget, ClusterState, Plan
from schemas.config import JobConfig, Paths
from schemas.tracking import Artifact, Tag

__all__ = ["INPUT_ARTIFACT", "WhatIfInput", "input_key", "keep_input", "load_input", "save_input",
           "store_input", "whatif_input"]

INPUT_ARTIFACT = Artifact.WHATIF_INPUT


@dataclass(frozen=True)
class WhatIfInput:
    """What the shadows of one period need, fixed at plan time."""

    job_id: str
    period_end: str
    strategy: str  # the strategy in force
    plan: Plan  # the plan in force, as published
    state: ClusterState
    budget: Budget
    time_limit_s: float | None
    time_budget_s: float
    shadows: tuple[tuple[str, Mapping[str, Any]], ...]  # (strategy, its params), in order
    left_out: Mapping[str, str] = field(default_factory=dict)  # strategy -> why not run


def whatif_input(job: JobConfig, period_end: str, strategy: str, state: ClusterState,
                 plan: Plan, budget: Budget) -> WhatIfInput | None:
    """The shadows' input of a plan (None when the job's shadows are off or none apply)."""
    chosen, left_out = choose_shadows(job, state, strategy)
    if not chosen and not left_out:
        return None
    shadows = tuple((name, dict(job.strategy_params.get(name, {}))) for name in chosen)
    time_budget = min(job.shadow_time_budget_s, job.spl.total_seconds() / 2)  # the default too
    return WhatIfInput(job.job_id, period_end, strategy, plan, state, budget,
                       job.solver_time_limit_s, time_budget, shadows, dict(left_out))


def input_key(job_id: str, key_id: str) -> str:
    """The input file's place under RECONF_HOME: `whatif/<job>/<plan id>.json` (characters a
    file name should not hold become `_`)."""
    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._@-]", "_", text).lstrip(".") or "_"

    return f"whatif/{safe(job_id)}/{safe(key_id)}.json"


def store_input(paths: Paths, key_id: str, job: JobConfig, period_end: str, strategy: str,
                state: ClusterState, plan: Plan, budget: Budget) -> dict[str, str]:
    """At plan time: choose the period's shadows and keep their input under `key_id` (the plan
    id); the tags that point the run at it ({} when no shadow applies). Never raises: without
    it the period only has no what-if, the plan stands."""
    try:
        data = whatif_input(job, period_end, strategy, state, plan, budget)
        return {} if data is None else save_input(paths, key_id, data)
    except Exception as exc:
        print(f"what-if {job.job_id}@{period_end}: shadow input not stored, so this period "
              f"will have no what-if ({type(exc).__name__}: {exc})", flush=True)
        return {}


def keep_input(paths: Paths, run_id: str, job: JobConfig, period_end: str, strategy: str,
               state: ClusterState, plan: Plan, budget: Budget) -> None:
    """`store_input` for a run that is already logged: keyed by its run id, the run tagged."""
    tags = store_input(paths, run_id, job, period_end, strategy, state, plan, budget)
    if tags:
        from mlflow.entities import RunTag

        _client(paths).log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])


def _client(paths: Paths) -> Any:
    from jobs.tracking.store import open_store

    return open_store(paths)


def save_input(paths: Paths, key_id: str, data: WhatIfInput) -> dict[str, str]:
    """Write the shadows' input as JSON (jobs/whatif/codec.py) to its file, whole or not at all
    (a temporary file renamed); the run's tags naming it. JSON, never a pickle: reading it back
    must never run code, as unpickling a tampered file would."""
    from jobs.whatif.codec import encode

    key = input_key(data.job_id, key_id)
    raw = encode(data, {WhatIfInput.__name__: WhatIfInput}).encode("utf-8")
    target = paths.home / key
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".tmp") as handle:
        handle.write(raw)
    os.replace(handle.name, target)
    return {Tag.WHATIF_INPUT: key, Tag.WHATIF_INPUT_SHA256: hashlib.sha256(raw).hexdigest()}


def load_input(client: Any, run_id: str, paths: Paths | None = None,
               tags: dict[str, str] | None = None) -> WhatIfInput | None:
    """The run's what-if input, or None when it has none. The file its tags name (under
    `paths`' home) must hold the bytes of the recorded SHA-256; a run of an older release
    reads its artifact `whatif/input.json` (a `whatif/input.pkl` is never read). A damaged,
    tampered or missing document is a ValueError."""
    from jobs.whatif.codec import decode

    tags = dict(client.get_run(run_id).data.tags) if tags is None else tags
    key = tags.get(Tag.WHATIF_INPUT)
    if key is not None:
        home = (paths or Paths.from_env()).home
        if Path(key).is_absolute() or ".." in Path(key).parts:
            raise ValueError(f"the input's key {key!r} is not a place under RECONF_HOME")
        try:
            raw = (home / key).read_bytes()
        except OSError as exc:
            raise ValueError(f"the input file {home / key} cannot be read "
                             f"({exc.strerror or exc})") from None
        if hashlib.sha256(raw).hexdigest() != tags.get(Tag.WHATIF_INPUT_SHA256):
            raise ValueError(f"the input file {home / key} does not hold the bytes its run "
                             "recorded (SHA-256 differs)")
        text = raw.decode("utf-8", errors="replace")
    else:
        folder = str(Path(INPUT_ARTIFACT).parent)
        if INPUT_ARTIFACT not in {a.path for a in client.list_artifacts(run_id, folder)}:
            return None
        with tempfile.TemporaryDirectory() as tmp:
            text = Path(client.download_artifacts(run_id, INPUT_ARTIFACT, tmp)).read_text("utf-8")
    data = decode(text, {WhatIfInput.__name__: WhatIfInput})
    return data if isinstance(data, WhatIfInput) else None
