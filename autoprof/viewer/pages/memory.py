"""The Memory page: st.navigation runs this file; views/memory.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.memory import render

render(context())
