"""The README's Python snippet ("Audit your own model") runs as written."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_snippet():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"<!-- readme-python-snippet:begin -->\s*```python\n(.*?)```\s*<!-- readme-python-snippet:end -->",
                      text, re.S)
    assert block, "README.md has no readme-python-snippet block"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 14
    exec(compile(code, "README.md:readme-python-snippet", "exec"), {"__name__": "readme"})
