"""validate: one collected period checked by the Great Expectations suites (the DAG's `validate` task)."""
