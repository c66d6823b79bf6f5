"""Copy the leave-one-source-out headline of docs/validation.md (written by `tokenomy validate --loso --write
docs/validation.md`) into README.md, between the markers, so the README quotes the generated report and nothing
typed by hand. ``--check``: exit 1, naming the difference, where the README does not hold it.

    python scripts/readme_accuracy.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- loso-headline: copied from docs/validation.md by scripts/readme_accuracy.py; do not edit -->"
END = "<!-- /loso-headline -->"


def headline(doc: str) -> str:
    """The report's leave-one-source-out line (validation/report.loso_line)."""
    for line in doc.splitlines():
        if line.startswith("Leave-one-source-out"):
            return line
    raise SystemExit("docs/validation.md has no leave-one-source-out line: run tokenomy validate --loso --write "
                     "docs/validation.md")


def render(readme: str, doc: str) -> str:
    head, sep, rest = readme.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"README.md lacks the markers {BEGIN} ... {END}")
    return f"{head}{BEGIN}\n{headline(doc)}\n{END}{tail}"


def main(argv: list[str]) -> int:
    readme_path = ROOT / "README.md"
    readme, doc = readme_path.read_text(), (ROOT / "docs" / "validation.md").read_text()
    want = render(readme, doc)
    if "--check" in argv:
        if want != readme:
            print(f"README.md does not quote docs/validation.md: expected\n  {headline(doc)}\n"
                  "run: python scripts/readme_accuracy.py")
            return 1
        return 0
    readme_path.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
