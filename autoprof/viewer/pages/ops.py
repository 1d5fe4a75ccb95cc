"""The Self vs total page: st.navigation runs this file; views/ops.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.ops import render

render(context())
