"""The pages' drawing code. Each module has `render(ctx)` and only displays what
autoprof.analysis computed; the entry script (autoprof/viewer/app.py) owns navigation, shared
state and loading, and runs the page files in pages/ (one line each: render the context)."""

from __future__ import annotations

from pathlib import Path

PAGE_FILES = Path(__file__).resolve().parent.parent / "pages"

# (file in pages/, title, url path); the first is the default page.
PAGES: list[tuple[str, str, str]] = [
    ("runs.py", "Runs", "runs"),
    ("overview.py", "Overview", "overview"),
    ("ops.py", "Self vs total", "self-vs-total"),
    ("source.py", "Source", "source"),
    ("timeline.py", "Timeline", "timeline"),
    ("steps.py", "Steps and warm-up", "steps"),
    ("compare.py", "Compare", "compare"),
    ("ranks.py", "Ranks", "ranks"),
    ("roofline.py", "Roofline", "roofline"),
    ("memory.py", "Memory", "memory"),
    ("whatif.py", "What-if", "what-if"),
]
