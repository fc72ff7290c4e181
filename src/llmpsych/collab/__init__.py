"""MAS-Resilience: collaboration systems of several agents under faulty agents, with defences."""
