"""The autoprof Streamlit viewer: `streamlit run viewer/app.py` (entry script in app.py).

Only draws what `autoprof.analysis` computes; every statistic comes from there.
"""
