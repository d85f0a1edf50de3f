"""Regenerate docs/reference/hookspecs.md from the docstrings of mosaic_sdk.hookspecs.

Run from the repository root: python scripts/gen_hook_docs.py
"""

import inspect

from mosaic_sdk import hookspecs

names = sorted(
    n for n, o in vars(hookspecs).items() if n.startswith("mosaic_") and hasattr(o, "mosaic_spec")
)
out = [
    "# Hook reference (`mosaic_sdk.hookspecs`)",
    "",
    "Project name `mosaic`. Mark implementations with `@mosaic_sdk.hookimpl`. Hooks whose name starts",
    "with `mosaic_worker_` describe one worker: the framework calls them on that worker's plugin",
    "together with the non-worker plugins (the SDK's built-ins and any you register), never on other",
    "workers. `firstresult` hooks stop at the first non-`None` answer; the others collect every answer.",
    "Every hook has a test of its own (`tests/test_hooks.py`) and an entry below; a test fails when",
    "either is missing.",
    "",
    "| hook | kind | purpose |",
    "|---|---|---|",
]
body = []
for n in names:
    f = getattr(hookspecs, n)
    kind = "firstresult" if f.mosaic_spec.get("firstresult") else "1:N (every plugin)"
    sig = str(inspect.signature(f)).replace("'", "")
    doc = inspect.getdoc(f)
    out.append(f"| [`{n}`](#{n}) | {kind} | {doc.splitlines()[0]} |")
    # The heading is the bare name, so that its anchor is #name on GitHub and on the docs site.
    body += ["", f"### `{n}`", "", f"`{n}{sig}`", "", f"*{kind}*", "", doc]
out += body
out += [
    "",
    "## Example",
    "",
    "```python",
    "from mosaic_sdk import hookimpl",
    "",
    "class Forwarder:",
    '    """Forward every lifecycle event of every run to a log."""',
    "",
    "    @hookimpl",
    "    def mosaic_telemetry_event(self, run_id, worker, event):",
    '        print(run_id, worker, event["event"])',
    "```",
    "",
    "The example worker (`plugins/example/mosaic_worker_example/plugin.py`) implements the",
    "`mosaic_worker_*` hooks a worker needs.",
]
open("docs/reference/hookspecs.md", "w").write("\n".join(out) + "\n")
