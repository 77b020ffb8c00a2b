"""Engine parts are composed, not assembled from mixins (issue 35 item 1): the engine's side of test_console_parts.

A class assembled from mixins shares one ``self`` between every part: any part reads or changes any other's
fields, each mixin needs a Protocol of its owner's privates to type-check (or a ``return self  # type: ignore``),
and no part can be built or tested alone. A part is an object of its own, given the narrow things it uses.

So a class under engine/ may inherit from another engine class only when that base is an interface or a kind of
value, not a bag of behaviour for someone else's ``self``: a ``Protocol``, an ``ABC`` (or a class with abstract
methods), an exception, a pydantic model, a dataclass (events are dataclasses), a ``TypedDict``, an ``Enum`` or a
``NamedTuple`` — directly or through such a base of its own. Anything else is listed in ``ALLOWED`` with its
reason, and that list is a ratchet: an entry no longer needed fails too. The scan is of the AST (importing every
engine module would start servers' imports and optional providers), resolving each base through the module's
imports to the engine class it names.

``python tests/gates/test_engine_no_mixins.py`` prints every engine class that inherits implementation.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "engine"
# Names (as written in a base list or reached through ``typing``/``abc``/...) that make a class an interface or a
# value kind; a class inheriting from one of these, or from an engine class that does, is not a mixin assembly.
KIND_ROOTS = {
    "Protocol": "Protocol",
    "ABC": "ABC",
    "BaseException": "exception",
    "Exception": "exception",
    "BaseModel": "pydantic model",
    "RootModel": "pydantic model",
    "TypedDict": "TypedDict",
    "NamedTuple": "NamedTuple",
    "Enum": "Enum",
    "IntEnum": "Enum",
    "StrEnum": "Enum",
    "Flag": "Enum",
}
# Builtin exceptions are named by their suffix (``RuntimeError``, ``KeyboardInterrupt``, ``UserWarning`` ...).
EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt")
# "engine.module.Class" -> why inheriting from it is legitimate. A ratchet: remove an entry once it is not needed.
ALLOWED: dict[str, str] = {
    "engine.tools.timers.Timer": "a Deadline is a Timer (is-a, slots kept): the wheel schedules and fires it as one",
    "engine.mcp.transport_watch.EndWatchStream": "_ChildCheck is that stream wrapper with one check added on a "
    "broken connection: a specialisation overriding one method, not parts sharing a self",
    "engine.mcp.oauth.EngineOAuth": "the engine's mcp-SDK OAuthClientProvider (subclassing is the SDK's extension "
    "point); each machine-to-machine grant overrides how its token request is made",
}


@dataclass
class ClassInfo:
    qualname: str
    node: ast.ClassDef
    bases: list[str] = field(default_factory=list)  # engine classes, as "module.Class"
    foreign: list[str] = field(default_factory=list)  # other bases, as written


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve_relative(mod: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = mod.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    base = ".".join(parts[:keep])
    return f"{base}.{node.module}" if node.module else base


def _imported(tree: ast.Module, mod: str, is_package: bool) -> dict[str, str]:
    """Local name -> the dotted thing it names, for every import anywhere in the module."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            src = _resolve_relative(mod, is_package, node)
            for a in node.names:
                names[a.asname or a.name] = f"{src}.{a.name}"
    return names


