"""docs/reference/contract.md lists the values of every capability vocabulary as the code has
them (mosaic_sdk.contract.VOCABULARIES): a value added or removed in the code fails here until
the table is regenerated (the expected table is in the failure message)."""

from __future__ import annotations

from pathlib import Path

from mosaic_sdk import contract
from mosaic_sdk.contract import VOCABULARIES

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "contract.md"
START, END = "<!-- vocabularies:start -->\n", "<!-- vocabularies:end -->"


def constant_of(values: tuple[str, ...]) -> str:
    return next(
        name for name in contract.__all__ if name.isupper() and getattr(contract, name) is values
    )


def vocabularies_table() -> str:
    rows = ["| field | constant | known values |", "|---|---|---|"]
    for field, values in VOCABULARIES.items():
        shown = ", ".join(f"`{v}`" for v in values)
        rows.append(f"| `{field}` | `{constant_of(values)}` | {shown} |")
    return "\n".join(rows) + "\n"


def test_the_reference_lists_every_vocabulary_value() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert START in text and END in text, "the vocabularies markers are missing"
    shown = text.split(START, 1)[1].split(END, 1)[0]
    expected = vocabularies_table()
    assert shown == expected, "regenerate the table in docs/reference/contract.md:\n" + expected


def test_toy_text_envs_and_discrete_observations_have_names() -> None:
    # a FrozenLake worker (issue 26) had neither: it was baked as classic_control/vector
    assert "toy_text" in contract.ENV_FAMILIES
    assert "discrete" in contract.OBSERVATION_SPACES


def test_every_paradigm_is_explained() -> None:
    # a population-based (CEM) worker's author (issue 26) had the values but not their meaning
    text = PAGE.read_text(encoding="utf-8")
    explained = {line.split("`")[1] for line in text.splitlines() if line.startswith("- `")}
    assert set(contract.PARADIGMS) <= explained, set(contract.PARADIGMS) - explained
