"""The key the scheduler compares a GANG_SAME kernel's shared scalar arguments by
(simulator._arg_key): tasks join one gang only when those values agree bit for bit."""
import struct

import numpy as np
import torch

from pypto.runtime import simulator as S
from pypto.runtime.task_graph import Task


def _task(*args):
    return Task(0, 1, "k", "kernel", list(args), [], False)


def test_floats_compare_bit_for_bit_and_types_are_kept_apart():
    key = S._arg_key
    assert key(_task(None, 0.5), (1,)) == ((float, struct.pack("<d", 0.5)),)
    assert key(_task(None, 0.0), (1,)) != key(_task(None, -0.0), (1,))
    nan = float("nan")
    assert key(_task(None, nan), (1,)) == key(_task(None, nan), (1,))   # the same bits: may share a gang
    assert key(_task(1, 1.0, True), (0,)) != key(_task(1.0, 1, True), (0,))
    assert key(_task(1, 1.0, True), (2,)) != key(_task(1, 1.0, 1), (2,))
    assert key(_task(7, 2.5, False), (0, 1, 2)) == ((int, 7), (float, struct.pack("<d", 2.5)), (bool, False))
    t = torch.tensor([1.0, -0.0])
    assert key(_task(t), (0,)) == ((torch.float32, t.numpy().tobytes()),)
    assert key(_task(t), (0,)) != key(_task(torch.tensor([1.0, 0.0])), (0,))


def test_numpy_scalars_compare_by_their_bytes():
    """np.float32(-0.0) == np.float32(0.0): compared by value, two tasks differing only in the
    sign of a zero scale could share a gang (the gang reads the drawn task's value for all)."""
    key = S._arg_key
    assert key(_task(np.float32(0.0)), (0,)) != key(_task(np.float32(-0.0)), (0,))
    assert key(_task(np.float64(0.0)), (0,)) != key(_task(np.float64(-0.0)), (0,))   # (a float subclass)
    assert key(_task(np.float32(1.5)), (0,)) == key(_task(np.float32(1.5)), (0,))
    assert key(_task(np.float32(1.5)), (0,)) != key(_task(np.float16(1.5)), (0,))
    assert key(_task(np.int32(3)), (0,)) == key(_task(np.int32(3)), (0,))
