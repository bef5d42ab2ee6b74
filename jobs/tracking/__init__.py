"""Tracking: the MLflow run of every plan attempt and what an operator reads on it."""
