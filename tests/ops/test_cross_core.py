"""The cross-core pipe ops (pypto/ops/cross_core.py): the programs and checks live in tests/mixed; here
the registry-level facts (type rules, spellings) and the coverage list."""
import pytest

import pypto.language as pl
from pypto.errors import PyptoError
from pypto.ops import get_op

COVERED_OPS = {"tile.tpush_to_aic", "tile.tpush_to_aiv", "tile.tpop_from_aic", "tile.tpop_from_aiv",
               "tile.tfree_to_aic", "tile.tfree_to_aiv", "tile.aic_initialize_pipe", "tile.aiv_initialize_pipe",
               "tile.reserve_buffer", "tile.import_peer_buffer"}


def test_every_pipe_op_waits_and_has_both_forms():
    for name in COVERED_OPS:
        op = get_op(name)
        assert op.waits and callable(op.sim) and callable(op.ref), name


def test_system_spellings_name_the_tile_ops():
    assert pl.system.tpush_to_aic.name == "tile.tpush_to_aic"
    assert pl.system.tfree_to_aiv.name == "tile.tfree_to_aiv"
    assert pl.system.reserve_buffer.name == "tile.reserve_buffer"


SRC = '''
import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[16, 16], pl.FP32]):
        BODY
'''


@pytest.mark.parametrize("body, words", [
    ("pl.aic_initialize_pipe(dir_mask=4, slot_size=1024)", "dir_mask must be 1"),
    ("pl.aic_initialize_pipe(dir_mask=1, slot_size=0)", "slot_size must be a positive"),
    ("pl.aic_initialize_pipe(dir_mask=3, slot_size=64, slot_num=2, local_slot_num=4)", "local_slot_num (4) must be <="),
    ("x = pl.tpop_from_aiv(split=0)", "annotate the target"),
    ("b = pl.reserve_buffer(name='b', size=-1)", "size must be a positive"),
])
def test_bad_pipe_arguments_are_located_errors(body, words):
    with pytest.raises(PyptoError) as e:
        pl.parse(SRC.replace("BODY", body), filename="<pipe>")
    assert words in str(e.value) and "<pipe>:9" in str(e.value)
