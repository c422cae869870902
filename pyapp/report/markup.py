"""A few lines of HTML building in which nothing from a trace is ever markup.

Every text and attribute value goes through `html.escape` unless it is already a `Markup`
(built here, from escaped parts). A trace is someone else's file: its model id, prompts,
completions and journal can hold `<script>`; in the report they stay text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
"""Tag and attribute names are written by this package only; the check keeps it so."""

VOID = frozenset({"meta", "br", "hr", "img", "link", "input"})


class Markup(str):
    """Already-escaped HTML (or SVG) text, built by `el` or `join`."""


def escape(value: object) -> Markup:
    """`value` as HTML text: `&`, `<`, `>`, `"` and `'` become entities."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def _children(children: Iterable[object]) -> Iterable[str]:
    for child in children:
        if child is None:
            continue
        if isinstance(child, str | int | float):
            yield escape(child)
        else:
            yield from _children(child)  # type: ignore[arg-type]


def join(*children: object) -> Markup:
    """Children concatenated; strings escaped, `Markup` kept, iterables flattened, None dropped."""
    return Markup("".join(_children(children)))


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: object) -> Markup:
    """`<tag attr="value">children</tag>`; an attribute whose value is None or False is left
    out, True writes the bare name. Names must be plain lowercase (they are never data)."""
    if not _NAME.match(tag):
        raise ValueError(f"bad tag name {tag!r}")
    parts = [tag]
    for name, value in (attrs or {}).items():
        if not _NAME.match(name) and name not in ("viewBox", "preserveAspectRatio"):
            raise ValueError(f"bad attribute name {name!r}")
        if value is None or value is False:
            continue
        parts.append(name if value is True else f'{name}="{escape(value)}"')
    opening = f"<{' '.join(parts)}>"
    if tag in VOID:
        return Markup(opening)
    return Markup(f"{opening}{join(*children)}</{tag}>")
