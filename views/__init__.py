"""The page scripts, one per page; app.py routes every request to them through st.navigation."""
