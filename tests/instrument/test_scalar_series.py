"""tensorboardX's ``SummaryWriter`` scalars become series, its files still written; the writers
are patched when the script imports them, never imported for it. (torch's writer: the same
code, tested with torch in tests/worker_cleanrl/test_scalar_series.py.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from mosaic_sdk.instrument.import_hooks import when_imported
from mosaic_sdk.instrument.scalar_series import ScalarSeries
from tests.tensorboard_files import tensorboard_scalars

Sent = list[tuple[dict[str, float], int]]


def test_a_callback_runs_when_its_module_is_imported_and_not_after_a_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "late_module.py").write_text("VALUE = 41\n")
    (tmp_path / "never_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, int]] = []

    def saw(module: ModuleType) -> None:
        seen.append((module.__name__, module.VALUE))
        module.VALUE += 1  # runs before the import statement returns

    when_imported("late_module", saw)
    cancel = when_imported("never_module", saw)
    cancel()
    try:
        import late_module  # type: ignore[import-not-found]
        import never_module  # type: ignore[import-not-found]

        assert late_module.VALUE == 42 and never_module.VALUE == 1
        assert seen == [("late_module", 41)]
        when_imported("late_module", saw)  # already imported: at once
        assert seen[-1] == ("late_module", 42)
    finally:
        sys.modules.pop("late_module", None)
        sys.modules.pop("never_module", None)


def test_tensorboardx_scalars_become_series_beside_its_files(tmp_path: Path) -> None:
    pytest.importorskip("tensorboardX")
    sent: Sent = []
    undo = ScalarSeries(lambda values, step: sent.append((dict(values), step))).install()
    try:
        from tensorboardX import SummaryWriter

        writer = SummaryWriter(str(tmp_path / "tb"))
        writer.add_scalar("loss", 0.5, 10)
        writer.add_scalar("return", 3.0, global_step=10)
        writer.add_scalars("eval", {"r": 7.0, "l": 20}, 20)
        writer.add_text("note", "not a scalar", 20)
        writer.close()
    finally:
        undo()
    assert sent == [({"loss": 0.5, "return": 3.0}, 10), ({"eval/r": 7.0, "eval/l": 20.0}, 20)]
    files = tensorboard_scalars(tmp_path / "tb")
    assert files["loss"] == [(10, 0.5)] and files["return"] == [(10, 3.0)]
    # restored: a writer made afterwards reports nothing
    after = SummaryWriter(str(tmp_path / "after"))
    after.add_scalar("loss", 1.0, 1)
    after.close()
    assert len(sent) == 2 and tensorboard_scalars(tmp_path / "after")["loss"] == [(1, 1.0)]


LAZY = textwrap.dedent(
    """
    import sys
    from mosaic_sdk.instrument.scalar_series import ScalarSeries
    undo = ScalarSeries(lambda values, step: print("point", values, step)).install()
    print("imported", "torch" in sys.modules, "tensorboardX" in sys.modules)
    import tensorboardX
    writer = tensorboardX.SummaryWriter(sys.argv[1])
    writer.add_scalar("loss", 0.25, 5)
    writer.close()
    undo()
    """
)


def test_installing_imports_no_writer_and_a_later_import_is_patched(tmp_path: Path) -> None:
    pytest.importorskip("tensorboardX")
    done = subprocess.run(
        [sys.executable, "-c", LAZY, str(tmp_path / "tb")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["imported False False", "point {'loss': 0.25} 5"]
