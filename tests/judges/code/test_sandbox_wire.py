"""The code judge's call/answer wire: values round-trip exactly, and whatever else a candidate
sends (bad frames, bad JSON, unknown tags, handles it was never given) is a WireError."""

from __future__ import annotations

import math
import os

import pytest

from rlguard.judges import _sandbox_wire as wire


class Node:  # a class both sides define, as a row's setup would
    def __init__(self, val, next=None):
        self.val, self.next = val, next


Node.__module__ = "__main__"


@pytest.fixture
def link():
    read_fd, write_fd = os.pipe()
    yield wire.Link(read_fd, write_fd, frozenset(wire.OPERATIONS), {"Node": Node})
    os.close(read_fd)
    os.close(write_fd)


def roundtrip(value, link=None):
    return wire.Decoder(link).value(wire.parse(wire.encode(value, link)))


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(-(10**5000), id="huge int"),
        None,
        True,
        0,
        1.5,
        float("inf"),
        "é\n\x00",
        b"\x00\xff",
        bytearray(b"ab"),
        3 + 4j,
        [1, [2, (3, frozenset({4}))]],
        {"a": {1, 2}, (1, "x"): [None]},
    ],
)
def test_plain_values_round_trip_exactly(value):
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


def test_nan_round_trips():
    assert math.isnan(roundtrip(float("nan")))


def test_plain_mode_refuses_anything_else():
    for value in (object(), lambda: 1, Node(1), [1, object()]):
        with pytest.raises(wire.NotPlain):
            wire.encode(value, None)
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(wire.NotPlain):
        wire.encode(cycle, None)


def test_a_shared_class_crosses_by_its_attributes(link):
    back = roundtrip(Node(1, Node(2)), link)
    assert type(back) is Node and back.val == 1 and back.next.val == 2


def test_other_objects_cross_as_handles_and_come_back_as_themselves(link):
    token = object()
    text = wire.encode({"f": token}, link)
    assert text == '{"d":[["f",{"h":0}]]}'
    assert link.own(0) is token
    assert wire.Decoder(link).value({"y": 0}) is token
    decoder = wire.Decoder(link)
    remote = decoder.value({"h": 7})
    assert type(remote) is wire.Remote and decoder.remotes == 1
    assert wire.encode(remote, link) == '{"y":7}'


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[1,", "not JSON"),
        ("[1] 2", "after its JSON"),
        ('{"zz": 1}', "unknown tag"),
        ('{"t": 1}', "not a list"),
        ('{"s": [[1]]}', "malformed"),
        ('{"d": [[1]]}', "pairs"),
        ('{"c": [1, 2]}', "non-floats"),
        ('{"i": "zz"}', "malformed"),
        ('{"o": ["Evil", {"d": []}]}', "not shared"),
        ('{"o": ["Node", {"d": [[1, 2]]}]}', "dict of names"),
        ('{"y": 5}', "never sent"),
        ('{"h": -1}', "malformed handle"),
        ('{"a": 1, "b": 2}', "malformed value"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ],
)
def test_malformed_values_are_wire_errors(link, text, why):
    with pytest.raises(wire.WireError, match=why):
        wire.Decoder(link).value(wire.parse(text))


def test_plain_mode_refuses_handles():
    with pytest.raises(wire.WireError, match="plain data"):
        wire.Decoder(None).value({"h": 0})


def test_frames_are_bounded_and_eof_is_the_other_side_gone():
    read_fd, write_fd = os.pipe()
    try:
        wire.send(write_fd, '["ok",1]')
        assert wire.recv(read_fd) == '["ok",1]'
        os.write(write_fd, (wire.MAX_FRAME + 1).to_bytes(4, "big"))
        with pytest.raises(wire.WireError, match="a frame of"):
            wire.recv(read_fd)
        os.write(write_fd, b"\x00\x00\x00\x02\xff\xfe")
        with pytest.raises(wire.WireError, match="UTF-8"):
            wire.recv(read_fd)
        os.write(write_fd, b"\x00\x00\x00\x09short")
        os.close(write_fd)
        write_fd = -1
        with pytest.raises(wire.WireError, match="gone"):
            wire.recv(read_fd)
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def test_a_dead_link_stays_dead(link):
    link.dead = wire.WireError("a malformed error")
    with pytest.raises(wire.WireError, match="a malformed error"):
        link.request('["op"]')


def test_errors_cross_as_the_nearest_builtin_class(link):
    class Custom(KeyError):
        pass

    message = wire.parse(link.failure(Custom("k")))
    assert message[:2] == ["err", "KeyError"]
    exc = link.error(message)
    assert type(exc) is KeyError and exc.args == ("k",)
    forged = link.error(["err", "NotABuiltin", [], ""])
    assert type(forged) is Exception
    odd = link.error(["err", "UnicodeDecodeError", ["only one"], ""])
    assert isinstance(odd, BaseException)
