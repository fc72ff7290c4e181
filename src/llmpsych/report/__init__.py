"""Reports: tidy tables to Markdown, with optional plots."""
