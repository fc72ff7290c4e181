"""Item response models on the item-level long format (:mod:`.items`): Samejima's graded response model
for Likert items, the two-parameter logistic model (2PL) for binary ones.

**Estimation** is done by a library behind :class:`Estimator` (one method: answers in, item parameters
out), so it can be swapped. The default, :class:`GirthEstimator`, is girth's marginal maximum likelihood
(``girth.grm_mml`` / ``girth.twopl_mml``): the one maintained pure-Python IRT library that installs here
(mirt is an R package; semopy fits structural equation models and factor_analyzer exploratory factor
analysis, neither an item response model). girth reports neither standard errors nor whether its
iterations converged, so both are computed here from the model's marginal likelihood
(:mod:`._likelihood`), never estimated:

* **standard errors**: from the cross-product of the respondents' score vectors (the empirical
  cross-product information, mirt's ``SE.type = "crossprod"``) at girth's estimate;
* **convergence**: a fit is refused (no parameter printed) when an item's discrimination sits on girth's
  search bound (0.2 or 5.0), a threshold is not finite or not increasing, the information is singular, or
  the estimate is not at a maximum of the likelihood: one Newton step from it, by that information, moves
  some parameter by more than :data:`MAX_STEP_SE` of its standard error. girth's thresholds come from its
  integral equations, not from the joint maximum, so the step is never zero; 44 simulated items at 2,500
  respondents gave at most 0.42 standard errors. The step is reported with every fit (``max_step_se``).

**Respondents' estimates** are EAP (posterior mean on a 41-point grid over [-4.5, 4.5], standard normal
prior) with their posterior SD. **Item fit** is the infit and outfit mean square (Wright & Masters) of each
item's answers around their expectation at the respondent's EAP; near 1 is good, above ~1.3 the item's
answers are noisier than the model expects, below ~0.7 more predictable (EAP shrinks toward 0, so the
figures are approximate; S-X2 is not computed). **Information**: the test information curve and its
standard error ``1 / sqrt(I)`` on a grid of theta.

Data that cannot support a model are refused in one line with the reason and the n: fewer respondents
than :data:`MIN_RESPONDENTS`, an item without variance (named), or a fit that did not converge.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ..errors import ConfigError, DataError
from ..runs.items import GROUP_COLUMNS
from ._likelihood import (
    ItemParameters,
    expected_and_variance,
    item_information,
    posterior,
    scores,
)

#: Fewest respondents (with at least one valid answer) an item response model is fitted on. Threshold
#: estimates need answers in each category; 44 items at 5 categories have 220 parameters.
MIN_RESPONDENTS = 50
#: Largest Newton step from the estimate, in standard errors, for a fit to count as converged.
MAX_STEP_SE = 1.0
#: girth searches discriminations in [0.2, 5.0]; an estimate on either bound is not a maximum.
DISCRIMINATION_BOUNDS = (0.2, 5.0)
#: The dimension of a fit on every item of a scale (``whole_scale``, or a scale without subscales).
ALL_ITEMS = "all items"
#: The theta grid of the test information table.
INFORMATION_GRID = np.round(np.arange(-4.0, 4.0001, 0.25), 2)

ITEM_COLUMNS = [
    "scale",
    "dimension",
    "group",
    "model_type",
    "item",
    "reverse",
    "parameter",
    "category",
    "estimate",
    "se",
]
RESPONDENT_COLUMNS = ["scale", "dimension", "group", "respondent", "theta", "theta_se", "answers"]
INFORMATION_COLUMNS = ["scale", "dimension", "group", "theta", "information", "se"]
FIT_COLUMNS = ["scale", "dimension", "group", "item", "n", "infit", "outfit"]
SUMMARY_COLUMNS = [
    "scale",
    "dimension",
    "group",
    "model_type",
    "status",
    "reason",
    "respondents",
    "items",
    "answers",
    "not_answered",
    "excluded_respondents",
    "pooled_over",
    "estimator",
    "se_method",
    "max_step_se",
    "loglik",
    "seconds",
]


class Estimator(Protocol):
    """Fits item parameters; the one piece a library provides.

    ``data`` is respondents x items of categories ``0..K_j-1`` (each item's categories as used, in
    order), ``-1`` where there is no answer. Returns one :class:`ItemParameters` per item, thresholds
    increasing, on the standard normal scale of theta."""

    name: str

    def fit(self, data: NDArray[np.int64], binary: bool) -> list[ItemParameters]: ...


class GirthEstimator:
    """girth's marginal maximum likelihood: ``grm_mml`` for graded items, ``twopl_mml`` for binary."""

    def __init__(self, max_iteration: int = 200) -> None:
        self.max_iteration = max_iteration
        try:
            self.name = f"girth {version('girth')} {{}} (marginal maximum likelihood)"
        except PackageNotFoundError:
            self.name = "girth"

    def fit(self, data: NDArray[np.int64], binary: bool) -> list[ItemParameters]:
        girth = _girth()
        matrix = np.where(data >= 0, data, girth.INVALID_RESPONSE).T.astype(int)
        method = girth.twopl_mml if binary else girth.grm_mml
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # girth's log(0) while searching a bound
            result = method(matrix, {"max_iteration": self.max_iteration})
        discrimination = np.atleast_1d(np.asarray(result["Discrimination"], dtype=float))
        difficulty = np.asarray(result["Difficulty"], dtype=float).reshape(len(discrimination), -1)
        return [
            ItemParameters(float(a), tuple(float(b) for b in row[~np.isnan(row)]))
            for a, row in zip(discrimination, difficulty, strict=True)
        ]

    def label(self, binary: bool) -> str:
        return self.name.format("twopl_mml" if binary else "grm_mml")


