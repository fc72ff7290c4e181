"""``llmpsych quickstart``: a short, complete evaluation that needs no network and no downloaded data."""
