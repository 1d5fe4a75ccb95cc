"""The What-if page: st.navigation runs this file; views/whatif.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.whatif import render

render(context())
