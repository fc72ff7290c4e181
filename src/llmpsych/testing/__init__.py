"""Test doubles that are real network parts: a fault-injecting OpenAI-compatible server."""
