"""Streamlit helpers shared by the pages: URL state, form validation, scenarios, errors, resources."""
