"""YAML reading shared by spaces and configurations: safe, and strict about duplicate keys."""

from __future__ import annotations

from typing import IO, Any

import yaml

from .exceptions import ConfigError


class _StrictLoader(yaml.SafeLoader):
    """``SafeLoader`` that rejects a key repeated within one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r} at line {key_node.start_mark.line + 1}"
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(stream: "str | IO[str]") -> Any:
    """Parse YAML text or a file object; syntax errors become :class:`ConfigError`."""
    try:
        return yaml.load(stream, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ConfigError(f"not valid YAML: {err}") from None
