"""Report stage: what users read: the summary dict and the key_averages tables."""
