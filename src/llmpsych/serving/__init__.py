"""Serving HTTP on this machine, safely by default: the layer under every llmpsych server.

``llmpsych web``, ``gamabench host`` (the web pages) and ``faults serve`` (the fault-injecting
OpenAI-compatible endpoint) are three servers with one set-up, defined here once:

- :mod:`.listen`: the socket bound before the server starts (:func:`~.listen.bind`; port 0 gives a free
  one, so the URL printed is the one that answers), loopback detection, how a bound host is written in a
  URL, and uvicorn's settings (:func:`~.listen.server_config`);
- :mod:`.connections`: what one connection may hold (read time, head size, connections per client);
- :mod:`.hosts`: the per-process token and the ``Host`` check against DNS rebinding.

A shared layer: it imports no research package and not the web app (``tests/test_layers.py``). Its
modules are imported by name (``from llmpsych.serving.listen import bind``); this face imports none of
them, so naming one does not load uvicorn for the others.
"""

from __future__ import annotations
