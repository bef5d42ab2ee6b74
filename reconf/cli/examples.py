"""The examples each `reconf <command> --help` ends with: a user's first try, copied from the
help, must be a command that parses and names a configured job."""

from __future__ import annotations

__all__ = ["EXAMPLES"]

_T = "2026-01-01T00:05:00Z"

#: Each command's examples (its --help's epilog), on the `demo` job of config/jobs.toml; the
#: commands with a long description of their own (fleet, compare, audit, up/down/status)
#: carry theirs. tests/test_cli_help.py parses every line with `reconf`'s parser.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "demo": ("reconf demo                          # flights2, 4 periods (make demo)",
             "reconf demo --job demo --periods 1   # the small synthetic job, one period"),
    "jobs": ("reconf jobs                          # also checks the whole config file",),
    "land": (f"reconf land --job demo --period-end {_T}",),
    "apply": ("reconf apply --job demo",),
    "stop": ('reconf stop --job demo --reason "maintenance"',),
    "rollback": ('reconf rollback --job demo --to-version 1 --reason "v3 overloads node-01"',
                 'reconf rollback --job demo --to-version 1 --reason "v3 overloads node-01" '
                 '--override-budget "incident 42"'),
    "heal": ("reconf heal --job demo --report-id node-03-dead-20261126T040320Z",),
    "runtime": ("reconf runtime run --job demo                    # until Ctrl-C / SIGTERM",
                "reconf runtime run --job demo --kill-node node-03 --kill-after 2"),
    "health": ('reconf health report --job demo --dead node-03 --reason "host lost power"',
               "reconf health report --job demo --over-capacity node-02=1.8"),
    "collect": (f"reconf collect --job demo --period-end {_T}",),
    "validate": (f"reconf validate --job demo --period-end {_T}",),
    "plan": (f"reconf plan --job demo --period-end {_T} --dry-run   # preview: nothing written",
             f"reconf plan --job demo --period-end {_T}",
             f"reconf plan --job demo --period-end {_T} --strategy greedy --max-migrations 4 "
             "--dry-run"),
    "publish": (f"reconf publish --job demo --period-end {_T}",
                f"reconf publish --job demo --period-end {_T} --plan-id 'demo@{_T}#2'"),
    "cycle": (f"reconf cycle --job demo --period-end {_T}",),
    "whatif": (f"reconf whatif --job demo --period-end {_T}",
               f"reconf whatif --job demo --period-end {_T} --force"),
    "period": ("reconf period show --job demo                # the newest 20 periods' outcomes",
               "reconf period lost --job demo --period-end 2026-01-01T00:15:00Z "
               "--reason 'runtime lost its metrics'"),
    "bench": ("reconf bench balance --quick     # MILP vs Flux, paper Figures 2-4",
              "reconf bench execution --quick   # a plan at once vs in waves",
              "reconf bench closed-loop --quick # ALBIC on real data, paper Figure 12"),
}
