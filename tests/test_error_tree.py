"""The project's errors form one tree, drawn in `core/errors.py`'s docstring: every public
subclass of `C2AError` is drawn there under its parent, once, with the module it lives in
when that is not `core/errors.py`."""

from __future__ import annotations

import importlib
import pkgutil
import re

import core.errors
from core.errors import C2AError

PACKAGES = ("core", "adapters", "harness_bridge", "c2a")
_LINE = re.compile(r"^(?P<indent>[\s│├└─]*)(?P<name>[A-Z]\w+)\b.*?(?:\((?P<where>[\w/.]+\.py)\))?$")


def project_errors() -> list[type[C2AError]]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            importlib.import_module(module.name)
    found: list[type[C2AError]] = []
    stack: list[type[C2AError]] = [C2AError]
    while stack:
        cls = stack.pop()
        found.append(cls)
        stack.extend(cls.__subclasses__())
    return [cls for cls in found if not cls.__name__.startswith("_")]


def drawn() -> dict[str, tuple[str | None, str]]:
    """Each class the docstring draws: its parent and the file it names (core/errors.py if
    none)."""
    tree: dict[str, tuple[str | None, str]] = {}
    parents: list[tuple[int, str]] = []
    doc = core.errors.__doc__ or ""
    for line in doc.splitlines():
        match = _LINE.match(line) if line.startswith("    ") else None
        if match is None:
            continue
        depth = len(match["indent"])
        while parents and parents[-1][0] >= depth:
            parents.pop()
        name = match["name"]
        assert name not in tree, f"{name} is drawn twice"
        tree[name] = (parents[-1][1] if parents else None, match["where"] or "core/errors.py")
        parents.append((depth, name))
    return tree


def test_every_project_error_is_drawn_once_under_its_parent_with_where_it_lives() -> None:
    errors = project_errors()
    names = [cls.__name__ for cls in errors]
    assert sorted(names) == sorted(set(names)), "two error classes share a name"
    tree = drawn()
    assert sorted(tree) == sorted(names)
    for cls in errors:
        parent, where = tree[cls.__name__]
        base = cls.__bases__[0]
        assert parent == (None if cls is C2AError else base.__name__), cls
        assert cls.__module__.replace(".", "/") + ".py" == where, cls


def test_every_project_error_has_a_code_of_its_own() -> None:
    codes = {cls.__name__: cls.code for cls in project_errors()}
    assert len(set(codes.values())) == len(codes), codes


def test_a_code_named_in_the_class_header_is_the_class_code() -> None:
    class _Narrow(C2AError, code="narrow"):
        pass

    class _Narrower(_Narrow):
        pass

    assert (_Narrow("x").code, _Narrower.code, C2AError.code) == ("narrow", "narrow", "error")
