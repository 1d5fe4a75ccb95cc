"""The Overview page: st.navigation runs this file; views/overview.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.overview import render

render(context())
