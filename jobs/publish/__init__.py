"""publish: a recorded plan attempt -> the next immutable assignment version (the DAG's `publish` task)."""
