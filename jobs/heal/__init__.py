"""heal: out-of-schedule cycles for dead or far-over-capacity nodes (jobs/heal/stage.py)."""
