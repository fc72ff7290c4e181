"""MAS-Resilience: multi-agent collaboration systems under faulty agents, with defences."""
