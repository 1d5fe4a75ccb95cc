"""Report stage: what users read: the typed Report (model/), its JSON and renders, and the
key_averages tables."""
