"""The Compare page: st.navigation runs this file; views/compare.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.compare import render

render(context())
