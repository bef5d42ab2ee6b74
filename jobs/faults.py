"""Fail points: named places in a stage where a test can crash it for real (kill -9).

The stages call `failpoint("publish.manifest")` etc. at each of their commit points. When the
environment variable `RECONF_FAILPOINT` names the point, the process kills its whole process group
with SIGKILL (the Python driver and its Spark JVM, as an OOM killer or a lost machine would), so a
fault-injection test can check that a rerun ends in exactly the state of an uninterrupted run
(docs/operations.md, "What reconf guarantees"). Unset, a fail point costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

__all__ = ["FAILPOINT_ENV", "failpoint"]

FAILPOINT_ENV = "RECONF_FAILPOINT"


def failpoint(name: str) -> None:
    if os.environ.get(FAILPOINT_ENV) == name:
        os.killpg(os.getpgrp(), signal.SIGKILL)