def _girth() -> Any:
    try:
        import girth
    except ImportError:
        raise ConfigError(
            "item response models need the girth library, which is not installed",
            "pip install 'llmpsych[validity]'",
        ) from None
    return girth


ESTIMATORS: dict[str, Callable[[], Estimator]] = {"girth": GirthEstimator}


class Refused(Exception):
    """The data cannot support the model: one line with the reason and the n."""


@dataclass
class Fit:
    """One scale's dimension (a subscale, or all its items) in one group, fitted or refused; every
    table is empty when refused."""

    scale: str
    dimension: str
    group: str
    model_type: str
    summary: dict[str, Any]
    items: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=ITEM_COLUMNS))
    respondents: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=RESPONDENT_COLUMNS))
    information: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=INFORMATION_COLUMNS))
    item_fit: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FIT_COLUMNS))

    @property
    def refused(self) -> bool:
        return bool(self.summary["status"] != "fitted")


def fit_scale(
    items: pd.DataFrame,
    *,
    group: str = "all",
    dimension: str = ALL_ITEMS,
    estimator: Estimator | None = None,
    min_respondents: int = MIN_RESPONDENTS,
) -> Fit:
    """Fit rows of the long frame (:data:`.items.ITEM_COLUMNS`) of one scale, as one dimension: GRM, or
    2PL for a two-point range. Reverse-keyed items are turned (``min + max - answer``) first, so an item
    that works as keyed has a positive discrimination. A refusal is a :class:`Fit` whose summary says
    why (``status`` ``refused``)."""
    scale = str(items["scale"].iloc[0])
    low, high = int(items["min"].iloc[0]), int(items["max"].iloc[0])
    binary = high - low == 1
    model_type = "2PL" if binary else "GRM"
    chosen = estimator or GirthEstimator()
    label = chosen.label(binary) if isinstance(chosen, GirthEstimator) else chosen.name
    summary: dict[str, Any] = {
        "scale": scale,
        "dimension": dimension,
        "group": group,
        "model_type": model_type,
        "estimator": label,
        "se_method": "cross-product of respondents' score vectors (empirical information)",
    }
    started = time.perf_counter()
    try:
        fit = _fit(items, chosen, binary, min_respondents, summary)
    except Refused as why:
        summary.update(status="refused", reason=str(why))
        return Fit(scale, dimension, group, model_type, _complete(summary))
    summary["seconds"] = round(time.perf_counter() - started, 2)
    fit.summary = _complete(summary)
    return fit


