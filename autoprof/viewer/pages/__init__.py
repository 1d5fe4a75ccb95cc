"""Page files that st.navigation runs (one line each); see views/ for the drawing code."""
