"""whatif: after publish, the other strategies plan the same state, compared on the published run."""
