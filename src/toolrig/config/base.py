"""The building blocks every config section shares: the base model, its cheap defaults, and value formats.

A section forbids unknown keys (a typo is an error, not a silently ignored setting) and builds its validator
on first use, so a command that reads no config file never pays for the schemas.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar, cast

from pydantic import AfterValidator, BaseModel, ConfigDict

# ------------------------------------------------------------------------------------------ value formats

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*$")
_PERIODS = {
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}  # fmt: skip


def per_second(text: str) -> float:
    count, seconds = parse_rate(text)
    return count / seconds


def parse_rate(text: str) -> tuple[int, float]:
    """``"10/minute"`` -> (10, 60.0): how many calls per how many seconds. ``"5/10m"`` is 5 per ten minutes."""
    match = _RATE.match(text.lower()) if isinstance(text, str) else None
    if not match or match.group(3) not in _PERIODS or int(match.group(1)) < 1 or match.group(2) == "0":
        raise ValueError(f"{text!r} is not a rate: write it like '10/minute', '100/hour', '5/second' or '1000/day'")
    return int(match.group(1)), _PERIODS[match.group(3)] * int(match.group(2) or 1)


def _check_rate(text: str) -> str:
    parse_rate(text)
    return text


RateText = Annotated[str, AfterValidator(_check_rate)]


def _check_profile(name: str) -> str:
    from toolrig.profiles import NAMES

    if name not in NAMES:
        raise ValueError(f"{name!r} is not a tool profile: use one of {', '.join(NAMES)}")
    return name


ProfileName = Annotated[str, AfterValidator(_check_profile)]
Verdict = Literal["allow", "ask", "deny"]
ApprovalMode = Literal["off", "smart", "always"]
_OPERATORS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "in", "glob"})


class Section(BaseModel):
    # defer_build: pydantic builds a model's validator on its first validation, not at import. A call with no
    # config file never validates one (``defaults``), and pays nothing for the 29 models' schemas.
    model_config = ConfigDict(extra="forbid", validate_default=True, defer_build=True)


S = TypeVar("S", bound=Section)


def defaults(model: type[S]) -> S:
    """``model()`` built without validating: the same values, fields left unset, no validator built.

    Validating the defaults needs every nested model's schema, most of a command's start-up when no config
    file exists (the common case). A test holds this equal to ``model()``, value for value and type for type.
    """
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        factory = info.default_factory
        if isinstance(factory, type) and issubclass(factory, Section):
            values[name] = defaults(factory)
        elif info.is_required():
            raise TypeError(f"{model.__name__}.{name} has no default")
        else:
            values[name] = info.get_default(call_default_factory=True, validated_data={})
    return cast(S, model.model_construct(_fields_set=set(), **values))  # pydantic's plugin says Section
