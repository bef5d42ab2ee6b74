"""plan: a validated period + the assignment in force -> a recorded plan attempt (the DAG's `plan` task).

`stage` is the per-job path, `fleet` plans many jobs at once on Spark executors; `record` writes an
attempt's MLflow run and rows, `attempts` names attempts, `scaling` is Algorithm 1's pipeline side.
"""
