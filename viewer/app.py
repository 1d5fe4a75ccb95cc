"""`streamlit run viewer/app.py [-- traces_dir]`: the viewer, from a source checkout.

The viewer itself ships in the package (autoprof/viewer/); `autoprof view` runs the same app
after a plain `pip install`.
"""

from autoprof.viewer.app import main

main()
