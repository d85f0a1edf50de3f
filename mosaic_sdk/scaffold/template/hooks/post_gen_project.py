"""Leave no bytecode in the baked project.

pip compiles every ``.py`` file of an installed SDK, the template's own included (those without
Jinja in them compile), so the template directory in site-packages holds ``__pycache__``
directories that cookiecutter copies into the project: compiled from the unrendered
template, never from the project's files. Cookiecutter runs this hook in the new project's
directory; standard library only.
"""

import shutil
from pathlib import Path

for cache in sorted(Path.cwd().rglob("__pycache__"), reverse=True):
    if cache.is_dir():
        shutil.rmtree(cache)
for compiled in Path.cwd().rglob("*.py[co]"):
    compiled.unlink()
