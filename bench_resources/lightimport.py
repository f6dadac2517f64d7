"""Import one module of a large package without running the package's ``__init__`` files, when they cannot run.

VBench's ``__init__`` imports decord and its whole evaluation stack; pyiqa's imports every metric (scipy, ...). The
paper slots need one network file of each (AMT-S, MUSIQ). In this environment the normal import works and is used;
on a machine that holds only the network files' own imports (the device kit), the package ``__init__`` fails and
the module is loaded with its parent packages as bare package objects (a ``__path__`` and nothing else), so its
sibling imports (``vbench.third_party.amt.utils...``) resolve to files while no ``__init__`` code runs."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types


def _bare_package(name: str) -> types.ModuleType:
    parent, _, leaf = name.rpartition(".")
    if parent:
        outer = sys.modules.get(parent) or _bare_package(parent)
        path = [p + "/" + leaf for p in outer.__path__]
    else:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"no package {name!r}", name=name)
        path = list(spec.submodule_search_locations)
    mod = types.ModuleType(name)
    mod.__path__ = path
    mod.__package__ = name
    mod.__bench_bare_package__ = True   # marks a stand-in: its __init__ never ran
    sys.modules[name] = mod
    if parent:
        setattr(sys.modules[parent], leaf, mod)
    return mod


def import_module(name: str, bare_packages: dict[str, tuple[str, ...]]) -> types.ModuleType:
    """``importlib.import_module(name)``; if that raises ImportError, the packages named in ``bare_packages``
    become bare stand-ins and ``name`` is imported again. A package's tuple names its submodules whose public names
    the real ``__init__`` re-exports and the module needs (``{"pyiqa.matlab_utils": ("padding",)}``: ``from
    pyiqa.matlab_utils import ExactPadding2d``); they are imported into the stand-in. The second error, if any, is
    raised with the first as its cause."""
    try:
        return importlib.import_module(name)
    except ImportError as first:
        for k in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
            del sys.modules[k]
        for pkg in bare_packages:
            if pkg in sys.modules and not getattr(sys.modules[pkg], "__bench_bare_package__", False):
                continue
            sys.modules.pop(pkg, None)
            _bare_package(pkg)
        for pkg, subs in bare_packages.items():
            for sub in subs:
                m = importlib.import_module(f"{pkg}.{sub}")
                for k, v in vars(m).items():
                    if not k.startswith("_"):
                        setattr(sys.modules[pkg], k, v)
        try:
            return importlib.import_module(name)
        except ImportError as second:
            raise second from first
