"""Typed results of the configuration methods (issue 60 §4).

The database keeps each config section as config.toml declares it: the keys with their values,
and beside a key the bounds a tenant's patch is checked against (``<key>_range``,
``<key>_max_length``, ``<key>_max_items``, ``<key>_regex``, ``<key>_values``, ``<key>_keys``,
the section's ``tenant_locked`` and ``operator_only`` lists; docs/design.md §thresholds). These
models split the two: ``values`` (what is in force) and ``bounds`` (what a key accepts), so a form
can be built from a section (the hub's settings) and a reader indexes values as before
(``config["rag"]["top_k"]``). What each key means, with its unit, is config.toml's comment above
it (``hipocampo config show`` prints the bounds).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field, JsonValue

__all__ = ["ConfigSection", "EffectiveConfig", "KeyBound", "ModelCalibration", "RagConfig"]

BOUND_SUFFIXES = ("_range", "_max_length", "_max_items", "_regex", "_values", "_keys")
SECTION_LISTS = ("tenant_locked", "operator_only")


class KeyBound(BaseModel):
    """What one key accepts from a tenant's patch (the database checks it in set_tenant_config and the others)."""

    range: tuple[int | float, int | float] | None = Field(
        default=None, description="inclusive numeric bounds (<key>_range), as config.toml writes them"
    )
    max_length: int | None = Field(default=None, ge=0, description="characters at most (<key>_max_length)")
    max_items: int | None = Field(default=None, ge=0, description="list items at most (<key>_max_items)")
    regex: bool | None = Field(default=None, description="each text must compile as a POSIX regex (<key>_regex)")
    values: list[str] | None = Field(default=None, description="the texts allowed, at any depth (<key>_values)")
    keys: list[str] | None = Field(default=None, description="the names an object may use (<key>_keys)")
    tenant_locked: bool = Field(default=False, description="fixed: a tenant's patch may not change it (22023)")
    operator_only: bool = Field(default=False, description="service_role only (42501 for a tenant admin)")


class ConfigSection(BaseModel):
    """One config section: the keys in force (``values``) and, where the stored section carries
    them, what each key accepts (``bounds``; empty for a tenant's or a knowledge base's overrides,
    which hold values only). Read it like a mapping of values: ``section["top_k"]``,
    ``section.get("top_k")``, ``"top_k" in section``, ``section.items()``."""

    name: str = Field(description="the section, as config.toml names it: rag, retrieval, memory, …")
    values: dict[str, JsonValue] = Field(default_factory=dict)
    bounds: dict[str, KeyBound] = Field(default_factory=dict)
    tenant_locked: list[str] | None = Field(default=None, description="keys no tenant may change, as stored")
    operator_only: list[str] | None = Field(default=None, description="keys only service_role may change")

    @classmethod
    def parse(cls, name: str, stored: Mapping[str, Any]) -> ConfigSection:
        """The section as the database stores it (values and bound keys side by side), split."""
        lists = {k: set(stored.get(k) or ()) for k in SECTION_LISTS}
        values: dict[str, Any] = {}
        bounds: dict[str, dict[str, Any]] = {}
        for key, value in stored.items():
            base = next((key[: -len(s)] for s in BOUND_SUFFIXES if key.endswith(s) and key[: -len(s)] in stored), None)
            if key in SECTION_LISTS:
                continue
            if base is not None:
                bounds.setdefault(base, {})[key[len(base) + 1 :]] = value
            else:
                values[key] = value
        for key in values:
            flags = {k: True for k, names in lists.items() if key in names}
            if flags:
                bounds.setdefault(key, {}).update(flags)
        return cls(
            name=name,
            values=values,
            bounds={k: KeyBound.model_validate(b) for k, b in bounds.items()},
            tenant_locked=stored.get("tenant_locked"),
            operator_only=stored.get("operator_only"),
        )

    def stored(self) -> dict[str, Any]:
        """The section as the database stores it: values, then each key's bound keys and the
        section's lists (the inverse of ``parse``)."""
        out: dict[str, Any] = dict(self.values)
        for key, b in self.bounds.items():
            for field in ("range", "max_length", "max_items", "regex", "values", "keys"):
                if getattr(b, field) is not None:
                    out[f"{key}_{field}"] = list(b.range) if field == "range" and b.range else getattr(b, field)
        for name in SECTION_LISTS:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __contains__(self, key: object) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when the section has no such key."""
        return self.values.get(key, default)

    def keys(self) -> Iterator[str]:
        """The section's keys (bound keys left out)."""
        return iter(self.values)

    def items(self) -> Iterator[tuple[str, Any]]:
        """(key, value) pairs of the section."""
        return iter(self.values.items())


class RagConfig(ConfigSection):
    """The rag section in force for a question (``hipocampo.rag_config``: global <- tenant <- KB
    <- agent binding), with the knowledge bases it answers from."""

    kb_ids: list[UUID] = Field(default_factory=list, description="the agent's knowledge bases, or [kb_id]")
    agent: str | None = Field(default=None, description="the agent binding named, if any")

    @classmethod
    def from_rpc(cls, stored: Mapping[str, Any]) -> RagConfig:
        """``rag_config``'s object: the rag keys plus kb_ids and agent."""
        rest = {k: v for k, v in stored.items() if k not in ("kb_ids", "agent")}
        section = ConfigSection.parse("rag", rest)
        return cls(
            **section.model_dump(exclude={"bounds"}),
            bounds=section.bounds,
            kb_ids=list(stored.get("kb_ids") or []),
            agent=stored.get("agent"),
        )

    def stored(self) -> dict[str, Any]:
        """As ``rag_config`` returns it (kb_ids as text)."""
        return super().stored() | {"kb_ids": [str(k) for k in self.kb_ids], "agent": self.agent}


class EffectiveConfig(BaseModel):
    """The configuration in force for a tenant or a knowledge base (``hipocampo.effective_config``:
    global <- the active embedding model's calibration <- tenant <- knowledge base), one
    ConfigSection per section. Read it like a mapping: ``config["retrieval"]["dense_weight"]``."""

    sections: dict[str, ConfigSection] = Field(default_factory=dict)

    @classmethod
    def parse(cls, stored: Mapping[str, Any]) -> EffectiveConfig:
        """``effective_config``'s object: {section: stored section}."""
        return cls(
            sections={
                name: ConfigSection.parse(name, body) if isinstance(body, Mapping) else ConfigSection(name=name)
                for name, body in stored.items()
            }
        )

    def stored(self) -> dict[str, Any]:
        """As the database returns it: {section: values and bound keys}."""
        return {name: s.stored() for name, s in self.sections.items()}

    def __getitem__(self, section: str) -> ConfigSection:
        return self.sections[section]

    def __contains__(self, section: object) -> bool:
        return section in self.sections

    def get(self, section: str, default: ConfigSection | None = None) -> ConfigSection | None:
        """The section, or ``default``."""
        return self.sections.get(section, default)

    def items(self) -> Iterator[tuple[str, ConfigSection]]:
        """(name, section) pairs."""
        return iter(self.sections.items())


class ModelCalibration(BaseModel):
    """An embedding model's calibration as stored (``hipocampo.set_model_calibration``): per
    section the calibrated keys (thresholds as cosines in [-1, 1], weights in [0, 100],
    coverage_dense_boost in [1, 100]; docs/design.md §thresholds)."""

    model: str
    sections: dict[str, dict[str, float]]
