"""``python -m llmpsych`` runs the command line."""

from .cli import main

main()
