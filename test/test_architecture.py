"""The house: no import circle among the project's modules, and no module importing a layer above its
own in docs/architecture.md's layer table (every import statement counts, inside functions too);
``import robot_dynamics`` loads none of its modules."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "robot_dynamics"
ENTRY = ROOT / "robot_dynamics_executables.py"


def project_modules(root=ROOT):
    """{dotted name: path} of the package's modules and of the executables' entry module."""
    modules = {ENTRY.stem: ENTRY} if (root / ENTRY.name).is_file() else {}
    for path in sorted((root / PACKAGE.name).rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    return modules


def import_edges(modules):
    """{module: {project modules it imports}}: every import statement, relative ones resolved; a module
    importing its own package (``from . import x`` in it) is no edge."""
    edges = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges


def circles(edges):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer_table():
    """[(layer, [module patterns])] from docs/architecture.md, bottom layer first: ``x.py`` is a module of the
    package, ``dir/`` every module under it, ``robot_dynamics_executables.py`` the entry module beside it."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    return [(layer.strip(), re.findall(r"`([\w/]+(?:\.py|/))`", modules)) for layer, modules in rows[1:]]


def layer_of(module, table):
    """The index in ``table`` of ``module``'s layer (the most specific pattern that names it); None if none does."""
    if module == ENTRY.stem:
        relative = ENTRY.stem
    else:
        relative = "/".join(module.split(".")[1:])
    best = None
    for k, (_, patterns) in enumerate(table):
        for pattern in patterns:
            names_it = (relative + "/").startswith(pattern) if pattern.endswith("/") else relative + ".py" == pattern
            if names_it and (best is None or len(pattern) > best[1]):
                best = (k, len(pattern))
    return None if best is None else best[0]


def upward_arrows(edges, table):
    """``(module, imported module)`` pairs where the imported one is in a higher layer."""
    return sorted((a, b) for a, targets in edges.items() for b in targets
                  if layer_of(b, table) is not None and layer_of(a, table) is not None
                  and layer_of(b, table) > layer_of(a, table))


def test_no_import_circle():
    assert circles(import_edges(project_modules())) == []


def test_a_circle_is_found(tmp_path):
    """The check itself: a two-module circle through a function-level import, and a longer one."""
    package = tmp_path / "robot_dynamics"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import f\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    (package / "c.py").write_text("import robot_dynamics.d\n")
    (package / "d.py").write_text("from robot_dynamics import e\n")
    (package / "e.py").write_text("from .c import x\n")
    found = circles(import_edges(project_modules(tmp_path)))
    assert found == [["robot_dynamics.a", "robot_dynamics.b"],
                     ["robot_dynamics.c", "robot_dynamics.d", "robot_dynamics.e"]]


def test_every_module_is_in_a_layer_and_none_imports_a_layer_above_its_own():
    table = layer_table()
    assert [layer for layer, _ in table][:3] == ["child processes", "compiled code", "algebra"]
    modules = project_modules()
    unplaced = [name for name, path in modules.items() if path.name != "__init__.py" and layer_of(name, table) is None]
    assert not unplaced, f"modules in no layer of docs/architecture.md: {unplaced}"
    assert upward_arrows(import_edges(modules), table) == []


def test_an_upward_arrow_is_found():
    table = layer_table()
    edges = {"robot_dynamics.rigid_body.kernels": {"robot_dynamics.nodes.common.runner"}, "robot_dynamics.nodes.common.runner": set()}
    assert upward_arrows(edges, table) == [("robot_dynamics.rigid_body.kernels", "robot_dynamics.nodes.common.runner")]
    edges = {"robot_dynamics.nodes.common.runner": {"robot_dynamics_executables"}, "robot_dynamics_executables": set()}
    assert upward_arrows(edges, table) == [("robot_dynamics.nodes.common.runner", "robot_dynamics_executables")]


def test_no_module_of_the_package_imports_the_executables_entry_module():
    edges = import_edges(project_modules())
    assert not [name for name, targets in edges.items() if ENTRY.stem in targets]


def test_importing_the_package_loads_none_of_its_modules_nor_numba():
    code = ("import sys, robot_dynamics; print(sorted(m for m in sys.modules if m.startswith(('robot_dynamics.', "
            "'numba', 'numpy', 'scipy'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name, module", [("load_urdf", "description.urdf"), ("gravity_torques", "rigid_body.dynamics"),
                                          ("inertia_bounds", "rigid_body.formulations"),
                                          ("elastic_energy", "rigid_body.elastic"), ("examples", "description.examples")])
def test_the_public_names_load_on_first_use(name, module):
    """Each public name is, on first use, the very object its module defines (nothing stands in for it)."""
    import importlib

    import robot_dynamics as rd

    assert name in rd.__all__ and name in dir(rd)
    source = importlib.import_module(f"robot_dynamics.{module}")
    assert getattr(rd, name) is (source if module.endswith(name) else getattr(source, name))
    with pytest.raises(AttributeError, match="no_such_name"):
        rd.no_such_name  # noqa: B018


