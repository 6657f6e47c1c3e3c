"""pl.unroll / pl.pipeline copy limits: a located error instead of a compile that grows without end."""
import time

import pytest
import torch

from kernels_unroll_limits import pipeline_too_deep, unroll_nest_too_big, unroll_ok, unroll_too_long
from pypto.errors import ParserError, PassError


def _args():
    return torch.randn(16, 64), torch.zeros(16, 64)


def test_one_loop_past_the_reference_limit_is_a_located_error():
    t0 = time.perf_counter()
    with pytest.raises(PassError) as e:
        unroll_too_long.compile(*_args())
    assert not isinstance(e.value, ParserError)   # the source parsed: a pass refused it
    assert time.perf_counter() - t0 < 30      # refused before 1025 copies were made and compiled
    msg = str(e.value)
    assert "copy the loop body 1025 times; the limit is 1024" in msg and "pl.range" in msg
    assert "kernels_unroll_limits.py:9:" in msg and "for k in pl.unroll(1025):" in msg


def test_a_nest_past_the_total_is_refused_before_expanding():
    t0 = time.perf_counter()
    with pytest.raises(PassError, match=r"20200 times in all .* the limit is 16384") as e:
        unroll_nest_too_big.compile(*_args())
    assert time.perf_counter() - t0 < 30
    assert "kernels_unroll_limits.py:19:" in str(e.value)


def test_pipeline_stage_is_capped_too():
    with pytest.raises(PassError, match="stage=2048.*limit is 1024"):
        pipeline_too_deep.compile(*_args())


def test_loops_within_the_limits_still_unroll():
    a, out = _args()
    unroll_ok(a, out)
    assert torch.allclose(out, a * 14)
