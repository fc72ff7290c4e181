"""EmotionBench: how imagined situations shift a model's emotions, compared with 1,266 humans.

Modules: ``situations`` (the 428 situations and user files), ``released`` (the authors' released run
CSVs), ``changes`` (scores and the evoked-minus-default tests), ``crowd`` (the human data),
``published`` (the papers' numbers, for parity checks), ``prompts``, ``task`` (the run engine task),
``describe`` (beyond questionnaires: refusals to describe groups), ``finetune`` (the 866/400 split,
its export and the held-out evaluation), ``report`` and ``cli``.
"""
