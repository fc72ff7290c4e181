"""PsychoBench: thirteen clinical psychometric scales administered to a model and compared with human norms.

The scales, their prompts and their norms are read at run time from the official ``questionnaires.json``
(``llmpsych data fetch PsychoBench`` or ``--data-dir``); this package adds the benchmark around them:
shuffled repeated runs, role-play personas, the Caesar-cipher jailbreak, log-probability scoring, and
the statistical comparison with every human norm group. See ``docs/psychobench.md``.
"""
