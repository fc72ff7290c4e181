"""The t-test procedure is named for what it is (``f-test``); ``paper``, its old name, still loads."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llmpsych.psychobench.options import PsychoBenchOptions
from llmpsych.reliability.task import ReliabilityOptions
from llmpsych.stats import compare_with_norm
from llmpsych.stats.compare import normalize_method
from llmpsych.stats.descriptive import StatsError


@pytest.mark.parametrize("options", [PsychoBenchOptions, ReliabilityOptions])
def test_old_configs_saying_paper_load_as_f_test_and_own_runs_are_corrected(options: type) -> None:
    assert options.model_validate({"method": "paper"}).test == "f-test"  # the t-test's old option name
    assert options.model_validate({"test": "paper"}).test == "f-test"
    assert options.model_validate({}).test == "f-test"
    assert options.model_validate({}).published is False
    with pytest.raises(ValidationError, match="test"):
        options.model_validate({"test": "Paper"})


def test_compare_with_norm_names_the_procedure_and_states_published() -> None:
    old = compare_with_norm((4.7, 0.1, 10), (3.45, 0.73, 6076), method="paper", published=False)
    new = compare_with_norm((4.7, 0.1, 10), (3.45, 0.73, 6076), method="f-test", published=False)
    assert old == new and new.method == "f-test"
    assert normalize_method("welch") == "welch"
    with pytest.raises(StatsError, match="use f-test, welch or student"):
        normalize_method("bayes")
    with pytest.raises(TypeError, match="published"):
        compare_with_norm((4.7, 0.1, 10), (3.45, 0.73, 6076))  # type: ignore[call-arg]
