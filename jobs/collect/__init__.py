"""collect: one period of the landing zone -> the job's stats tables (the DAG's `collect` task)."""
