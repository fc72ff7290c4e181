"""Scale reliability (LLMPersonality): the BFI perturbation grid, steering, maps and statistics.

See ``docs/reliability.md``. Modules: ``published`` (reference numbers), ``saves`` (released results),
``projection`` / ``outliers`` (map and DBSCAN), ``analysis`` (tests), ``reanalysis`` (all of it at once),
``official`` (the dataset files), ``labels`` (label formats), ``grid`` (configurations), ``prompts``,
``answers`` (reading replies), ``logprobs`` (label probabilities), ``plots`` (maps),
``steering``, ``task`` (the run-engine task), ``results`` (run store -> data points), ``report``, ``cli``.
"""
