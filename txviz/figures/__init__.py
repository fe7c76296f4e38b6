"""Pure figure builders: data in, plotly or altair figure out, no streamlit."""

# plotly imports pandas lazily; imported half-way by one Streamlit rerun, another rerun can see a
# half-initialised module ("pandas has no attribute 'Series'"). Importing it here, once, avoids that.
import pandas  # noqa: F401
