"""Per-message routing policies (key grouping and its load-balancing alternatives), pure numpy.

Used by the replay engine (runtime/replay/routing.py) and by the Consistent Grouping simulator
(bench/consistent_grouping/sim.py). See policies.py and docs/runtime.md.
"""

from runtime.routing.policies import (
    ALIASES,
    POLICIES,
    SPLITTING,
    KeyTable,
    RouterState,
    canonical,
    cap,
    check_epsilon,
    route,
    splitmix64,
)

__all__ = [
    "ALIASES",
    "POLICIES",
    "SPLITTING",
    "KeyTable",
    "RouterState",
    "canonical",
    "cap",
    "check_epsilon",
    "route",
    "splitmix64",
]
