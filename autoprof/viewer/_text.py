"""User text shown safely in Streamlit (numbers are formatted by autoprof.units).

Op names come from user code. Anything user-written that must pass through a Streamlit call
that interprets Markdown (titles, captions, alerts, metric labels) goes through `md_escape`
first, so `<script>` or `**x**` is shown literally. Tables and code blocks show raw text.
"""

from __future__ import annotations

import string

_PUNCT = frozenset(string.punctuation)


def md_escape(text: object) -> str:
    """Backslash-escape every ASCII punctuation character (CommonMark allows all of them).

    This also defuses Streamlit's extensions (`:red[...]`, `:material/x:`, `$math$`).
    Newlines become spaces: one label stays one line.
    """
    s = str(text).replace("\r", " ").replace("\n", " ")
    return "".join("\\" + c if c in _PUNCT else c for c in s)
