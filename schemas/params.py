"""How a strategy's parameter table is checked and how its errors read: (field, rule) pairs.

A strategy's parameters are one pydantic model per strategy (placement/params.py and each
family's `params.py`); the config loader checks a job's `strategy_params` with the class the
strategy table names (schemas/strategies.py), and the registry builds params with it. Both word
their errors here: the field with its description (the paper's symbol), the rule with the value
given.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from schemas.strategies import STRATEGIES

__all__ = ["describe_errors", "params_class", "problems"]


def problems(cls: type[BaseModel], raw: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, rule) for each thing wrong with `raw` as `cls`'s fields; [] when it is valid.

    A field is named with its description (the paper's symbol), a rule with the value given.
    """
    try:
        cls.model_validate(dict(raw))
    except ValidationError as exc:
        return describe_errors(cls, exc)
    return []


def describe_errors(cls: type[BaseModel], exc: ValidationError) -> list[tuple[str, str]]:
    """(field, rule) for each error of `exc`."""
    out = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(p) for p in err["loc"])
        info = cls.model_fields.get(str(err["loc"][0])) if err["loc"] else None
        if info is not None and info.description:
            field = f"{field} ({info.description})"
        if err["type"] == "extra_forbidden":
            rule = f"unknown parameter; {cls.__name__} takes {', '.join(sorted(cls.model_fields))}"
        else:
            rule = f"{err['msg'].removeprefix('Value error, ')}, got {err['input']!r}"
        out.append((field or "(parameters)", rule))
    return out


def params_class(strategy: str) -> type[BaseModel]:
    """The params class the strategy table names for `strategy` (KeyError if unknown).

    It is loaded by the path in the table, as the registry loads it: a family's `params` module
    imports pydantic only (DESIGN.md, "The planner's model"), so checking a config loads no
    solver, and this layer names no planner module in its code.
    """
    module, _, attr = STRATEGIES[strategy].params.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    assert isinstance(cls, type) and issubclass(cls, BaseModel), STRATEGIES[strategy].params
    return cls
