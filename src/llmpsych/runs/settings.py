"""A run's settings, and the rows of a comparison that differ in them: never two settings in one row.

Every compare command (a leaderboard, a side-by-side table, an overlay, the web compare page) shows runs of
models; two runs of one model made with different settings (a temperature, a persona, a cipher, a
template set, a language, ...) measure different things, so a row or column that names only the model
would hide which one it shows, and a row that pools them would mix them into one mean ± sd. The rule
here is generic, read from each run's stored config, and never names a benchmark:

- :func:`config_settings`: a stored config as ``{setting: value}``: every sampling parameter
  (``params``), every model role other than the subject (``models``: its model and parameters), every
  task option (defaults filled in by the task's own options model; a table as compact JSON, a file the
  config stores as its name, version and checksum, never its texts) and the run's language.
  Left out, because they do not change what one answer measures: where and how fast it ran
  (``base_url``, ``concurrency``, ``workers``, ``timeout``, ``max_retries``, ``n_parallel``), caching
  (``cache``, ``cache_path``), the data folder's path (``data_dir``: its contents are checked by the
  manifest's checksums), the run ``seed`` (runs with different seeds are repeats of one setting), and the
  options the task declares in :attr:`Task.not_settings <llmpsych.runs.task.Task.not_settings>` (how many
  repetitions, which units, analysis-only switches).
- :func:`differing`: the settings whose values differ among the runs of one model (a setting one run
  lacks differs too).
- :func:`labels_by_settings`: a row's name, the model and every setting its runs differ in: ``gpt-x ·
  temperature 0.7 · persona pirate`` (the language alone, as ``gpt-x · de``). A model whose runs share
  one setting keeps its plain name, so with one setting everywhere every output is as before this rule.
- :func:`pooled_notes`: with the explicit ``--pool-settings`` flag the rows stay one per model, and these
  lines, printed under the table, name each setting that was pooled and its values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import LlmpsychError
from .languages import config_language

#: Top-level config keys that do not change what a unit measures (see the module docstring).
NOT_SETTINGS = frozenset(
    {
        "task",
        "model",
        "base_url",
        "seed",
        "concurrency",
        "workers",
        "timeout",
        "max_retries",
        "n_parallel",
        "cache",
        "cache_path",
        "data_dir",
    }
)
#: The setting that names a run's language; a label shows its value alone (``gpt-x · de``).
LANGUAGE = "language"
#: The value shown for a setting a run does not have.
NOT_SET = "not set"
#: Longest value kept in a label (a persona can be a paragraph); the full value is in the settings table.
VALUE_CHARS = 40
#: The flag every compare command spells alike, for pooling runs that differ in settings.
POOL_FLAG = "--pool-settings"


def _text(value: Any) -> str:
    """A setting's value as a short, stable text: numbers as ``g``, tables and lists as compact JSON."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:g}"
    if value is None:
        return "none"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return ", ".join(value) if value else "none"
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _stored_file(value: Mapping[str, Any]) -> str:
    """A file a config stores with its checksum (a scale file, a template set) by name, version and the
    start of its sha256, never by its texts (long, and possibly someone else's)."""
    name = str(value.get("path", "")).replace("\\", "/").rsplit("/", 1)[-1] or "file"
    version = f"#{value['version']}" if value.get("version") is not None else ""
    return f"{name}{version} ({str(value['sha256'])[:8]})"


