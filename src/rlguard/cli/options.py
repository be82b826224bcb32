"""Option checks shared by the subcommands: each failure is one line naming the option."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from rlguard.errors import InputError


def validated(model: type[BaseModel], **fields) -> BaseModel:  # type: ignore[no-untyped-def]
    """Build a config; a validation failure becomes a one-line error naming the option."""
    try:
        return model(**fields)
    except ValidationError as e:
        err = e.errors()[0]
        loc = "--" + str(err["loc"][0]).replace("_", "-") if err["loc"] else "options"
        raise InputError(f"option {loc}: {err['msg']} (got {err['input']!r})") from None


def names(raw: str, known: list[str], option: str, allow_many: bool = True) -> list[str]:
    """Names from `all` or a comma list (or exactly one name), each checked against `known`."""
    if raw == "all" and allow_many:
        return list(known)
    names = [n.strip() for n in raw.split(",") if n.strip()] if allow_many else [raw]
    choices = ", ".join(known) + (", all" if allow_many else "")
    for name in names:
        if name not in known:
            raise InputError(f"option {option}: unknown name {name!r} (choose from {choices})")
    return names
