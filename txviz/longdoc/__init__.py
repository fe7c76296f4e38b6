"""Long documents: attention of thousands of tokens reduced while it is computed, overview first."""
