"""The what-if's input, fixed at plan time: the state, budget and plan in force, and the shadows.

`keep_input` is what the plan stage calls (jobs/plan/record.py) after a plan's MLflow run exists;
the what-if stage (jobs/whatif/stage.py) reads it back with `load_input`. Stored as JSON
(jobs/whatif/codec.py), never a pickle.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs.whatif.shadow import choose_shadows
from placement.model import Budget, ClusterState, Plan
from schemas.config import JobConfig, Paths
from schemas.tracking import Artifact

__all__ = ["INPUT_ARTIFACT", "WhatIfInput", "keep_input", "load_input", "save_input", "whatif_input"]

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


def keep_input(paths: Paths, run_id: str, job: JobConfig, period_end: str, strategy: str,
               state: ClusterState, plan: Plan, budget: Budget) -> None:
    """At plan time: choose the period's shadows and store their input with its run. Never
    raises: without it the period only has no what-if, the plan stands."""
    try:
        data = whatif_input(job, period_end, strategy, state, plan, budget)
        if data is not None:
            save_input(paths, run_id, data)
    except Exception as exc:
        print(f"what-if {job.job_id}@{period_end}: shadow input not stored, so this period "
              f"will have no what-if ({type(exc).__name__}: {exc})", flush=True)


def _client(paths: Paths) -> Any:
    from jobs.tracking.store import open_store

    return open_store(paths)


def save_input(paths: Paths, run_id: str, data: WhatIfInput) -> None:
    """Store the shadows' input with the period's run, as JSON (jobs/whatif/codec.py): the run's
    artifacts may be read by anyone with access to the tracking store, so reading them back must
    never run code, as unpickling a tampered artifact would."""
    from jobs.whatif.codec import encode

    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / Path(INPUT_ARTIFACT).name
        local.write_text(encode(data, {WhatIfInput.__name__: WhatIfInput}), encoding="utf-8")
        _client(paths).log_artifact(run_id, str(local), str(Path(INPUT_ARTIFACT).parent))


def load_input(client: Any, run_id: str) -> WhatIfInput | None:
    """The run's what-if input, or None when it has none (a run from before the JSON format has
    a `whatif/input.pkl`, which is never read). A damaged or tampered document is a ValueError."""
    from jobs.whatif.codec import decode

    folder = str(Path(INPUT_ARTIFACT).parent)
    if INPUT_ARTIFACT not in {a.path for a in client.list_artifacts(run_id, folder)}:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(client.download_artifacts(run_id, INPUT_ARTIFACT, tmp)).read_text("utf-8")
    data = decode(text, {WhatIfInput.__name__: WhatIfInput})
    return data if isinstance(data, WhatIfInput) else None
