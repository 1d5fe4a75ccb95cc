"""The Ranks page: st.navigation runs this file; views/ranks.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.ranks import render

render(context())
