"""The segment layout: code, schema/shm_layout.json and the header round trip agree."""

from __future__ import annotations

import json
import pathlib
import struct

import pytest

from mosaic_sdk.shm import layout as L

SCHEMA = pathlib.Path(__file__).resolve().parents[2] / "schema" / "shm_layout.json"


def test_schema_file_matches_the_code() -> None:
    committed = json.loads(SCHEMA.read_text())
    assert committed == json.loads(json.dumps(L.header_description())), (
        "schema/shm_layout.json is stale: regenerate it with "
        "`python -m mosaic_sdk.shm.layout > schema/shm_layout.json`"
    )


def test_header_fields_fit_one_page_without_overlap() -> None:
    spans = sorted((off, off + struct.calcsize("<" + fmt), n) for n, off, fmt, _ in L.HEADER_FIELDS)
    for (_, end, name), (start, _, nxt) in zip(spans, spans[1:], strict=False):
        assert end <= start, f"{name} overlaps {nxt}"
    assert spans[-1][1] <= L.HEADER_SIZE
    for name, off, fmt, _ in L.HEADER_FIELDS:
        size = struct.calcsize("<" + fmt)
        if fmt in ("I", "Q"):
            assert off % size == 0, f"{name} is not naturally aligned"


def test_sequence_words_sit_on_their_own_cache_lines() -> None:
    assert L.OFF["frame_seq"] // 64 != L.OFF["action_seq"] // 64
    for name in ("frame_seq", "action_seq", "worker_slots"):
        assert L.OFF[name] % 64 == 0
    assert L.OFF["frame_bell"] // 64 == L.OFF["frame_seq"] // 64
    assert L.OFF["action_waiters"] // 64 == L.OFF["action_seq"] // 64
    assert L.OFF["gpu_obs_handle"] + L.GPU_HANDLE_SIZE <= L.OFF["frame_seq"]


def test_regions_are_aligned_ordered_and_sized() -> None:
    lay = L.Layout.compute(4096, 100, 12, image_shape=(64, 48, 3))
    regions = [
        (lay.obs_offset, 4 * 4096 * 100),
        (lay.act_offset, 4 * 4096 * 12),
        (lay.rewards_offset, 4 * 4096),
        (lay.terminated_offset, 4096),
        (lay.truncated_offset, 4096),
        (lay.resets_offset, 4096),
        (lay.cmd_e2c_offset, L.RING_HEADER_SIZE + lay.cmd_ring_size),
        (lay.cmd_c2e_offset, L.RING_HEADER_SIZE + lay.cmd_ring_size),
        (lay.image_offset, 4096 * 64 * 48 * 3),
    ]
    assert regions[0][0] == L.HEADER_SIZE
    for (off, size), (nxt, _) in zip(regions, regions[1:], strict=False):
        assert off % 64 == 0 and off + size <= nxt
    assert lay.image_offset + 4096 * 64 * 48 * 3 <= lay.total_size
    assert lay.image_shape == (64, 48, 3)
    assert L.Layout.compute(1, 1, 1).image_offset == 0


def test_header_round_trip_and_validation() -> None:
    lay = L.Layout.compute(8, 4, 1, image_shape=(2, 3, 1), num_workers=2)
    buf = bytearray(lay.total_size)
    lay.write_header(buf, engine_pid=1234)
    assert L.Layout.read_header(buf) == lay
    assert struct.unpack_from("<I", buf, L.OFF["engine_pid"])[0] == 1234
    bad = bytearray(buf)
    bad[0:4] = b"FLAN"
    with pytest.raises(L.LayoutError, match="magic"):
        L.Layout.read_header(bad)
    bad = bytearray(buf)
    struct.pack_into("<I", bad, L.OFF["version"], 9)
    with pytest.raises(L.LayoutError, match="version 9"):
        L.Layout.read_header(bad)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_envs=0, obs_size=1, act_size=1), "num_envs"),
        (dict(num_envs=1, obs_size=1, act_size=1, cmd_ring_size=100), "cmd_ring_size"),
        (dict(num_envs=1, obs_size=1, act_size=1, num_workers=17), "num_workers"),
        (dict(num_envs=1, obs_size=1, act_size=1, mode=5), "mode"),
    ],
)
def test_bad_sizes_get_clear_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(L.LayoutError, match=message):
        L.Layout.compute(**kwargs)


def test_markdown_tables_list_the_same_fields() -> None:
    text = (SCHEMA.parent / "shm_layout.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`"):
            rows[cells[2].strip("`")] = cells[0].lstrip("+")
    for name, off, _, _ in L.HEADER_FIELDS + L.WORKER_FIELDS:
        assert rows.get(name) == str(off), f"schema/shm_layout.md: {name} should be at {off}"


@pytest.mark.parametrize("kind", L.LAYOUTS)
def test_creator_pid_reads_the_engine_pid_of_either_header(kind: str) -> None:
    lay = L.Layout.compute(2, 3, 1, kind=kind)
    buf = bytearray(L.HEADER_SIZE)
    lay.write_header(buf, 4321)  # an lrbc header before its magic is published
    assert L.creator_pid(buf) == 4321
    if kind == L.LAYOUT_LRBC:
        struct.pack_into("<I", buf, 0, L.LRBC_MAGIC)
        assert L.creator_pid(buf) == 4321


def test_creator_pid_is_none_for_another_programs_bytes() -> None:
    assert L.creator_pid(bytes(4096)) is None  # zeros: no header (yet)
    other = bytearray(4096)
    other[:16] = b"FLNE" + struct.pack("<III", 7, 4321, 4321)
    assert L.creator_pid(other) is None
    assert L.creator_pid(b"MSHM") is None  # too short to hold the pid
