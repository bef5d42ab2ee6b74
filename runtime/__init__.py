"""The runtime's side: the assignment client and the metrics sources standing in for an engine."""

__all__: list[str] = []
