"""Validity: does a human questionnaire measure the same thing in a model as in people?

Item response models (``irt``), measurement invariance across groups (``invariance``), people and models on
the same items, and self-report against behaviour, all fitted on one item-level long format
(``items``: one row per respondent x item, the respondent being a model run or a person). The estimation is
done by well-kept libraries behind llmpsych's own small interface, so that they can be swapped.
"""
