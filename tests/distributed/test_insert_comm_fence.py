"""InsertCommFence (the reference's pass, last in the pipeline): the data-before-signal markers
after window writes, remote writes and waits in kernels; idempotent; the printed result re-parses.
The markers change no value on the simulator (the distributed tests' bit-exact checks run with
them)."""
import pypto.language as pl
from pypto import passes
from pypto.ir.nodes import EvalStmt
from pypto.passes import PIPELINE

SRC = '''
import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class Fenced:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
          data: pl.InOut[pld.DistributedTensor[[1, 64], pl.FP32]],
          sig: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]]) -> pl.Tensor[[1, 64], pl.FP32]:
        t: pl.Tile[[1, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [1, 64])
        data_1: pld.DistributedTensor[[1, 64], pl.FP32] = pl.tile.store(t, [0, 0], data)
        pl.dist.notify(sig, 1, [0, 0], 1)
        pl.dist.wait(sig, [0, 0], 1)
        pl.dist.remote_store(t, data_1, 1, [0, 0])
        y_1: pl.Tensor[[1, 64], pl.FP32] = pl.tile.store(t, [0, 0], y)
        return y_1
'''


def _body_ops(prog):
    out = []
    for s in prog.functions[0].body:
        c = s.expr if isinstance(s, EvalStmt) else getattr(s, "value", None)
        out.append(getattr(c, "op", type(s).__name__))
    return out


def test_markers_land_after_their_writes_and_waits_only():
    prog = pl.parse(SRC)
    after = passes.insert_comm_fence()(prog)
    assert _body_ops(after) == [
        "tile.load",
        "tile.store", "system.cacheinvalid", "system.fence",   # a window store: region invalidate + fence
        "dist.notify",                                         # a notify: nothing
        "dist.wait", "system.cacheinvalid",                    # a wait: whole-GM invalidate
        "dist.remote_store", "system.fence",                   # a remote write: fence
        "tile.store",                                          # a plain tensor: nothing
        "ReturnStmt"]
    region = after.functions[0].body[2].expr
    assert region.args[0].name == "data_1" and [e.value for e in region.args[1].elements] == [1, 64] \
        and [e.value for e in region.args[2].elements] == [0, 0]
    assert all(a is None for a in after.functions[0].body[6].expr.args)   # the whole-GM form


def test_idempotent_and_the_printed_form_reparses():
    once = passes.insert_comm_fence()(pl.parse(SRC))
    twice = passes.insert_comm_fence()(once)
    assert twice.as_python() == once.as_python()
    text = once.as_python()
    assert "pld.DistributedTensor[[1, 64], pl.FP32]" in text and "import pypto.language.distributed as pld" in text
    assert pl.parse(text).as_python() == text


def test_it_is_the_last_pass_of_the_pipeline():
    assert PIPELINE[-1].NAME == "InsertCommFence"
