"""PuLP's HiGHS bridge, fixed for our use.

PuLP 3.3.2's `pulp.HiGHS` (a) adds columns and rows to HiGHS one Python call at a time, (b)
silently drops a warm start (`warmStart=True` ends up as an unknown HiGHS option; the start
never reaches HiGHS), and (c) throws away the MIP dual bound. This subclass builds the HiGHS
model with bulk numpy calls, hands the start to `Highs.setSolution`, and keeps the bound and
the model status so the planner can tell OPTIMAL from TIME_LIMITED and certify a lower bound.

HiGHS 1.15's presolve *aggregator* rule does not look at the clock: on some of our models
(ALBIC's constrained MILP with a few thousand binaries) it ran 5–6 s under a 0.4 s limit, so a
planning call's time depended on the model's shape and the machine's load. It is switched off
(`PRESOLVE_RULE_OFF`); probing, the next slow rule, does check the time limit.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import highspy
import numpy as np
import pulp

from placement.determinism import clock_cut, solver_budget

#: HiGHS `presolve_rule_off` bit mask: rule 12 is the aggregator in HiGHS 1.15
#: (tests/placement check the name in HiGHS's own log, so an upgrade cannot move it silently)
AGGREGATOR_RULE = 12
PRESOLVE_RULE_OFF = 1 << AGGREGATOR_RULE
#: a model of c < SMALL_MODEL_COLS columns gets SMALL_MODEL_COLS // c times the checkpoint
#: budget (placement/determinism.py): its checkpoints cost microseconds, and so it is still
#: solved to optimality, as under the clock (a function of the model, so still deterministic)
SMALL_MODEL_COLS = 1000


class BulkHiGHS(pulp.HiGHS):
    """`pulp.HiGHS` with bulk model building, a real warm start and the dual bound kept."""

    def __init__(self, *, warm_start: Mapping[Any, float] | None = None,
                 deadline: float | None = None, caps: tuple[int, int] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.warm_start = warm_start
        self.deadline = deadline  # time.perf_counter() by which HiGHS must stop
        #: this solve's own (checkpoints, nodes), below the call's (a sub-MILP's)
        self.caps = caps
        self.checkpoints = 0  # MIP interrupt checkpoints HiGHS passed (the work done)
        self.transfer_s = 0.0  # PuLP -> HiGHS model transfer (outside HiGHS's own clock)
        self.warm_start_accepted: bool | None = None
        self.dual_bound: float | None = None
        self.model_status: Any = None
        self.has_solution = False

    def buildSolverModel(self, lp: pulp.LpProblem) -> None:
        started = time.perf_counter()
        self._transfer(lp)
        self.transfer_s = time.perf_counter() - started

    def _transfer(self, lp: pulp.LpProblem) -> None:
        h = lp.solverModel
        variables = lp.variables()
        n = len(variables)
        lower = np.empty(n)
        upper = np.empty(n)
        cost = np.empty(n)
        integer = []
        sign = -1.0 if lp.sense == pulp.LpMaximize else 1.0
        objective = lp.objective
        for i, var in enumerate(variables):
            var.index = i
            lower[i] = -highspy.kHighsInf if var.lowBound is None else var.lowBound
            upper[i] = highspy.kHighsInf if var.upBound is None else var.upBound
            cost[i] = sign * objective.get(var, 0.0)
            if var.cat == pulp.LpInteger and self.mip:
                integer.append(i)
        h.addCols(n, cost, lower, upper, 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))
        if integer:
            idx = np.asarray(integer, dtype=np.int32)
            h.changeColsIntegrality(len(idx), idx,
                                    np.full(len(idx), 1, dtype=np.uint8))  # kInteger
        constraints = list(lp._constraints.values())
        m = len(constraints)
        row_lo = np.empty(m)
        row_hi = np.empty(m)
        starts = np.empty(m, dtype=np.int32)
        index: list[int] = []
        value: list[float] = []
        for r, con in enumerate(constraints):
            con.index = r
            starts[r] = len(index)
            index.extend(v.index for v in con)
            value.extend(con.values())
            lb, ub = con.getLb(), con.getUb()
            row_lo[r] = -highspy.kHighsInf if lb is None else lb
            row_hi[r] = highspy.kHighsInf if ub is None else ub
        h.addRows(m, row_lo, row_hi, len(index), starts,
                  np.asarray(index, dtype=np.int32), np.asarray(value, dtype=np.float64))

    def callSolver(self, lp: pulp.LpProblem) -> None:
        h = lp.solverModel
        h.setOptionValue("presolve_rule_off", PRESOLVE_RULE_OFF)
        budget = solver_budget()  # placement/determinism.py: the call's seed and budget
        h.setOptionValue("random_seed", int(budget.seed) % 2147483647)
        work, nodes = budget.work_limit, budget.node_limit
        if self.caps is not None:
            work = self.caps[0] if work is None else min(work, self.caps[0])
            nodes = self.caps[1] if nodes is None else min(nodes, self.caps[1])
        if nodes is not None:
            h.setOptionValue("mip_max_nodes", int(nodes))
        if work is not None:  # a small model's checkpoints cost microseconds: it gets more
            scale = max(1, SMALL_MODEL_COLS // max(1, h.getNumCol()))
            h.cbMipInterrupt.subscribe(self._checkpoint(int(work) * scale))
        if self.deadline is not None:  # the transfer ate into the budget: re-arm the limit
            h.setOptionValue("time_limit", max(0.02, self.deadline - time.perf_counter()))
        if self.warm_start:
            idx = np.asarray([v.index for v in self.warm_start], dtype=np.int32)
            vals = np.asarray(list(self.warm_start.values()), dtype=np.float64)
            status = h.setSolution(len(idx), idx, vals)
            self.warm_start_accepted = status != highspy.HighsStatus.kError
        h.run()
        info = h.getInfo()
        self.model_status = h.getModelStatus()
        if self.model_status == highspy.HighsModelStatus.kTimeLimit:
            clock_cut("a HiGHS solve")
        self.dual_bound = float(info.mip_dual_bound)
        self.has_solution = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible


    def _checkpoint(self, limit: int) -> Any:
        """HiGHS's MIP interrupt callback: count the checkpoints, interrupt at `limit` (the
        deterministic work budget: placement/determinism.py)."""
        def check(event: Any) -> None:
            self.checkpoints += 1
            if self.checkpoints >= limit:
                event.interrupt()
        return check

    def findSolutionValues(self, lp: pulp.LpProblem) -> tuple[int, int]:
        """PuLP's, plus HiGHS's node-budget stop (kSolutionLimit, which PuLP 3.3.2 does not
        map): the incumbent's values, read like a time-limited solve's."""
        h = lp.solverModel
        if h.getModelStatus() != highspy.HighsModelStatus.kSolutionLimit:
            status: tuple[int, int] = super().findSolutionValues(lp)
            return status
        values = list(h.getSolution().col_value)
        for var in lp.variables():
            var.varValue = values[var.index]
        if self.has_solution:
            return pulp.LpStatusOptimal, pulp.LpSolutionIntegerFeasible
        return pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound


def model_status_name(status: Any) -> str:
    """'optimal', 'time_limit', 'work_limit', 'node_limit', 'infeasible' or the HiGHS name,
    lower case."""
    ms = highspy.HighsModelStatus
    if status == ms.kOptimal:
        return "optimal"
    if status == ms.kInterrupt:  # only our checkpoint budget interrupts HiGHS
        return "work_limit"
    if status in (ms.kTimeLimit, ms.kIterationLimit):
        return "time_limit"
    if status == ms.kSolutionLimit:  # mip_max_nodes reached: a deterministic stop
        return "node_limit"
    if status in (ms.kInfeasible, ms.kUnboundedOrInfeasible):
        return "infeasible"
    return str(status).rsplit(".", 1)[-1].lower()
