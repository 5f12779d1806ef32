"""Write docs/facts.md from the namespace classes (advisor/facts/catalogue.py generates the catalogue).

python3 tools/gen_fact_docs.py          # write it
python3 tools/gen_fact_docs.py --check  # exit 1 when docs/facts.md is not current
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "facts.md"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from advisor.facts.catalogue_view import markdown

    text = markdown()
    if "--check" in argv:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(
                f"{DOC.relative_to(ROOT)} is out of date: run python3 tools/gen_fact_docs.py", file=sys.stderr
            )
            return 1
        return 0
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
