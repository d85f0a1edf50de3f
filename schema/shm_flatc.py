"""Regenerate the command channel's Python code from ``schema/shm_commands.fbs`` with flatc.

    python schema/shm_flatc.py            # rewrite mosaic_sdk/shm/generated/
    python schema/shm_flatc.py --check    # exit 1 if the committed code is stale

The generated code is committed (so installing the package needs no flatc). It was produced by
the flatc version in ``FLATC_VERSION`` below (Debian's ``flatbuffers-compiler``); another flatc
version may format the output differently, so ``--check`` refuses to compare across versions.
"""

from __future__ import annotations

import argparse
import filecmp
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

FLATC_VERSION = "2.0.8"
ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "schema" / "shm_commands.fbs"
OUT = ROOT / "mosaic_sdk" / "shm" / "generated"
GENERATED = "shm_commands_generated.py"


def flatc_version(flatc: str = "flatc") -> str | None:
    """The version of ``flatc`` on PATH, or None when it is not installed."""
    exe = shutil.which(flatc)
    if exe is None:
        return None
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"(\d+\.\d+\.\d+)", out)
    return match.group(1) if match else out.strip()


def generate(out_dir: pathlib.Path) -> pathlib.Path:
    """Run flatc into ``out_dir``; returns the generated module's path."""
    subprocess.run(
        ["flatc", "--python", "--gen-onefile", "-o", str(out_dir), str(SCHEMA)],
        check=True,
        capture_output=True,
        text=True,
    )
    return out_dir / GENERATED


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of rewriting")
    args = parser.parse_args()
    version = flatc_version()
    if version is None:
        print("flatc not found: apt-get install flatbuffers-compiler", file=sys.stderr)
        return 2
    if version != FLATC_VERSION:
        print(
            f"flatc {version} found, the committed code comes from {FLATC_VERSION}", file=sys.stderr
        )
        if args.check:
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(pathlib.Path(tmp))
        if args.check:
            same = filecmp.cmp(fresh, OUT / GENERATED, shallow=False)
            print("generated code is up to date" if same else "generated code is STALE")
            return 0 if same else 1
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fresh, OUT / GENERATED)
        init = OUT / "__init__.py"
        if not init.exists():
            init.write_text('"""flatc output for schema/shm_commands.fbs (do not edit)."""\n')
    print(f"wrote {OUT / GENERATED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
