"""The Source page: st.navigation runs this file; views/source.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.source import render

render(context())
