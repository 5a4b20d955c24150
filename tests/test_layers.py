"""The architecture's rules, held by an ``ast`` walk.

The package's folders are its layers, bottom up (``LAYERS``); a module may import from its
own folder and the folders below, never above. ``print`` and ``sys.exit`` live in the CLI
alone; nothing calls the global ``random`` or ``np.random`` functions; SimPy is used only by
the simulation's folders; pandas and matplotlib only above the run. No module is over 400
lines, no class over 250.
"""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "jobsim"

#: the folders of ``jobsim/``, bottom up; the modules at the top (the package's API, the
#: command line) sit above them all
LAYERS = ("base", "database", "executor", "format", "sim", "analysis", "output", "tools",
          "cli")
TOP = len(LAYERS)
SIMPY_FOLDERS = {"database", "executor", "sim"}
SIMPY_MODULES = {"tools/bench", "tools/bench_models"}  # the bench's baselines: plain SimPy
PANDAS_FREE = {"base", "database", "executor", "format", "sim"}
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 250


def _modules() -> list[Path]:
    return sorted(PKG.rglob("*.py"))


def _name(path: Path) -> str:
    """``folder/module`` (or ``module`` at the top) for messages."""
    return path.relative_to(PKG).with_suffix("").as_posix()


def _layer_of_path(path: Path) -> int:
    parts = path.relative_to(PKG).parts
    return LAYERS.index(parts[0]) if len(parts) > 1 else TOP


def _folder(path: Path) -> str | None:
    parts = path.relative_to(PKG).parts
    return parts[0] if len(parts) > 1 else None


def _target_layer(path: Path, node: ast.ImportFrom) -> tuple[int, str]:
    """The layer (and a name) of what a relative import brings in."""
    here = path.parent.relative_to(PKG).parts
    base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
    dotted = list(base) + ((node.module or "").split(".") if node.module else [])
    if not dotted and node.level:  # ``from . import x`` at the top, or from a folder
        dotted = list(base) + [node.names[0].name]
    if not dotted:
        return TOP, "jobsim"
    head = dotted[0]
    if head in LAYERS:
        return LAYERS.index(head), "/".join(dotted)
    return TOP, "/".join(dotted)


def _imports(path: Path):
    """Imports that run: those under ``if TYPE_CHECKING:`` are for annotations only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
                node.test.id == "TYPE_CHECKING":
            typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level >= 1:
            yield ("own", node)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield (node.module.split(".")[0], node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield (a.name.split(".")[0], node)


def test_every_module_sits_in_a_layer():
    folders = {_folder(p) for p in _modules()} - {None}
    assert folders <= set(LAYERS), folders - set(LAYERS)


def test_imports_point_down():
    bad = []
    for path in _modules():
        me, mine = _name(path), _layer_of_path(path)
        folder = _folder(path)
        for what, node in _imports(path):
            line = node.lineno
            if what == "own":
                layer, target = _target_layer(path, node)
                if layer > mine:
                    above = LAYERS[layer] if layer < TOP else "top"
                    bad.append(f"{me}:{line} imports {target} (layer {above} above "
                               f"{folder or 'top'})")
            elif what == "simpy" and folder not in SIMPY_FOLDERS and me not in SIMPY_MODULES:
                bad.append(f"{me}:{line} imports simpy")
            elif what in ("pandas", "matplotlib") and folder in PANDAS_FREE:
                bad.append(f"{me}:{line} imports {what}")
            elif what == "random":
                bad.append(f"{me}:{line} imports the global random module")
    assert bad == []


def test_the_layer_rules_catch_an_upward_import(tmp_path):
    """The walk itself: an import from a higher folder is reported."""
    fake = PKG / "base" / "errors.py"
    node = ast.parse("from ..sim.world import run").body[0]
    layer, target = _target_layer(fake, node)
    assert layer == LAYERS.index("sim") > _layer_of_path(fake) and target == "sim/world"


def test_no_module_or_class_is_too_long():
    long = []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            long.append(f"{_name(path)}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_CLASS_LINES:
                    long.append(f"{_name(path)}.{node.name}: {n} lines")
    assert long == []


def test_print_and_exit_only_in_the_cli():
    bad = []
    for path in _modules():
        if _folder(path) == "cli" or path.stem in ("cli", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in ("print", "exit", "quit"):
                    bad.append(f"{_name(path)}:{node.lineno} {f.id}()")
                if isinstance(f, ast.Attribute) and f.attr == "exit" and \
                        isinstance(f.value, ast.Name) and f.value.id == "sys":
                    bad.append(f"{_name(path)}:{node.lineno} sys.exit()")
    assert bad == []


def test_no_global_numpy_random():
    bad = []
    allowed = {"default_rng", "Generator", "PCG64", "SeedSequence"}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                    node.value.attr == "random" and node.attr not in allowed:
                bad.append(f"{_name(path)}:{node.lineno} np.random.{node.attr}")
    assert bad == []
