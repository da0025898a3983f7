"""Reading a run's configuration: a YAML or JSON file and ``--set`` overrides into a ``RunConfig`` (its fields'
types checked, each error naming the file or ``--set``), and a ``RunConfig`` back as a YAML file that documents every
field (``hyte train --print-config``). The schema is ``config``; what a config must satisfy is ``config_rules``."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import types
import typing
from functools import cache, partial
from pathlib import Path
from typing import Any

from .config import SECTIONS, STAGES, ConfigError, RunConfig
from .config_rules import validate

# How errors describe the value a field's annotated type wants.
_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping",
             list: "a list", type(None): "null"}


def _field_kinds(section: str, name: str, where: str) -> list:
    """The types the field ``section.name`` accepts (several for ``X | None``; ``list`` for ``list[str]``);
    ConfigError naming the known fields when there is no such field (``where``: whom it blames)."""
    fields = typing.get_type_hints(SECTIONS[section])
    if name not in fields:
        raise ConfigError(f"{where}: unknown field {section}.{name}; known fields: {sorted(fields)}")
    annotation = fields[name]
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    return [typing.get_origin(option) or option for option in options]


def _checked(section: str, name: str, value: Any, where: str) -> Any:
    """``value`` for the field ``section.name`` if its type fits the annotation; ``where`` is whom errors blame."""
    kinds = _field_kinds(section, name, where)
    if Any in kinds or (isinstance(value, bool) and bool in kinds):
        return value
    # bool is an int in Python, but true is no step count
    if not isinstance(value, bool) and (isinstance(value, tuple(kinds)) or (float in kinds and isinstance(value, int))):
        return value
    if float in kinds and isinstance(value, str):
        try:  # PyYAML reads exponents without a dot (1e-5) as strings
            return float(value)
        except ValueError:
            pass
    hint = ""
    if where == "--set" and isinstance(value, str) and (list in kinds or dict in kinds):  # not JSON, so a string
        hint = (" (--set values are read as JSON, and kept as a string when they are not JSON: write a list as "
                "'[\"query\",\"value\"]' and a mapping as '{\"key\": 1}', in single quotes for the shell)")
    raise ConfigError(f"{where}: {section}.{name} must be {' or '.join(_EXPECTED[kind] for kind in kinds)}; "
                      f"got {value!r}{hint}")


def _build(section: str, values: Any, source: str):
    if not isinstance(values, dict | None):  # None: a section left empty, all its defaults
        raise ConfigError(f"{source}: section {section} must be a mapping of fields; got {values!r}")
    return SECTIONS[section](**{name: _checked(section, name, value, source) for name, value in (values or {}).items()})


def parse_config(values: dict[str, Any], source: str = "config") -> RunConfig:
    """Build and validate a RunConfig from a plain dict (as read from YAML/JSON)."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    unknown = sorted(set(values) - {"stage", *SECTIONS})
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {unknown}; known: {sorted({'stage', *SECTIONS})}")
    if values.get("stage") is None:
        raise ConfigError(f"{source}: no stage: add a line such as `stage: contrastive` (one of {', '.join(STAGES)}),"
                          " or run it with `hyte train STAGE`, which supplies its own")
    if values.get("stage") not in STAGES:
        raise ConfigError(f"{source}: stage must be one of {STAGES}; got {values.get('stage')!r}")
    config = RunConfig(values["stage"], **{name: _build(name, values.get(name), source) for name in SECTIONS})
    validate(config, source)
    return config


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, stage: str | None = None) -> RunConfig:
    """Read a YAML (.yaml/.yml) or JSON file; ``overrides`` = {"training.max_steps": 10, ...}; ``stage``: the
    stage of a file that names none (``hyte train STAGE`` passes its own); a file naming another one is refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_config takes the path of a YAML or JSON config file; got {type(path).__name__} "
                        f"{path!r}")
    path = Path(path)
    if path.is_dir():
        configs = sorted(p.name for p in path.glob("*.y*ml"))[:3]
        raise ConfigError(f"config file {path} is a folder: give one config file in it"
                          + (f" (e.g. {path / configs[0]}; it holds {', '.join(configs)} ...)" if configs else ""))
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    values = _read(path)
    if stage is not None and isinstance(values, dict):
        if values.get("stage") is None:
            values["stage"] = stage
        elif values["stage"] != stage:  # before the checks below, which would judge it as the wrong stage
            raise ConfigError(f"{path} is a '{values['stage']}' config; run it with `hyte train {values['stage']}`")
    for dotted, value in (overrides or {}).items():
        section, _, name = dotted.partition(".")
        if section not in SECTIONS:
            raise ConfigError(f"--set {dotted}: unknown section {section!r}; known: {sorted(SECTIONS)}")
        name, _, key = name.partition(".")
        if key:  # model.options.hidden_size=64 sets one entry of a mapping field, merged below
            if dict not in _field_kinds(section, name, "--set"):
                raise ConfigError(f"--set {dotted}: {section}.{name} is not a mapping, so it has no entry {key!r}; "
                                  f"write --set {section}.{name}=VALUE")
            value = {key: value}
        value = _checked(section, name, value, "--set")
        fields = (values.get(section) or {}) if isinstance(values, dict) else None
        if isinstance(fields, dict):
            if isinstance(fields.get(name), dict) and isinstance(value, dict):
                value = {**fields[name], **value}  # model.options={...} changes those options, keeps the file's others
            values[section] = {**fields, name: value}
    return parse_config(values, f"{path} (with --set {', '.join(overrides)})" if overrides else str(path))


def documented_yaml(config: RunConfig, header: str) -> str:
    """``config`` as a YAML file holding every field, each under the comment the schema gives it (``header``: the
    file's first comment lines). Loading the text back gives ``config`` again."""
    import textwrap

    import yaml

    def comment(text: str, indent: str) -> list[str]:
        return [f"{indent}# {line}" for line in textwrap.wrap(" ".join(text.split()), 112 - len(indent))]

    out = [line for paragraph in header.splitlines() for line in comment(paragraph, "")] + [f"stage: {config.stage}"]
    for section, spec in SECTIONS.items():
        written = spec.__doc__ and not spec.__doc__.startswith(f"{spec.__name__}(")  # not dataclass's own signature
        out += ["", *(comment(inspect.getdoc(spec), "") if written else []), f"{section}:"]
        values = getattr(config, section)
        for item in dataclasses.fields(spec):
            out += comment(item.metadata.get("help", ""), "  ")
            # A one-element flow list, brackets dropped: YAML's own quoting of one value on one line.
            value = yaml.safe_dump([getattr(values, item.name)], default_flow_style=True, width=10**6,
                                   allow_unicode=True).strip()[1:-1]
            out.append(f"  {item.name}: {value}")
    return "\n".join(out) + "\n"


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def _read(path: Path) -> Any:
    """The parsed YAML (.yaml/.yml) or JSON (.json) file; syntax errors name the file, line and column, and a key
    given twice in one mapping is refused (both parsers would silently keep the later value)."""
    suffix = path.suffix.lower()
    if suffix not in CONFIG_SUFFIXES:
        raise ConfigError(f"{path}: a config file must end in .yaml, .yml (YAML) or .json (JSON), which says how to "
                          f"read it; got {path.suffix or 'no extension'!r}: rename the file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:  # e.g. saved as UTF-16 by a Windows editor
        raise ConfigError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason}): save it as UTF-8") from None
    if suffix == ".json":
        try:
            return json.loads(text, object_pairs_hook=partial(_unique_json_keys, path))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}, line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}") from None
    import yaml

    try:
        return yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)  # 0-based; absent for errors before parsing (bad characters)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = " ".join(str(getattr(error, "problem", None) or error).split())
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None


def _unique_json_keys(path: Path, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: a dict, or ConfigError for a key given twice in one object."""
    values: dict[str, Any] = {}
    for key, value in pairs:
        if key in values:
            raise ConfigError(f"{path}: key {key!r} appears twice in one JSON object (the later value would "
                              f"silently win): keep one")
        values[key] = value
    return values


@cache
def _unique_key_loader():
    """A yaml.SafeLoader that refuses a key given twice in one mapping (naming it and both lines); built once, on
    first use (PyYAML is imported only when a YAML file is read)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                first_line: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *defaults" may be overridden
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        earlier = first_line.get(key)
                    except TypeError:  # an unhashable key: SafeLoader's own error follows
                        continue
                    if earlier is not None:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"duplicate key {key!r} (first on line {earlier}; the later value would silently "
                            f"win): keep one", key_node.start_mark)
                    first_line[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def parse_override(text: str) -> tuple[str, object]:
    """``"section.field=value"`` -> (key, value): the value read as JSON (numbers, booleans, lists), else a string."""
    key, sep, value = text.partition("=")
    if not sep or "." not in key:
        raise ValueError(f"--set expects section.field=value; got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare string
