"""The frames that carry arguments into the sandbox and answers out of it (sandbox.worker.encode / decode):
plain data and numpy arrays only, every array back with its shape and dtype (a 0-d loss stays 0-d: a (1,)
answer would no longer match a planted mistake's), and a damaged frame refused."""
from __future__ import annotations

import numpy as np
import pytest

from sandbox.worker import decode, encode


@pytest.mark.parametrize("array", [
    np.full((), 2.5, dtype=np.float32), np.arange(6, dtype=np.int64).reshape(2, 3), np.asfortranarray(np.eye(3)),
    np.arange(12.0).reshape(3, 4)[:, ::2], np.zeros((0, 4), dtype=np.float32), np.array([True, False]),
])
def test_an_array_comes_back_with_its_shape_dtype_and_values(array):
    back = decode(encode(array))
    assert back.shape == array.shape and back.dtype == array.dtype and np.array_equal(back, array)


def test_nested_plain_values_come_back_as_they_were_sent():
    value = ({"loss": np.float32(1.5), "ids": [1, 2, None]}, (np.ones(()), "text", True))
    back = decode(encode(value))
    assert back[0]["loss"] == 1.5 and back[0]["ids"] == [1, 2, None]
    assert isinstance(back[1], tuple) and back[1][0].shape == () and back[1][1:] == ("text", True)


def test_anything_else_is_refused():
    with pytest.raises(TypeError):
        encode(object())
    with pytest.raises(ValueError):  # never pickled
        encode(np.array([object()], dtype=object))


@pytest.mark.parametrize("cut", [3, 12, -5])
def test_a_damaged_frame_is_refused(cut):
    frame = encode((np.ones((2, 2)), 1))
    with pytest.raises(ValueError):
        decode(frame[:cut])
