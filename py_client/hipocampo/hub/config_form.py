"""A config section as a form (issue 58 §2): one input per key, its kind from the value in force
and its limits from the key's bounds (hipocampo.config_models.KeyBound), and the form's fields
back into the patch of the keys that changed.

The database still checks every patch (``set_knowledge_base_config``: 22023 / 22003); the
form's ``min``, ``max`` and ``maxlength`` only spare a round trip. Keys a tenant may not change
(``tenant_locked``, ``operator_only``) are shown, disabled.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from markupsafe import Markup, escape

from ..config_models import ConfigSection
from ..errors import InvalidInputError

__all__ = ["ConfigField", "agent_fields", "agent_overrides", "form_fields", "form_patch"]

Kind = Literal["boolean", "integer", "number", "choice", "text", "list", "mapping", "json"]


@dataclass(frozen=True)
class ConfigField:
    """One key of a section as the form shows it: ``value`` as the input holds it (text); ``own``
    when the knowledge base's overrides set it, so the form offers to remove that and go back to
    what the tenant (or the knowledge base's tuning, which a reset does not remove) gives."""

    key: str
    kind: Kind
    value: str
    low: float | None = None
    high: float | None = None
    max_length: int | None = None
    max_items: int | None = None
    choices: list[str] = field(default_factory=list)
    fixed: bool = False
    operator_only: bool = False
    own: bool = False
    placeholder: str = ""

    @property
    def key_html(self) -> Markup:
        """The key with a line-break opportunity after each underscore (never inside a word)."""
        return Markup("_<wbr>").join(escape(part) for part in self.key.split("_"))

    @property
    def editable(self) -> bool:
        """A tenant admin may change it."""
        return not (self.fixed or self.operator_only)


def _kind(value: Any, choices: list[str] | None) -> Kind:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    # Issue 58 §2: no raw JSON for an admin. A list of names is typed as "a, b, c"; a mapping of
    # names to numbers (retrieval.default_trust) as "regulation: 0.9, faq: 0.9"; anything else
    # (none of the keys a tenant changes today) stays JSON.
    if isinstance(value, list) and all(isinstance(x, str) and "," not in x for x in value):
        return "list"
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool) for k, v in value.items()
    ):
        return "mapping"
    if isinstance(value, list | dict):
        return "json"
    return "choice" if choices and isinstance(value, str) else "text"


def _shown(value: Any, kind: Kind) -> str:
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "list":
        return ", ".join(value)
    if kind == "mapping":
        return ", ".join(f"{k}: {v:g}" for k, v in value.items())
    if kind == "json":
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def _mapping(text: str) -> dict[str, float]:
    """ "regulation: 0.9, faq: 0.8" as a mapping; ValueError when an entry is not name: number."""
    out: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, number = part.partition(":")
        if not sep or not name.strip():
            raise ValueError(part)
        out[name.strip()] = float(number)
    return out


def form_fields(section: ConfigSection, own: Collection[str] = ()) -> list[ConfigField]:
    """The section's keys, sorted, as form fields; ``own``, the keys the knowledge base's
    overrides set in this section (``KnowledgeBase.overrides[section]``)."""
    out = []
    for key in sorted(section.values):
        value = section.values[key]
        bound = section.bounds.get(key)
        choices = (bound.values if bound else None) or []
        kind = _kind(value, choices)
        low, high = bound.range if bound and bound.range else (None, None)
        out.append(
            ConfigField(
                key=key,
                kind=kind,
                value=_shown(value, kind),
                low=low,
                high=high,
                max_length=bound.max_length if bound else None,
                max_items=bound.max_items if bound else None,
                choices=choices if kind == "choice" else [],
                fixed=bool(bound and bound.tenant_locked),
                operator_only=bool(bound and bound.operator_only),
                own=key in own,
            )
        )
    return out


def _parsed(section: str, f: ConfigField, text: str) -> Any:
    """A submitted text as the key's kind; 22023 when it is not one."""
    name = f"{section}.{f.key}"
    try:
        if f.kind == "boolean":
            if text not in ("true", "false"):
                raise ValueError
            return text == "true"
        if f.kind == "integer":
            return int(text)
        if f.kind == "number":
            return float(text)
        if f.kind == "list":
            return [x.strip() for x in text.split(",") if x.strip()]
        if f.kind == "mapping":
            return _mapping(text)
        if f.kind == "json":
            return json.loads(text)
    except ValueError:
        what = {
            "boolean": "true or false",
            "integer": "a whole number",
            "number": "a number",
            "mapping": "entries of name: number separated by commas",
        }.get(f.kind, "JSON")
        raise InvalidInputError(f"{name} must be {what}", "22023") from None
    return text


def form_patch(section: ConfigSection, form: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of ``section`` whose submitted value differs from the one in force, parsed by
    kind; a key not submitted (disabled, or absent) is left alone, and an empty text where the
    value in force is null stays null. A key with ``reset:<key>`` ticked is sent as null, which
    removes the knowledge base's override of it (``set_knowledge_base_config``).

    Raises:
        InvalidInputError: a value that is not of its key's kind (22023). A key a tenant may not
            change is left in the patch: the database refuses it (22023, _check_config_patch).
    """
    patch: dict[str, Any] = {}
    for f in form_fields(section):
        if form.get(f"reset:{f.key}"):
            patch[f.key] = None  # the override removed: the tenant's value (or tuning) again
            continue
        if f.key not in form:
            continue
        text = str(form[f.key]).strip() if f.kind != "text" else str(form[f.key])
        current = section.values[f.key]
        if current is None and text == "":
            continue
        value = _parsed(section.name, f, text)
        if value == current and type(value) is type(current):
            continue
        patch[f.key] = value
    return patch


def agent_fields(
    rag: ConfigSection, overrides: Mapping[str, Any], texts: Mapping[str, str] | None = None
) -> list[ConfigField]:
    """The rag section's keys a tenant admin may change, as an agent's form (issue 58 §2): a key
    the agent's ``overrides`` set holds that value (``own``), any other is empty with the value in
    force for the tenant as its ``placeholder``; empty means the agent inherits it. ``texts``: the
    fields as a refused form sent them, shown again instead of ``overrides``."""

    def shown(f: ConfigField) -> str:
        if texts is not None:
            return texts.get(f.key, "")
        return _shown(overrides[f.key], f.kind) if f.key in overrides else ""

    return [
        replace(f, value=shown(f), placeholder=f.value, own=f.key in (texts if texts is not None else overrides))
        for f in form_fields(rag)
        if f.editable
    ]


def agent_overrides(rag: ConfigSection, form: Mapping[str, Any], prefix: str = "rag:") -> dict[str, Any]:
    """An agent's rag overrides from its form (fields named ``<prefix><key>``): each key a tenant
    admin may change whose field is not empty, parsed by kind; the binding is replaced whole
    (``set_agent_binding``), so an emptied field stops overriding.

    Raises:
        InvalidInputError: a value that is not of its key's kind (22023); the database checks the
            bounds (22003).
    """
    out: dict[str, Any] = {}
    for f in form_fields(rag):
        text = str(form.get(prefix + f.key) or "")
        if f.kind != "text":
            text = text.strip()
        if f.editable and text != "":
            out[f.key] = _parsed(rag.name, f, text)
    return out
