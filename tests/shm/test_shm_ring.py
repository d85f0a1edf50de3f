"""The command ring: framing and wrap-around as a property test, corruption, full ring."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mosaic_sdk.shm.atomics import SharedWords
from mosaic_sdk.shm.layout import RING_HEADER_SIZE, RING_WRITE_POS
from mosaic_sdk.shm.ring import ByteRing, MessageTooLargeError, RingCorruptError, entry_size
from mosaic_sdk.shm.sync import TransportTimeoutError


def make_ring(capacity: int, offset: int = 64) -> tuple[bytearray, ByteRing]:
    buf = bytearray(offset + RING_HEADER_SIZE + capacity + 64)
    return buf, ByteRing(buf, SharedWords(buf), offset, capacity)


operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.binary(max_size=120)),
        st.tuples(st.just("read"), st.none()),
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(capacity=st.sampled_from([16, 24, 64, 136, 256]), ops=operations)
def test_ring_is_a_fifo_of_whole_messages(capacity: int, ops: list) -> None:
    """Any interleaving of writes and reads behaves like a bounded FIFO queue of messages."""
    buf, ring = make_ring(capacity)
    model: list[bytes] = []
    used = 0
    for op, payload in ops:
        if op == "write":
            if entry_size(len(payload)) > capacity:
                with pytest.raises(ValueError, match="does not fit"):
                    ring.try_write(payload)
                continue
            fits = used + entry_size(len(payload)) <= capacity
            assert ring.try_write(payload) is fits
            if fits:
                model.append(payload)
                used += entry_size(len(payload))
        else:
            got = ring.try_read()
            if model:
                expected = model.pop(0)
                assert got == expected
                used -= entry_size(len(expected))
            else:
                assert got is None
        assert ring.pending() == used
    while model:
        assert ring.try_read() == model.pop(0)
    assert ring.try_read() is None
    # nothing was written outside the ring's region
    assert not any(buf[:64]) and not any(buf[64 + RING_HEADER_SIZE + capacity :])


def test_payload_wraps_around_the_end_of_the_data_area() -> None:
    _, ring = make_ring(32)
    assert ring.try_write(b"a" * 12)  # 16 bytes
    assert ring.try_read() == b"a" * 12
    assert ring.try_write(b"0123456789abcdefghij")  # 24-byte entry starting at 16: wraps
    assert ring.try_read() == b"0123456789abcdefghij"
    assert ring.pending() == 0


def test_corrupt_length_is_a_clear_error() -> None:
    buf, ring = make_ring(64)
    assert ring.try_write(b"hello")
    struct.pack_into("<I", buf, 64 + RING_HEADER_SIZE, 1000)
    with pytest.raises(RingCorruptError, match="claims 1000 bytes"):
        ring.try_read()


def test_inconsistent_positions_are_a_clear_error() -> None:
    buf, ring = make_ring(64)
    struct.pack_into("<Q", buf, 64 + RING_WRITE_POS, 1 << 20)
    with pytest.raises(RingCorruptError, match="inconsistent"):
        ring.try_read()


def test_full_ring_makes_the_writer_wait_then_time_out() -> None:
    _, ring = make_ring(32)
    assert ring.try_write(b"x" * 28)
    assert not ring.try_write(b"y")
    with pytest.raises(TransportTimeoutError, match="ring full"):
        ring.write(b"y", timeout=0.05)


def test_full_ring_writer_stops_when_the_check_raises() -> None:
    _, ring = make_ring(32)
    ring.try_write(b"x" * 28)

    def peer_gone() -> None:
        raise RuntimeError("peer gone")

    with pytest.raises(RuntimeError, match="peer gone"):
        ring.write(b"y", timeout=5.0, check=peer_gone)


def test_one_entry_cannot_exceed_the_ring() -> None:
    _, ring = make_ring(64)
    with pytest.raises(ValueError, match="fragments"):
        ring.try_write(b"z" * 61)
    assert ring.try_write(b"z" * ring.max_payload)


def test_a_message_larger_than_the_ring_travels_in_fragments() -> None:
    """write() splits it; the reader, draining between fragments, gets it back whole."""
    _, ring = make_ring(256)
    message = bytes(range(256)) * 37  # 9472 bytes through a 256-byte ring
    received: list[bytes] = []

    def drain() -> None:  # plays the reader woken by each fragment's bell
        while (got := ring.try_read()) is not None:
            received.append(got)

    ring.write(message, timeout=5.0, ring=drain)
    drain()
    assert received == [message]
    ring.write(b"after", timeout=1.0)
    assert ring.try_read() == b"after", "framing continues cleanly after a fragmented message"


def _bounded_ring(max_message: int, resync=None) -> ByteRing:  # noqa: ANN001
    buf = bytearray(64 + RING_HEADER_SIZE + 256 + 64)
    return ByteRing(buf, SharedWords(buf), 64, 256, max_message=max_message, resync=resync)


def test_a_message_of_the_bound_is_read_whole() -> None:
    ring = _bounded_ring(300)  # a 256-byte ring: the reader drains after every fragment
    for part in (b"a" * 100, b"b" * 100):
        assert ring.try_write(part, True) and ring.try_read() is None
    assert ring.try_write(b"c" * 100, False)
    assert ring.try_read() == b"a" * 100 + b"b" * 100 + b"c" * 100


def test_fragments_past_the_bound_are_refused_at_once_and_dropped() -> None:
    """Past max_message the reader raises while fragments still come, keeps nothing, drops the
    rest of the message up to its last entry; the next message is read intact."""
    ring = _bounded_ring(250)
    assert ring.try_write(b"head" + b"a" * 96, True) and ring.try_write(b"b" * 100, True)
    assert ring.try_read() is None  # 200 bytes: below the bound, kept
    assert ring.try_write(b"c" * 100, True)
    with pytest.raises(MessageTooLargeError, match="larger than 250 bytes") as refused:
        ring.try_read()  # 300 bytes: refused before the message's end
    assert refused.value.head.startswith(b"head") and not ring._partial
    for _ in range(5):  # a writer that goes on and on: read, dropped, nothing grows
        assert ring.try_write(b"d" * 100, True)
        assert ring.try_read() is None and not ring._partial
    assert ring.try_write(b"tail", False)  # the refused message's end: dropped too
    assert ring.try_write(b"next", False)
    assert ring.try_read() == b"next"


def test_a_last_fragment_past_the_bound_is_refused_and_the_next_message_read() -> None:
    ring = _bounded_ring(150)
    assert ring.try_write(b"a" * 100, True) and ring.try_write(b"b" * 100, False)
    with pytest.raises(MessageTooLargeError):
        ring.try_read()
    assert ring.try_write(b"next", False)
    assert ring.try_read() == b"next"


def test_after_a_refused_message_resync_finds_the_next_one() -> None:
    """A writer that gave up a refused message and sent a new one: the entry that ends the
    refused message is returned when resync says it begins a message."""
    ring = _bounded_ring(150, resync=lambda entry: entry.startswith(b"MSG"))
    for _ in range(2):
        assert ring.try_write(b"x" * 100, True)
    with pytest.raises(MessageTooLargeError):
        ring.try_read()
    assert ring.try_write(b"MSG ping", False)
    assert ring.try_read() == b"MSG ping"
    for _ in range(2):
        assert ring.try_write(b"x" * 100, True)
    with pytest.raises(MessageTooLargeError):
        ring.try_read()
    assert ring.try_write(b"junk end", False)  # not a message of its own: dropped
    assert ring.try_write(b"MSG next", False)
    assert ring.try_read() == b"MSG next"
