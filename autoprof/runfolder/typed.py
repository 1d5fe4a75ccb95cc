"""The base of autoprof's typed records (the report, the what-if record): a msgspec Struct that
owns its JSON in both directions.

A key a newer autoprof added is ignored when read (keys are added without a schema bump); a
key the type names as optional (default ``UNSET``) is left out when written, exactly as the
dict it was read from left it out, so reading then writing gives the same JSON.
"""

from __future__ import annotations

from typing import Any, Self

import msgspec

Num = int | float  # a JSON number kept as written: 3 stays 3, 3.0 stays 3.0
Json = dict[str, Any]
UNSET: Any = msgspec.UNSET  # typed Any so a field reads ``x: str | None = UNSET``


def given(value: Any) -> Any:
    """``value``, or None where the key was absent (``UNSET``)."""
    return None if value is msgspec.UNSET else value


class Model(msgspec.Struct, kw_only=True):
    """A record of the report: ``from_dict``/``from_json`` read it, ``to_dict``/``to_json``
    write it."""

    @classmethod
    def from_dict(cls, data: Any, where: str = "summary") -> Self:
        """``data`` (parsed JSON) as this type; ValueError naming ``where`` and the key when a
        value has the wrong type or a required key is missing."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError as exc:
            raise ValueError(f"{where}: not a {cls.__name__}: {exc}") from None

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "summary") -> Self:
        try:
            return msgspec.json.decode(text, type=cls)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ValueError(f"{where}: not a {cls.__name__}: {exc}") from None

    def to_dict(self) -> Json:
        """The plain dict ``json.dumps`` prints, keys in the type's order."""
        out: Json = msgspec.to_builtins(self)
        return out

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)
