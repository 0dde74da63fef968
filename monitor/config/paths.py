"""How a configuration problem says where it is, in words a person finds in the file.

pydantic locates a problem by position (``sites.0.rain.thresold_in``). A
person looks for a site by its id, and a typo'd key by the key it was meant
to be, so the lines ``check-config`` prints say both:

* a list item that has a valid, unique ``id`` is named by it
  (``sites.branch-meadows.rain.thresold_in``; ``sensors.rg1``), any other
  by its position, as before;
* an unknown field names the nearest field the model has at that place
  (``unknown field; did you mean threshold_in?``), when one is close
  (``difflib``'s ratio of 0.6 or more); the model comes from the schema
  itself, so a new field is suggested without a list to keep.
"""

from __future__ import annotations

import difflib
import re
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from .base import ID_PATTERN

_ID = re.compile(ID_PATTERN)


def named_path(path: str, data: Any) -> str:
    """``path`` (dot-separated, as pydantic locates a problem in ``data``) with each
    list position replaced by its item's id where that id is valid and unique."""
    out: list[str] = []
    node = data
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit():
            index = int(part)
            item = node[index] if index < len(node) else None
            ident = item.get("id") if isinstance(item, dict) else None
            ids = [x.get("id") for x in node if isinstance(x, dict)]
            unique = isinstance(ident, str) and _ID.match(ident) and ids.count(ident) == 1
            out.append(ident if unique and isinstance(ident, str) else part)
            node = item
        else:
            out.append(part)
            node = node.get(part) if isinstance(node, dict) else None
    return ".".join(out)


def nearest_field(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The field of the model at ``loc`` (the location of an unknown key, the key last)
    that is nearest to the unknown key, or None when none is close."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return None
        current = _model_of(fields[part].annotation)
        if current is None:
            return None
    fields = getattr(current, "model_fields", None)
    if not fields or not isinstance(loc[-1], str):
        return None
    close = difflib.get_close_matches(loc[-1], list(fields), n=1, cutoff=0.6)
    return close[0] if close else None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation holds (through lists, optionals, unions)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (list, tuple, Union, types.UnionType) or origin is not None:
        for arg in get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None
