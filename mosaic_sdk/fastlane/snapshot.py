"""Writing a FastLane frame to PNG with its HUD, using only zlib and struct.

The PNG holds the frame's pixels unchanged, a black strip below them with the HUD drawn in a
built-in 3x5 pixel font (upper case), and the exact HUD values as ``tEXt`` chunks
(``last_reward``, ``rolling_return``, ``step_rate_hz``, ``hud``), so the numbers can be read
back without OCR. Gray frames become 8-bit gray PNGs, RGB and RGBA keep their channels.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from mosaic_sdk.fastlane.records import FastLaneMetrics

_GLYPHS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
    ".": "000000000000010",
    "-": "000000111000000",
    "+": "000010111010000",
    ":": "000010000010000",
    "/": "001001010100100",
    " ": "000000000000000",
    "A": "010101111101101",
    "C": "011100100100011",
    "D": "110101101101110",
    "E": "111100110100111",
    "F": "111100110100100",
    "G": "011100101101011",
    "H": "101101111101101",
    "I": "111010010010111",
    "L": "100100100100111",
    "N": "101111111101101",
    "O": "010101101101010",
    "P": "110101110100100",
    "R": "110101110101101",
    "S": "011100010001110",
    "T": "111010010010010",
    "U": "101101101101111",
    "W": "101101111111101",
    "Z": "111001010100111",
}
_UNKNOWN = "111101101101111"
GLYPH_W, GLYPH_H = 3, 5


def hud_lines(metrics: FastLaneMetrics) -> list[str]:
    """The HUD as drawn: the viewer's three lines, upper case."""
    return metrics.hud_text().upper().splitlines()


def render_text(lines: list[str], scale: int = 2) -> np.ndarray:
    """A white-on-black uint8 mask (H, W) of ``lines`` in the built-in font."""
    cols = max((len(line) for line in lines), default=0)
    pitch_x, pitch_y = (GLYPH_W + 1) * scale, (GLYPH_H + 2) * scale
    out = np.zeros((len(lines) * pitch_y + scale, cols * pitch_x + scale), np.uint8)
    for row, line in enumerate(lines):
        for col, ch in enumerate(line):
            bits = _GLYPHS.get(ch, _UNKNOWN)
            glyph = np.array([int(b) for b in bits], np.uint8).reshape(GLYPH_H, GLYPH_W) * 255
            glyph = np.kron(glyph, np.ones((scale, scale), np.uint8))
            y, x = scale + row * pitch_y, scale + col * pitch_x
            out[y : y + glyph.shape[0], x : x + glyph.shape[1]] = glyph
    return out


def compose_with_hud(image: np.ndarray, metrics: FastLaneMetrics) -> np.ndarray:
    """``image`` (HxWxC) above a strip with the HUD text; widened with black if needed."""
    h, w, c = image.shape
    lines = hud_lines(metrics)
    text = render_text(lines, scale=2)
    if text.shape[1] > w:
        text = render_text(lines, scale=1)
    width = max(w, text.shape[1])
    out = np.zeros((h + text.shape[0], width, c), np.uint8)
    out[:h, :w] = image
    strip = out[h:, : text.shape[1]]
    strip[...] = text[:, :, None]
    if c == 4:
        out[h:, :, 3] = 255  # the strip is opaque
    return out


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(image: np.ndarray, text: dict[str, str] | None = None) -> bytes:
    """PNG bytes of an HxW or HxWxC (C in 1, 3, 4) uint8 image, with optional tEXt entries."""
    arr = np.ascontiguousarray(image, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    color_type = {1: 0, 3: 2, 4: 6}.get(c)
    if color_type is None:
        raise ValueError(f"PNG needs 1, 3 or 4 channels, got {c}")
    raw = np.zeros((h, 1 + w * c), np.uint8)  # filter byte 0 (None) per row
    raw[:, 1:] = arr.reshape(h, w * c)
    parts = [
        b"\x89PNG\r\n\x1a\n",
        _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color_type, 0, 0, 0)),
    ]
    for key, value in (text or {}).items():
        parts.append(_chunk(b"tEXt", key.encode("latin-1") + b"\x00" + value.encode("latin-1")))
    parts.append(_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)))
    parts.append(_chunk(b"IEND", b""))
    return b"".join(parts)


def write_snapshot(
    path: str | Path,
    image: np.ndarray,
    metrics: FastLaneMetrics,
    extra: dict[str, str] | None = None,
) -> Path:
    """Write ``image`` with its HUD strip and HUD tEXt chunks to ``path`` (a .png file)."""
    text = {
        "Software": "mosaic-worker-sdk fastlane snapshot",
        "last_reward": repr(metrics.last_reward),
        "rolling_return": repr(metrics.rolling_return),
        "step_rate_hz": repr(metrics.step_rate_hz),
        "hud": metrics.hud_text(),
        **(extra or {}),
    }
    target = Path(path)
    target.write_bytes(encode_png(compose_with_hud(image, metrics), text))
    return target
