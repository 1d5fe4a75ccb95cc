"""The Steps and warm-up page: st.navigation runs this file; views/steps.py draws it."""

from autoprof.viewer._context import context
from autoprof.viewer.views.steps import render

render(context())
