"""Why a head attends: one attention score split exactly into (query-side part) x (key-side part) pairs."""
