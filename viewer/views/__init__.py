"""The pages. Each module has `render(ctx)`, only displays, and is run by st.navigation as a
file page (its `__main__` block renders the context published by viewer/app.py)."""

from __future__ import annotations

from pathlib import Path

VIEWS = Path(__file__).resolve().parent

# (file in this folder, title, url path); the first is the default page.
PAGES: list[tuple[str, str, str]] = [
    ("runs.py", "Runs", "runs"),
    ("overview.py", "Overview", "overview"),
    ("ops.py", "Self vs total", "self-vs-total"),
    ("timeline.py", "Timeline", "timeline"),
    ("steps.py", "Steps and warm-up", "steps"),
    ("compare.py", "Compare", "compare"),
    ("ranks.py", "Ranks", "ranks"),
]