def _complete(summary: dict[str, Any]) -> dict[str, Any]:
    return {column: summary.get(column) for column in SUMMARY_COLUMNS}


def _fit(
    rows: pd.DataFrame, estimator: Estimator, binary: bool, min_respondents: int, summary: dict[str, Any]
) -> Fit:
    scale, group, model_type = summary["scale"], summary["group"], summary["model_type"]
    dimension = summary["dimension"]
    answered = rows[rows["status"] == "answered"]
    turned = answered["min"] + answered["max"] - answered["response"]
    answered = answered.assign(response=turned.where(answered["reverse"], answered["response"]))
    item_numbers = sorted(int(i) for i in rows["item"].unique())
    wide = answered.pivot_table(
        index="respondent", columns="item", values="response", aggfunc="first"
    ).reindex(columns=item_numbers)
    everyone = rows["respondent"].nunique()
    summary.update(
        respondents=len(wide),
        items=len(item_numbers),
        answers=int(wide.notna().sum().sum()),
        not_answered=int((rows["status"] != "answered").sum()),
        excluded_respondents=everyone - len(wide),
    )
    n = len(wide)
    if n < min_respondents:
        raise Refused(
            f"too few respondents: n={n} with a valid answer, an item response model needs at least "
            f"{min_respondents}"
        )
    reverse = rows.drop_duplicates("item").set_index("item")["reverse"].to_dict()
    data = np.full(wide.shape, -1, dtype=np.int64)
    used: list[list[int]] = []
    for j, item in enumerate(item_numbers):
        column = wide[item]
        values = sorted(int(v) for v in column.dropna().unique())
        if len(values) < 2:
            shown = (
                f"every one of its {int(column.notna().sum())} answers is {values[0]}"
                if values
                else "no answer"
            )
            raise Refused(f"item {item} has no variance: {shown} (n={n})")
        used.append(values)
        codes = {v: k for k, v in enumerate(values)}
        present = column.notna().to_numpy()
        data[present, j] = [codes[int(v)] for v in column[present]]
    fitted = estimator.fit(data, binary)
    _check_estimates(fitted, item_numbers, used, n)
    post = posterior(fitted, data)
    score = scores(fitted, data, post)
    information = score.T @ score
    try:
        np.linalg.cholesky(information)
        covariance = np.linalg.inv(information)
    except np.linalg.LinAlgError:
        raise Refused(
            f"did not converge: the information matrix is singular, the parameters are not identified by "
            f"these data (n={n})"
        ) from None
    se = np.sqrt(np.diag(covariance))
    step = np.abs(covariance @ score.sum(axis=0)) / se
    if not np.all(np.isfinite(step)) or step.max() > MAX_STEP_SE:
        raise Refused(
            f"did not converge: the estimate is not at a maximum of the likelihood (a Newton step moves a "
            f"parameter by {float(step.max()):.2f} standard errors, more than {MAX_STEP_SE:g}; n={n})"
        )
    summary.update(max_step_se=round(float(step.max()), 3), loglik=round(float(post.loglik.sum()), 3))
    summary["status"], summary["reason"] = "fitted", ""

    item_rows, position = [], 0
    for item, parameters, categories in zip(item_numbers, fitted, used, strict=True):
        common = {"scale": scale, "dimension": dimension, "group": group, "model_type": model_type}
        common.update(item=item, reverse=bool(reverse.get(item, False)))
        item_rows.append({**common, "parameter": "a", "category": None, "estimate": parameters.a})
        item_rows[-1]["se"] = se[position]
        for k, b in enumerate(parameters.b, start=1):
            # b_k: the theta at which answering categories[k] or higher (keyed) has probability 1/2
            item_rows.append(
                {
                    **common,
                    "parameter": f"b{k}",
                    "category": categories[k],
                    "estimate": b,
                    "se": se[position + k],
                }
            )
        position += parameters.categories
    theta, theta_se = post.eap, post.psd
    respondents = pd.DataFrame(
        {
            "scale": scale,
            "dimension": dimension,
            "group": group,
            "respondent": wide.index.astype(str),
            "theta": theta,
            "theta_se": theta_se,
            "answers": (data >= 0).sum(axis=1),
        }
    )
    curve = sum((item_information(p, INFORMATION_GRID) for p in fitted), np.zeros(INFORMATION_GRID.size))
    info = pd.DataFrame(
        {
            "scale": scale,
            "dimension": dimension,
            "group": group,
            "theta": INFORMATION_GRID,
            "information": curve,
            "se": 1.0 / np.sqrt(curve),
        }
    )
    return Fit(
        scale,
        dimension,
        group,
        model_type,
        summary,
        items=pd.DataFrame(item_rows, columns=ITEM_COLUMNS),
        respondents=respondents[RESPONDENT_COLUMNS],
        information=info[INFORMATION_COLUMNS],
        item_fit=_item_fit(scale, dimension, group, item_numbers, fitted, data, theta),
    )


