"""The local web page: FastAPI + Jinja2 + htmx + plotly.js, calling what the CLI calls."""
