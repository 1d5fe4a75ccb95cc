"""The Timeline page: st.navigation runs this file; views/timeline.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.timeline import render

render(context())
