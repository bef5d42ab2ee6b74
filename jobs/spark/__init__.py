"""Spark: the one session builder (classic or Spark Connect) the stages use when the lake engine is Spark."""