def _check_estimates(
    fitted: Sequence[ItemParameters], item_numbers: list[int], used: list[list[int]], n: int
) -> None:
    low, high = DISCRIMINATION_BOUNDS
    for item, parameters, categories in zip(item_numbers, fitted, used, strict=True):
        if parameters.categories != len(categories):
            raise Refused(
                f"did not converge: item {item}: the estimator returned the wrong thresholds (n={n})"
            )
        if not math.isfinite(parameters.a) or not all(math.isfinite(b) for b in parameters.b):
            raise Refused(f"did not converge: item {item} has a parameter that is not finite (n={n})")
        if parameters.a <= low + 1e-3 or parameters.a >= high - 1e-3:
            raise Refused(
                f"did not converge: item {item}'s discrimination is on the search bound "
                f"({parameters.a:.2f}; girth searches {low:g}-{high:g}): it separates the respondents "
                f"almost perfectly or is unrelated to the other items (n={n})"
            )
        if any(b2 <= b1 for b1, b2 in zip(parameters.b, parameters.b[1:], strict=False)):
            raise Refused(f"did not converge: item {item}'s thresholds are not increasing (n={n})")


def _item_fit(
    scale: str,
    dimension: str,
    group: str,
    item_numbers: list[int],
    fitted: list[ItemParameters],
    data: NDArray[np.int64],
    theta: NDArray[np.float64],
) -> pd.DataFrame:
    """Infit and outfit mean squares at the respondents' EAP."""
    rows = []
    for j, (item, parameters) in enumerate(zip(item_numbers, fitted, strict=True)):
        present = data[:, j] >= 0
        mean, variance = expected_and_variance(parameters, theta[present])
        residual = (data[present, j] - mean) ** 2
        variance = np.maximum(variance, 1e-12)
        rows.append(
            {
                "scale": scale,
                "dimension": dimension,
                "group": group,
                "item": item,
                "n": int(present.sum()),
                "infit": float(residual.sum() / variance.sum()),
                "outfit": float((residual / variance).mean()),
            }
        )
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


@dataclass
class IrtTables:
    """Every fit's tables, concatenated (tidy: one row per observation)."""

    summary: pd.DataFrame
    items: pd.DataFrame
    respondents: pd.DataFrame
    information: pd.DataFrame
    item_fit: pd.DataFrame

    @classmethod
    def of(cls, fits: list[Fit]) -> IrtTables:
        def concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
            kept = [p for p in parts if not p.empty]
            return pd.concat(kept, ignore_index=True)[columns] if kept else pd.DataFrame(columns=columns)

        return cls(
            summary=pd.DataFrame([f.summary for f in fits], columns=SUMMARY_COLUMNS),
            items=concat([f.items for f in fits], ITEM_COLUMNS),
            respondents=concat([f.respondents for f in fits], RESPONDENT_COLUMNS),
            information=concat([f.information for f in fits], INFORMATION_COLUMNS),
            item_fit=concat([f.item_fit for f in fits], FIT_COLUMNS),
        )


