"""Lazy re-exports for the package `__init__`s (PEP 562).

A family's `__init__` names its entry points, but importing `placement.<family>.params` (which
the config loader and the DAG file do) must not import PuLP, HiGHS or METIS: the `__init__`s
resolve their names on first use instead of importing their modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `names[attr]` (a module path) when `attr` is read."""

    def getattr_(attr: str) -> Any:
        try:
            module = names[attr]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {attr!r}") from None
        return getattr(importlib.import_module(module), attr)

    return getattr_