def test_no_public_name_is_shadowed_by_a_module_of_the_same_name():
    # Importing robot_dynamics.X binds the package's attribute X to that module, which would hide a
    # lazily loaded public function X for good: no public name may also be a module's name.
    code = ("import importlib, pkgutil, types, robot_dynamics as rd\n"
            "for m in pkgutil.iter_modules(rd.__path__): importlib.import_module('robot_dynamics.' + m.name)\n"
            "print(sorted(n for n in rd.__all__ if n != 'examples' and isinstance(getattr(rd, n), types.ModuleType)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


CORE_TOP_LEVEL_MODULES = 8  # the core's top level: a few modules beside its sub-packages
MODULE_LINES, NODE_MODULE_LINES = 500, 350


def test_the_top_level_holds_a_few_modules_beside_the_sub_packages():
    top = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(top) <= CORE_TOP_LEVEL_MODULES, top
    packages = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file())
    assert {"rigid_body", "description", "control", "simulation", "trajectories", "nodes"} <= set(packages)
    for package in packages:  # each says what it holds
        assert len(ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text())) or "") > 40, package


def test_no_module_is_longer_than_its_limit():
    long = {str(path.relative_to(ROOT)): lines for path in sorted(PACKAGE.rglob("*.py"))
            if (lines := len(path.read_text().splitlines()))
            > (NODE_MODULE_LINES if path.relative_to(PACKAGE).parts[0] == "nodes" else MODULE_LINES)}
    assert long == {}


CORE_PACKAGES = ("rigid_body", "description", "control", "simulation", "trajectories")


def core_modules(package=PACKAGE):
    """The core's modules as paths relative to the package (``spatial.py``, ``rigid_body/model.py``): the top
    level and the core's sub-packages, without their ``__init__.py``."""
    paths = list(package.glob("*.py")) + [path for name in CORE_PACKAGES for path in (package / name).glob("*.py")]
    return sorted(path.relative_to(package).as_posix() for path in paths if path.name != "__init__.py")


def module_test_table(text=None):
    """{module path: [test files]} from docs/testing.md's table "Which tests test a module"."""
    text = (ROOT / "docs" / "testing.md").read_text() if text is None else text
    section = text.split("## Which tests test a module", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = line.split("|")
        if not line.startswith("| `") or len(cells) < 4:
            continue
        table[cells[1].strip().strip("`")] = re.findall(r"`(test_\w+\.py)`", cells[2])
    return table


def modules_without_tests(modules, table, test_files):
    """The modules neither named in ``table`` nor having a ``test_<name>.py`` among ``test_files``."""
    return [module for module in modules
            if module not in table and f"test_{Path(module).stem}.py" not in test_files]


def test_every_core_module_is_mapped_to_its_tests_in_docs_testing():
    """docs/testing.md's module → tests table names every module of the core (or the module has a test file of
    its name), every row names at least one test file, every test file it names exists, and every module it
    names exists (or docs/architecture.md names it: a module being moved there)."""
    table = module_test_table()
    test_files = {path.name for path in (ROOT / "test").glob("test_*.py")}
    assert len(core_modules()) >= 25 and "rigid_body/kernels.py" in core_modules()
    assert modules_without_tests(core_modules(), table, test_files) == []
    assert [module for module, files in table.items() if not files] == []
    assert sorted({name for files in table.values() for name in files} - test_files) == []
    # and every row is a module of the tree, or one docs/architecture.md announces (a move under way)
    announced = (ROOT / "docs" / "architecture.md").read_text()
    assert [module for module in table if module not in core_modules()
            and f"`{Path(module).name}`" not in announced and f"`{module}`" not in announced] == []


def test_a_core_module_without_tests_is_found(tmp_path):
    """The check itself: a new module in a core sub-package, named nowhere and without a test file of its name."""
    (tmp_path / "spatial.py").write_text("")
    (tmp_path / "control").mkdir()
    for name in ("__init__.py", "laws.py", "payload.py", "friction.py"):
        (tmp_path / "control" / name).write_text("")
    modules = core_modules(tmp_path)
    assert modules == ["control/friction.py", "control/laws.py", "control/payload.py", "spatial.py"]
    table = module_test_table("## Which tests test a module\n\n| module | test files | oracle |\n|---|---|---|\n"
                              "| `control/laws.py` | `test_laws.py`, `test_task_controller.py` | closed forms |\n"
                              "\n## Next\n| `control/payload.py` | `test_payload.py` | not this table |\n")
    assert table == {"control/laws.py": ["test_laws.py", "test_task_controller.py"]}
    assert modules_without_tests(modules, table, {"test_spatial.py", "test_laws.py"}) == ["control/friction.py",
                                                                                          "control/payload.py"]