def fit_items(
    items: pd.DataFrame,
    *,
    scales: Sequence[str] | None = None,
    group: str | None = None,
    whole_scale: bool = False,
    estimator: Estimator | None = None,
    min_respondents: int = MIN_RESPONDENTS,
    progress: Callable[[str], None] | None = None,
) -> IrtTables:
    """Fit every scale of the long frame (or those named), pooled or per level of the column ``group``.

    Each subscale is one dimension, fitted apart (a unidimensional model of a five-factor scale's items
    would be misspecified): items in no subscale (fillers) are in none of these fits, an item in two
    subscales in both. ``whole_scale`` (or a scale without subscales) fits every item as one dimension.
    ``progress`` is told each fit before it starts (``BFI Extraversion, model=gpt: 8 items, 2,500
    respondents``)."""
    from ..runs.items import require_item_frame

    require_item_frame(items)
    chosen = list(dict.fromkeys(items["scale"])) if scales is None else _known(items, scales)
    if group is not None and group not in items.columns:
        raise ConfigError(f"no column {group!r} to group by", f"the columns are {', '.join(items.columns)}")
    fits = []
    for scale in chosen:
        _require_one_definition(items[items["scale"] == scale], scale)
        for dimension, part in dimensions(items[items["scale"] == scale], whole_scale):
            levels = (
                [("all", part)]
                if group is None
                else [(f"{group}={level}", rows) for level, rows in part.groupby(group, sort=True)]
            )
            for label, rows in levels:
                if progress is not None:
                    progress(
                        f"{scale} {dimension}, {label}: {rows['item'].nunique()} items, "
                        f"{rows['respondent'].nunique():,} respondents"
                    )
                fit = fit_scale(
                    rows,
                    group=label,
                    dimension=dimension,
                    estimator=estimator,
                    min_respondents=min_respondents,
                )
                fit.summary["pooled_over"] = pooled_over(rows)
                fits.append(fit)
    return IrtTables.of(fits)


def pooled_over(rows: pd.DataFrame) -> str:
    """The settings that differ between the respondents of one fit (``model (2), source (2)``; empty:
    none), so that a pooled fit says so."""
    columns = ["source", *(c for c in GROUP_COLUMNS if c != "run"), "run"]
    return ", ".join(f"{c} ({rows[c].nunique()})" for c in columns if rows[c].nunique() > 1)


def _require_one_definition(rows: pd.DataFrame, scale: str) -> None:
    """DataError when the answers hold two definitions of one scale (another range, keys or subscales:
    a run's scale file and a human sample's that differ), which one fit cannot pool."""
    for column in ("min", "max", "reverse", "subscale"):
        counts = rows.groupby("item")[column].nunique()
        if (counts > 1).any():
            item = int(counts[counts > 1].index[0])
            raise DataError(
                f"scale {scale!r} is defined differently in these answers: item {item} has more than one "
                f"{column!r}",
                "fit answers given to one definition of the scale (rename the other)",
            )


def dimensions(rows: pd.DataFrame, whole_scale: bool = False) -> list[tuple[str, pd.DataFrame]]:
    """One scale's rows by dimension: each subscale (``A+B``: in both), or all items."""
    names = [n for n in dict.fromkeys(p for value in rows["subscale"] for p in str(value).split("+")) if n]
    if whole_scale or not names:
        return [(ALL_ITEMS, rows)]
    return [(name, rows[rows["subscale"].map(lambda v, n=name: n in str(v).split("+"))]) for name in names]


def _known(items: pd.DataFrame, scales: Sequence[str]) -> list[str]:
    have = {str(s).lower(): str(s) for s in items["scale"].unique()}
    chosen = []
    for name in scales:
        if name.lower() not in have:
            raise ConfigError(f"no scale {name!r} in these answers", f"they hold {', '.join(have.values())}")
        chosen.append(have[name.lower()])
    return chosen


__all__ = [
    "ESTIMATORS",
    "MAX_STEP_SE",
    "MIN_RESPONDENTS",
    "Estimator",
    "Fit",
    "GirthEstimator",
    "IrtTables",
    "ItemParameters",
    "Refused",
    "fit_items",
    "fit_scale",
]
