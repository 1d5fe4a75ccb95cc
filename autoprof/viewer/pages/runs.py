"""The Runs page: st.navigation runs this file; views/runs.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.runs import render

render(context())
