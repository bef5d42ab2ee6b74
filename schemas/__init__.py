"""The contracts between stages: landing zone, Delta tables, GE suites, manifests, config."""
