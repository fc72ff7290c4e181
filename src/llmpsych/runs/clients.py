"""The model clients of a run: one per role, each role with its own endpoint (:func:`open_clients`).

Below the runner and the executors (the local one and Ray's actors open a run's clients the same way)."""

from __future__ import annotations

import json

from ..models.cache import ResponseCache
from ..models.client import ModelClient, open_client
from ..models.embedded import EmbeddedSettings
from ..models.spec import ModelSpec, accepts_base_url, parse_model_spec, refuse_redirect
from ..models.types import GenerationParams
from .config import RoleModel, RunConfig

RUN_URL_SOURCE = "base_url of the run"  # where a role's URL came from when the run's base_url reached it


def _plan_roles(
    config: RunConfig, roles: set[str] | None
) -> dict[str, tuple[RoleModel, ModelSpec, str | None, str]]:
    """Each role's endpoint: (the role, its model spec parsed, the base URL it gets or None, where that URL
    came from). The spec is parsed here, once, and travels as that value to the client.

    A role's own ``base_url`` is its own (refused later for an endpoint with its own URL); the run's
    ``base_url`` goes only to roles naming an endpoint without a URL that set none themselves.
    """
    plans: dict[str, tuple[RoleModel, ModelSpec, str | None, str]] = {}
    for role, model in config.roles().items():
        if roles is not None and role not in roles:
            continue
        spec = parse_model_spec(model.model)
        if model.base_url is not None:
            plans[role] = (model, spec, model.base_url, f"models.{role}.base_url")
        elif config.base_url is not None and accepts_base_url(spec):
            plans[role] = (model, spec, config.base_url, RUN_URL_SOURCE)
        else:
            plans[role] = (model, spec, None, "")
    return plans


def base_url_roles(config: RunConfig, roles: set[str] | None = None) -> list[str]:
    """The roles the run's ``base_url`` applies to."""
    return [r for r, (_, _, _, source) in _plan_roles(config, roles).items() if source == RUN_URL_SOURCE]


def _check_run_base_url(
    config: RunConfig, plans: dict[str, tuple[RoleModel, ModelSpec, str | None, str]]
) -> None:
    """Refuse a run-level base URL that would reach no role while an HTTP role has a URL of its own (a
    received config pairing ``openai/...`` with its own server), in one line naming that role."""
    if config.base_url is None or any(src == RUN_URL_SOURCE for _, _, _, src in plans.values()):
        return
    for _, spec, _, _ in plans.values():
        if spec.kind == "http" and not accepts_base_url(spec):
            refuse_redirect(spec, config.base_url, "the run's base_url")


def open_clients(
    config: RunConfig,
    cache: ResponseCache | None,
    roles: set[str] | None = None,
    embedded: EmbeddedSettings | None = None,
) -> dict[str, ModelClient]:
    """One client per model role (``roles``: only these), each role with its own endpoint; roles with the
    same endpoint share a client, and the clients of one server share its concurrency limit. ``embedded``:
    how an embedded model runs (default: the config's slots, every core)."""
    embedded = embedded or EmbeddedSettings(n_parallel=config.n_parallel)
    plans = _plan_roles(config, roles)
    _check_run_base_url(config, plans)
    by_endpoint: dict[str, ModelClient] = {}
    by_role_endpoint: dict[str, ModelClient] = {}
    clients: dict[str, ModelClient] = {}
    for role, (model, spec, base_url, source) in plans.items():
        overrides = {
            k: v
            for k, v in GenerationParams.model_validate(model.params).model_dump(exclude_none=True).items()
            if k in model.params
        }
        limits = (
            model.concurrency or config.concurrency,
            model.timeout or config.timeout,
            model.max_retries if model.max_retries is not None else config.max_retries,
        )
        key = json.dumps([model.model, base_url, overrides, limits], sort_keys=True)
        if key not in by_role_endpoint:
            client = open_client(
                spec,
                base_url=base_url,
                concurrency=limits[0],
                timeout=limits[1],
                max_retries=limits[2],
                cache=cache,
                embedded=embedded,
                url_source=source,
            )
            client.overrides = overrides
            if client.endpoint_key in by_endpoint:
                client.share_limit_with(by_endpoint[client.endpoint_key])
            by_endpoint.setdefault(client.endpoint_key, client)
            by_role_endpoint[key] = client
        clients[role] = by_role_endpoint[key]
    return clients


def _open_cache(config: RunConfig) -> ResponseCache | None:
    return ResponseCache(config.cache_path) if config.cache else None
