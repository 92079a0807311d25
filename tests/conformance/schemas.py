"""Field lookups in netapp-ontap's resource schemas (generated from ONTAP's REST spec)."""

import importlib
import pkgutil
import re

import marshmallow
import netapp_ontap.resources as resources_pkg


def _resource_classes():
    for info in pkgutil.iter_modules(resources_pkg.__path__):
        module = importlib.import_module(f"netapp_ontap.resources.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and getattr(value, "_path", None) and hasattr(value, "_schema"):
                yield value


_BY_PATH = None


def resource_for(path: str):
    """The resource class whose `_path` is this REST path (`{}` for a variable segment):
    `/api/svm/svms` and `/api/svm/svms/{}` both give `Svm`."""
    global _BY_PATH
    if _BY_PATH is None:
        _BY_PATH = {}
        for cls in _resource_classes():
            generic = re.sub(r"\{[^}]+\}", "{}", cls._path)
            _BY_PATH.setdefault(generic, cls)
    probe = path
    while True:
        if probe in _BY_PATH:
            return _BY_PATH[probe]
        if not probe.endswith("/{}"):
            raise KeyError(path)
        probe = probe[: -len("/{}")]


def _fields(schema) -> dict:
    return {(field.data_key or name): field for name, field in schema.fields.items()}


def top_level(cls) -> set:
    return set(_fields(cls._schema())) - {"_links"}


def has_path(cls, dotted: str) -> bool:
    """Whether `dotted` (`ip.address`, `location.home_node`, `volume-count`) names a field of the
    resource's schema, descending through nested objects and arrays of objects."""
    if dotted in ("*", "**", "_links"):
        return True
    schema = cls._schema()
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if schema is None:
            return False
        field = _fields(schema).get(part)
        if field is None:
            return part == "_links" and i == len(parts) - 1
        if isinstance(field, marshmallow.fields.List):
            field = field.inner
        schema = field.schema if isinstance(field, marshmallow.fields.Nested) else None
    return True
