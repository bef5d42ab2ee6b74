"""reconf: periodic reconfiguration of stateful stream-processing jobs."""

__version__ = "0.1.0"
