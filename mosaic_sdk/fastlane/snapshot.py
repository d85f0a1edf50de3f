"""Writing a FastLane frame to a PNG or JPEG file with its HUD, using Pillow."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from mosaic_sdk.extras import require
from mosaic_sdk.fastlane.records import FastLaneMetrics

#: File suffixes :func:`write_snapshot` writes, and the format of each.
FORMATS = {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}
_FEATURE = "mosaic fastlane snapshot"


def snapshot_format(path: str | Path) -> str:
    """``"PNG"`` or ``"JPEG"`` for ``path``'s suffix; ValueError for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(
            f"cannot tell the picture format of {str(path)!r}: name it .png or .jpg "
            "(PNG keeps the pixels exactly; JPEG is smaller)"
        )
    return FORMATS[suffix]


def _font(width: int) -> Any:
    """Pillow's default font at a size that suits a frame ``width`` pixels wide."""
    image_font = require("PIL.ImageFont", "images", _FEATURE)
    size = int(min(32, max(10, width // 24)))
    try:
        return image_font.load_default(size=size)
    except (TypeError, ImportError, OSError):  # a Pillow without FreeType: the bitmap font
        return image_font.load_default()


def compose_with_hud(image: np.ndarray, metrics: FastLaneMetrics) -> Any:
    """A Pillow image of ``image`` (HxWxC, C in 1, 3, 4) above a strip with the HUD text,
    widened with black when the text is wider than the frame."""
    pil = require("PIL.Image", "images", _FEATURE)
    draw_mod = require("PIL.ImageDraw", "images", _FEATURE)
    arr = np.ascontiguousarray(image, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    mode = _MODES.get(c)
    if mode is None:
        raise ValueError(f"a snapshot needs 1, 3 or 4 channels, got {c}")
    # uint8 HxW, HxWx3, HxWx4 are L, RGB, RGBA to Pillow (its ``mode`` argument is deprecated)
    frame = pil.fromarray(arr[:, :, 0] if c == 1 else arr)
    text = metrics.hud_text()
    font = _font(w)
    measure = draw_mod.Draw(pil.new("L", (1, 1)))
    left, top, right, bottom = measure.multiline_textbbox((0, 0), text, font=font, spacing=2)
    pad = 4
    strip_h = bottom - min(top, 0) + 2 * pad
    width = max(w, right - min(left, 0) + 2 * pad)
    black = 0 if c == 1 else (0, 0, 0) if c == 3 else (0, 0, 0, 255)
    white = 255 if c == 1 else (255, 255, 255) if c == 3 else (255, 255, 255, 255)
    out = pil.new(mode, (width, h + strip_h), black)
    if c == 4:  # beside a narrow frame the widened area is transparent, the strip opaque
        out.paste((0, 0, 0, 0), (w, 0, width, h))
    out.paste(frame, (0, 0))
    draw = draw_mod.Draw(out)
    draw.multiline_text(
        (pad - min(left, 0), h + pad - min(top, 0)), text, fill=white, font=font, spacing=2
    )
    return out


def snapshot_text(metrics: FastLaneMetrics, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The text entries a snapshot carries: the exact HUD values, then ``extra``."""
    return {
        "Software": "mosaic-worker-sdk fastlane snapshot",
        "last_reward": repr(metrics.last_reward),
        "rolling_return": repr(metrics.rolling_return),
        "step_rate_hz": repr(metrics.step_rate_hz),
        "hud": metrics.hud_text(),
        **(extra or {}),
    }


def write_snapshot(
    path: str | Path,
    image: np.ndarray,
    metrics: FastLaneMetrics,
    extra: dict[str, str] | None = None,
    *,
    quality: int = 90,
) -> Path:
    """Write ``image`` with its HUD strip to ``path``: PNG (``.png``, with the HUD values as
    ``tEXt`` chunks) or JPEG (``.jpg``/``.jpeg``, ``quality`` 1-95, the values as a JSON
    comment). The file appears whole or not at all (written beside, then renamed). Raises
    ValueError for another suffix, MissingExtraError without Pillow."""
    target = Path(path)
    fmt = snapshot_format(target)
    picture = compose_with_hud(image, metrics)
    text = snapshot_text(metrics, extra)
    partial = target.with_name(f".{target.name}.partial")  # whole or not at all
    try:
        if fmt == "PNG":
            png_plugin = require("PIL.PngImagePlugin", "images", _FEATURE)
            info = png_plugin.PngInfo()
            for key, value in text.items():
                if all(ord(ch) < 256 for ch in value):  # Latin-1: tEXt
                    info.add_text(key, value)
                else:  # iTXt: UTF-8 (a run id is ASCII, but extra may hold anything)
                    info.add_itxt(key, value)
            picture.save(partial, "PNG", pnginfo=info, compress_level=6)
        else:
            if picture.mode == "RGBA":
                picture = picture.convert("RGB")
            comment = json.dumps(text, sort_keys=True).encode("utf-8")
            picture.save(partial, "JPEG", quality=quality, comment=comment)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
