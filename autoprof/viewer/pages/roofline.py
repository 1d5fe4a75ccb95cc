"""The Roofline page: st.navigation runs this file; views/roofline.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.roofline import render

render(context())
