"""The pipeline's stages: one period of one job, from the landing zone to a published assignment.

Folders are named after the DAG's tasks (dags/reconfigure.py) and the engines those use:

- ``collect/`` landing zone -> the period's stats tables; ``validate/`` the GE suites;
  ``plan/`` stats + the assignment in force -> a recorded plan attempt (``fleet`` for many jobs
  at once); ``publish/`` a plan -> the next immutable assignment version; ``whatif/`` shadow
  strategies on the period's state, after publish;
- ``lake/`` the Delta tables behind one `Lake` interface (delta-rs or Spark); ``spark/`` the
  sessions; ``tracking/`` MLflow; ``facets/`` what a family adds to the shared model, each facet
  registered once (``facets/registry.py``);
- ``context.py`` the stage frame; ``run.py`` the entry points by job id and period end.

The stage contract
------------------
Every stage is a function of one `StageContext` (``context.py``: the job, the period end and
window, the paths, the lake opened once, the collect marker and validation report read once),
run inside `run_stage`, which owns the home check, the lake's tables, the job's writer lock and
turning a Delta write conflict into a `StageError` (collect, whose reading and aggregating of the
landing zone needs no lock, runs in `run_stage_committing`: the lock is held for its commit
only). Inside, a stage reads in four steps:

1. **check**: bad input is refused with what, where and how to fix (`StageError`), before
   anything is written: the configuration first (no lake needed), then the period's markers
   (a plan or a publish needs a passing validation report of the period's current collect);
2. **read**: what the stage needs of the lake and the markers, each once, in one round of
   concurrent queries where they are independent;
3. **compute**: pure work on the values read (the GE suites, the planner, the manifest);
4. **commit**: the writes, in an order whose last step is the stage's *commit point*: collect's
   marker file, validate's report, plan's ``plans`` row (after its moves), publish's
   ``assignment_versions`` row (after the manifest and the assignment rows; ``LATEST`` after it).

Idempotency by period: every write replaces the rows of its scope (the period, the attempt, the
version: jobs/lake `Scope`), so a stage interrupted anywhere is mended by running it again; a
rerun of collect removes the period's markers first, so stats validated once and then replaced
are never planned or published; a plan is a new attempt every time and never rewrites another;
a published version never changes.
"""
