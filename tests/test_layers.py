"""The architecture's rules, held by an ``ast`` walk: imports point down the layers; ``print``
and ``sys.exit`` live in the CLI alone; nothing calls the global ``random`` or ``np.random``
functions; SimPy is used only by the simulation modules."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "jobsim"

LAYER = {
    "errors": 0, "outdir": 0, "progress": 0, "rng": 0, "durations": 0, "trace": 0, "dists": 0, "spec": 0, "sql": 0,
    "store": 1, "retry": 1, "handlers": 1, "claims": 2, "config": 2, "policies": 1,
    "dialects": 2,
    "db": 2, "node": 3, "workload": 3, "faults": 3, "world": 5, "cost": 5, "scenario": 4, "fileformat": 4,
    "history": 6, "checks": 6, "metrics": 6, "narrative": 6, "plots": 6, "expect": 6,
    "report": 7, "bench": 7, "sweep": 7, "race": 7,
    "cli": 8, "__main__": 9, "__init__": 9,
}
SIMPY_USERS = {"db", "dialects", "node", "workload", "faults", "world", "bench"}
PANDAS_FREE = {m for m, level in LAYER.items() if level <= 5}


def _imports(path: Path) -> list[tuple[str, int]]:
    """Imports that run: those under ``if TYPE_CHECKING:`` are for annotations only."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and \
                node.test.id == "TYPE_CHECKING":
            typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.append(((node.module or "").split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(("<ext>" + node.module.split(".")[0], node.lineno))
        elif isinstance(node, ast.Import):
            found += [("<ext>" + a.name.split(".")[0], node.lineno) for a in node.names]
    return found


def test_every_module_has_a_layer():
    assert {p.stem for p in PKG.glob("*.py")} <= set(LAYER)


def test_imports_point_down():
    bad = []
    for path in PKG.glob("*.py"):
        me = path.stem
        for mod, line in _imports(path):
            if mod.startswith("<ext>"):
                ext = mod[5:]
                if ext == "simpy" and me not in SIMPY_USERS:
                    bad.append(f"{me}:{line} imports simpy")
                if ext in ("pandas", "matplotlib") and me in PANDAS_FREE:
                    bad.append(f"{me}:{line} imports {ext}")
                if ext == "random":
                    bad.append(f"{me}:{line} imports the global random module")
            elif mod and LAYER[mod] > LAYER[me]:
                bad.append(f"{me}:{line} imports {mod} (layer {LAYER[mod]} > {LAYER[me]})")
    assert bad == []


def test_print_and_exit_only_in_the_cli():
    bad = []
    for path in PKG.glob("*.py"):
        if path.stem in ("cli", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in ("print", "exit", "quit"):
                    bad.append(f"{path.stem}:{node.lineno} {f.id}()")
                if isinstance(f, ast.Attribute) and f.attr == "exit" and \
                        isinstance(f.value, ast.Name) and f.value.id == "sys":
                    bad.append(f"{path.stem}:{node.lineno} sys.exit()")
    assert bad == []


def test_no_global_numpy_random():
    bad = []
    allowed = {"default_rng", "Generator", "PCG64", "SeedSequence"}
    for path in PKG.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                    node.value.attr == "random" and node.attr not in allowed:
                bad.append(f"{path.stem}:{node.lineno} np.random.{node.attr}")
    assert bad == []