def _plain(value: Any) -> Any:
    """``value`` with every stored file replaced by :func:`_stored_file`."""
    if isinstance(value, Mapping):
        return _stored_file(value) if "sha256" in value else {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def config_settings(config: Mapping[str, Any]) -> dict[str, str]:
    """A stored run config as ``{setting: value}`` (see the module docstring for what is left out).

    Options are read through the task's options model, so a run stored before an option existed, or
    with an option left at its default, compares equal to one that spells the default; a config the task
    no longer reads is compared as stored."""
    from .task import task_class

    settings: dict[str, str] = {}
    params = config.get("params")
    if isinstance(params, Mapping):
        settings.update({str(k): _text(_plain(v)) for k, v in params.items() if v is not None})
    roles = config.get("models")
    if isinstance(roles, Mapping):
        for role, spec in sorted(roles.items(), key=lambda item: str(item[0])):
            if isinstance(spec, Mapping):  # a whole endpoint: its model and parameters, not its address
                params = spec.get("params")
                spec = {"model": spec.get("model"), **(dict(params) if isinstance(params, Mapping) else {})}
            settings[f"role {role}"] = _text(_plain(spec))
    raw = config.get("options")
    options: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    skip: frozenset[str] = frozenset()
    task = config.get("task")
    if isinstance(task, str):
        try:
            cls = task_class(task)
            skip = cls.not_settings
            options = cls.validate_options(options).model_dump(mode="json")
        except LlmpsychError:
            pass
    for key, value in options.items():
        if key not in skip and key != LANGUAGE:
            settings[str(key)] = _text(_plain(value))
    for key, value in config.items():  # keys a future config adds are settings until declared otherwise
        if key not in NOT_SETTINGS and key not in {"params", "models", "options"}:
            settings[str(key)] = _text(_plain(value))
    language = config_language(config)
    if language is not None:
        settings[LANGUAGE] = language
    return settings


def stored_config(run_dir: Path) -> dict[str, Any] | None:
    """A run folder's stored config, read-only; None when the path holds no run store (a released file,
    an imported table): it has no settings to name."""
    from .store import STORE_FILE, RunStore

    if not (run_dir.is_dir() and (run_dir / STORE_FILE).is_file()):
        return None
    with RunStore.in_dir(run_dir, readonly=True) as store:
        config = store.get_meta("config")
    return dict(config) if isinstance(config, Mapping) else None


def differing(settings: Iterable[Mapping[str, str]], ignore: Iterable[str] = ()) -> list[str]:
    """The settings whose values differ among ``settings`` (one mapping per run), in first-seen order;
    a setting only some runs have differs. ``ignore``: settings the caller shows by other means."""
    runs = list(settings)
    skip = set(ignore)
    keys = [k for k in dict.fromkeys(k for s in runs for k in s) if k not in skip]
    return [k for k in keys if len({s.get(k, NOT_SET) for s in runs}) > 1]


def _short(value: str) -> str:
    """A value on one line, at most ``VALUE_CHARS`` characters (a path keeps its end, other text its
    start)."""
    flat = " ".join(value.split())
    if len(flat) <= VALUE_CHARS:
        return flat
    return "…" + flat[-(VALUE_CHARS - 1) :] if "/" in flat else flat[: VALUE_CHARS - 1] + "…"


def setting_value(key: str, settings: Mapping[str, str]) -> str:
    """One setting's value as a table cell shows it: on one line, at most ``VALUE_CHARS`` characters,
    ``not set`` when the run does not have it."""
    return _short(settings.get(key, NOT_SET))


def setting_text(key: str, settings: Mapping[str, str]) -> str:
    """One setting as a label shows it: ``temperature 0.7``; the language as its value alone."""
    value = setting_value(key, settings)
    return value if key == LANGUAGE else f"{key} {value}"


def settings_label(name: str, settings: Mapping[str, str], keys: Sequence[str]) -> str:
    """``name · key value · ...`` for each of ``keys`` (the differing settings); ``name`` when none."""
    return " · ".join([name, *(setting_text(k, settings) for k in keys)])


def _row_keys(
    names: Sequence[str],
    settings: Sequence[Mapping[str, str]],
    ignore: Iterable[str],
    within: Sequence[Hashable] | None,
) -> dict[str, list[str]]:
    """Per row name, the settings its runs differ in; with ``within`` (one key per run, e.g. the system
    a run ran), only those that differ among runs of one name *and* one such key: a setting that goes
    with the key (a system's own round limit) is part of what the table's columns already tell apart."""
    ignored = list(ignore)
    cells: dict[tuple[str, Hashable], list[Mapping[str, str]]] = {}
    for i, (name, s) in enumerate(zip(names, settings, strict=True)):
        cells.setdefault((name, None if within is None else within[i]), []).append(s)
    keys: dict[str, list[str]] = {name: [] for name in names}
    for (name, _), runs in cells.items():
        keys[name] = list(dict.fromkeys([*keys[name], *differing(runs, ignored)]))
    return keys


def pooled_notes(
    names: Sequence[str],
    settings: Sequence[Mapping[str, str]],
    ignore: Iterable[str] = (),
    within: Sequence[Hashable] | None = None,
) -> list[str]:
    """With ``--pool-settings``: one line per row (``names[i]`` is run ``i``'s row) whose runs differ in
    settings, naming each pooled setting and its values (``gpt-x: pooled temperature 0, 0.7``);
    ``within`` as for :func:`labels_by_settings`."""
    keys = _row_keys(names, settings, ignore, within)
    rows: dict[str, list[Mapping[str, str]]] = {}
    for name, s in zip(names, settings, strict=True):
        rows.setdefault(name, []).append(s)
    lines = []
    for name, runs in rows.items():
        if keys[name]:
            pooled = "; ".join(
                f"{k} " + ", ".join(dict.fromkeys(_short(s.get(k, NOT_SET)) for s in runs))
                for k in keys[name]
            )
            lines.append(f"{name}: {len(runs)} run folders pooled across settings ({POOL_FLAG}): {pooled}")
    return lines


def labels_by_settings(
    names: Sequence[str],
    configs: Sequence[Mapping[str, Any] | None],
    *,
    pool: bool = False,
    ignore: Iterable[str] = (),
    within: Sequence[Hashable] | None = None,
) -> tuple[list[str], list[str]]:
    """Each run's row name and the notes to print under the table.

    ``names[i]`` is what run ``i``'s row is called without this rule (its model); ``configs[i]`` its
    stored config (None: not a run, e.g. a released file; it has no settings). Without ``pool`` each run
    of a name gets every setting that differs among the runs of that name (:func:`settings_label`), so
    no row holds two settings, and a model with one setting keeps its name; with ``pool`` names stay and
    the notes say what was pooled (:func:`pooled_notes`). ``within`` (one key per run): only settings
    that differ among runs of one name and one key count (:func:`_row_keys`)."""
    ignored = list(ignore)
    settings = [config_settings(c) if c is not None else {} for c in configs]
    kept = [i for i, c in enumerate(configs) if c is not None]
    kept_within = None if within is None else [within[i] for i in kept]
    kept_names = [names[i] for i in kept]
    kept_settings = [settings[i] for i in kept]
    if pool:
        return list(names), pooled_notes(kept_names, kept_settings, ignored, kept_within)
    keys = _row_keys(kept_names, kept_settings, ignored, kept_within)
    labels = [
        settings_label(n, s, keys[n]) if c is not None else n
        for n, s, c in zip(names, settings, configs, strict=True)
    ]
    return labels, []


__all__ = [
    "LANGUAGE",
    "NOT_SETTINGS",
    "POOL_FLAG",
    "config_settings",
    "differing",
    "labels_by_settings",
    "pooled_notes",
    "setting_text",
    "setting_value",
    "settings_label",
    "stored_config",
]