def _is_dataclass(node: ast.ClassDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        text = ast.unparse(target)
        if text.split(".")[-1] in ("dataclass", "define", "frozen", "attrs"):
            return True
    return False


def _has_abstract(node: ast.ClassDef) -> bool:
    if any(kw.arg == "metaclass" and ast.unparse(kw.value).endswith("ABCMeta") for kw in node.keywords):
        return True
    for item in node.body:
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            if any(ast.unparse(d).split(".")[-1].startswith("abstract") for d in item.decorator_list):
                return True
    return False


@cache  # one parse of engine/ for both tests
def engine_classes() -> dict[str, ClassInfo]:
    """Every top-level (or nested) class under engine/, keyed by ``module.Class``, with its bases resolved."""
    parsed: dict[str, tuple[ast.Module, bool]] = {}
    for p in sorted((ROOT / PACKAGE).rglob("*.py")):
        if "__pycache__" not in p.parts:
            parsed[module_name(p)] = (ast.parse(p.read_text(encoding="utf-8")), p.name == "__init__.py")
    # what each module's top-level names refer to (its own classes, and what it imports: re-exports resolve)
    exports: dict[str, dict[str, str]] = {}
    for mod, (tree, is_package) in parsed.items():
        table = _imported(tree, mod, is_package)
        table.update({n.name: f"{mod}.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef)})
        exports[mod] = table
    classes = {
        f"{mod}.{n.name}": n for mod, (tree, _) in parsed.items() for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
    }

    def canonical(dotted: str, seen: int = 0) -> str:
        """Follow re-exports (``from engine.events import Event`` where events/__init__ imports it) to the class."""
        if dotted in classes or seen > 10:
            return dotted
        mod, _, name = dotted.rpartition(".")
        target = exports.get(mod, {}).get(name)
        return canonical(target, seen + 1) if target and target != dotted else dotted

    out: dict[str, ClassInfo] = {}
    for qual, node in classes.items():
        mod = qual.rpartition(".")[0]
        info = ClassInfo(qual, node)
        for base in node.bases:
            root = base.value if isinstance(base, ast.Subscript) else base
            text = ast.unparse(root)
            head, _, rest = text.partition(".")
            dotted = exports[mod].get(head, "")
            dotted = canonical(f"{dotted}.{rest}" if dotted and rest else dotted)
            if dotted.startswith(f"{PACKAGE}.") and dotted in classes:
                info.bases.append(dotted)
            else:
                info.foreign.append(text)
        out[qual] = info
    return out


def kind_of(qual: str, classes: dict[str, ClassInfo], seen: frozenset[str] = frozenset()) -> str | None:
    """Why this engine class is an interface or a value kind (so inheriting from it is fine), or None."""
    info = classes[qual]
    if _is_dataclass(info.node):
        return "dataclass"
    if _has_abstract(info.node):
        return "ABC"
    for text in info.foreign:
        last = text.split(".")[-1]
        if last in KIND_ROOTS:
            return KIND_ROOTS[last]
        if last.endswith(EXCEPTION_SUFFIXES):
            return "exception"
    for base in info.bases:
        if base not in seen and (kind := kind_of(base, classes, seen | {qual})) is not None:
            return kind
    return None


def mixin_bases() -> dict[str, list[str]]:
    """Each engine class -> the engine bases it inherits implementation from (those no kind makes legitimate)."""
    classes = engine_classes()
    found: dict[str, list[str]] = {}
    for qual, info in classes.items():
        bad = [b for b in info.bases if kind_of(b, classes) is None]
        if bad:
            found[qual] = bad
    return found


def test_no_engine_class_inherits_implementation() -> None:
    found = mixin_bases()
    unexpected = {cls: bases for cls, bases in found.items() if any(b not in ALLOWED for b in bases)}
    assert not unexpected, (
        "engine classes that inherit behaviour from another engine class (compose a part given the narrow things "
        f"it uses instead, or list the base in ALLOWED with the reason): {unexpected}"
    )
    used = {b for bases in found.values() for b in bases}
    gone = sorted(set(ALLOWED) - used)
    assert not gone, f"no class inherits from these any more, remove them from ALLOWED: {gone}"


def test_the_scan_resolves_engine_bases() -> None:
    """The scan sees real inheritance (a scan that resolved nothing would pass the test above vacuously)."""
    classes = engine_classes()
    provider = classes["engine.providers.scripted.ScriptedProvider"]
    assert "engine.providers.base.Provider" in provider.bases
    assert kind_of("engine.providers.base.Provider", classes) == "ABC"
    assert kind_of("engine.providers.base.ProviderError", classes) == "exception"
    assert kind_of("engine.events.catalog.Event", classes) == "dataclass"


if __name__ == "__main__":
    for cls, bases in sorted(mixin_bases().items()):
        print(f"{cls}({', '.join(bases)})")
    sys.exit(0)
