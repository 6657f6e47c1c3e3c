"""The type stub pypto/language/__init__.pyi is generated from the registry and current; ``help(pl.add)``
and ``inspect.signature`` show the op's schema and doc (pypto/ops/signature.py)."""
import ast
import inspect
import pydoc

import pypto.language as pl
from pypto.ops.registry import all_ops, dsl_names
from pypto.tools import stubgen


def test_the_committed_stub_is_current():
    assert stubgen.STUB.read_text() == stubgen.render(), (
        "pypto/language/__init__.pyi is stale: run python -m pypto.tools.stubgen -o pypto/language/__init__.pyi")


def test_the_stub_declares_every_public_name_and_op():
    tree = ast.parse(stubgen.STUB.read_text())
    top = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            top |= {a.asname or a.name for a in node.names}
    missing = (set(pl.__all__) | dsl_names()) - top
    assert not missing, missing
    levels = {n.name: {f.name for f in n.body if isinstance(f, ast.FunctionDef)}
              for n in tree.body if isinstance(n, ast.ClassDef)}
    for op in all_ops():
        level, name = op.split(".", 1)
        if level in ("tile", "tensor") and "." not in name:
            assert name in levels[f"_{level.capitalize()}Ops"], op


def test_help_shows_the_signature_and_docstring():
    text = pydoc.render_doc(pl.add, renderer=pydoc.plaintext)
    assert "add(lhs: 'Tensor | Tile', rhs:" in text and "elementwise add" in text
    assert "pl.tile.adds(lhs, rhs)" in text   # every form it dispatches to
    sig = inspect.signature(pl.tile.load)
    assert list(sig.parameters) == [p.name for p in all_ops()["tile.load"].params]
    assert sig.parameters["valid_shape"].default is None
    assert "sum over axis -1" in pl.tile.row_sum.__doc__
    # the class keeps its own docstring
    assert pl.DslOp.__doc__.startswith("A ``pl.<op>`` entry point")


def test_a_schema_change_changes_the_stub(monkeypatch):
    """The stub follows the registry (so the currency test can fail)."""
    from pypto.ops import signature

    real = signature.docstring
    monkeypatch.setattr(signature, "docstring", lambda name: real(name) + " CHANGED")
    assert "CHANGED" in stubgen.render()
