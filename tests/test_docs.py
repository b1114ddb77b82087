"""The README's quick start runs as written (the vignettes: tests/test_vignettes.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of a Markdown file, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


def test_readme_runs(capsys) -> None:
    path = ROOT / "README.md"
    blocks = python_blocks(path)
    assert blocks, "README.md has no python block"
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, str(path), "exec"), namespace)
    assert "DP OLS Regression Results" in capsys.readouterr().out


def test_readme_states_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"^bash (scripts/\S+)", text, flags=re.MULTILINE)
    assert commands == ["scripts/demo.sh", "scripts/test.sh"]
    for command in commands:
        assert (ROOT / command).is_file()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_readme_method_table_matches_the_registry() -> None:
    """Every registered mechanism has a row, and the rows that say "quantile regression" are the ones that fit it."""
    from dpstats.mechanisms import REGISTRY

    rows = re.findall(r"^\| `(\w+)`[^|]*\|[^|]*\| ([^|]*) \|", (ROOT / "README.md").read_text(), flags=re.MULTILINE)
    assert sorted(name for name, _ in rows) == sorted(REGISTRY)
    for name, fits in rows:
        assert ("quantile regression" in fits) == ("quantreg" in REGISTRY[name].estimators), name


def _sources() -> list[Path]:
    return sorted(
        [*(ROOT / "dpstats").rglob("*.py"), *(ROOT / "tests").glob("*.py"), *(ROOT / "r_bridge").rglob("*.R")]
    )


def test_every_cited_document_and_file_is_in_the_repository() -> None:
    """Docstrings cite docs/*.md and repository paths; each must resolve, and no bare note name may remain."""
    missing, bare = [], []
    for path in _sources():
        text = path.read_text()
        for cited in re.findall(r"\b((?:docs|dpstats|tests|benchmarks|r_bridge)/[\w/.-]+\.(?:md|py|R|Rmd))", text):
            if not (ROOT / cited).exists():
                missing.append(f"{path.name}: {cited}")
        bare += [f"{path.name}: {m}" for m in re.findall(r"(?<![\w/])[A-Z_]{4,}\.md", text) if m != "README.md"]
    assert not missing, missing
    assert not bare, f"cite documents by their path in the repository (docs/...): {bare}"
