"""Reports as HTML fragments: raw HTML and script links stay text, references leave no run, anchors and
table alignment survive the Content-Security-Policy; and a unit's calls grouped into conversations."""

from __future__ import annotations

import re

from llmpsych.runs.calls import StoredCall
from llmpsych.web.render import run_fragment
from llmpsych.web.transcript import threads

FILES = ["report.md", "plots/a.png", "transcripts/g.md"]


def _render(text: str, name: str = "report.md") -> str:
    return run_fragment(text, name, FILES, lambda path: f"/run/R/file/{path}")


def test_markup_and_script_links_stay_text() -> None:
    html = _render(
        "<script>alert(1)</script>\n\n[a](javascript:alert(1)) [b](JAVASCRIPT:x) [c](vbscript:x) "
        "[d](data:text/html,x) <img src=x onerror=y> [e](file:///etc/passwd)"
    )
    assert "<script" not in html and "<img" not in html and "onerror=y>" not in html
    for scheme in ("javascript:", "JAVASCRIPT:", "vbscript:", "data:text", "file:"):
        assert f'href="{scheme}' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_references_resolve_to_the_runs_own_files_only() -> None:
    html = _render(
        "![a](plots/a.png) ![b](../other/b.png) ![c](/etc/x.png) ![d](http://evil.example/x.png) "
        "[t](transcripts/g.html#seat-1) [u](transcripts/g.md) [v](../../secret.md) [w](https://example.org/)"
    )
    assert 'src="/run/R/file/plots/a.png"' in html
    assert html.count('data-missing="1"') == 3  # outside the run, absolute, another site: no image
    assert (
        'href="/run/R/file/transcripts/g.md#seat-1"' in html and 'href="/run/R/file/transcripts/g.md"' in html
    )
    assert not any("secret" in href for href in re.findall(r'href="[^"]*"', html))
    assert 'class="dead-link"' in html
    assert 'href="https://example.org/" rel="noreferrer noopener"' in html
    # a file's references are relative to its own folder
    nested = _render("![a](../plots/a.png)", "transcripts/g.md")
    assert 'src="/run/R/file/plots/a.png"' in nested


def test_anchors_and_alignment_survive_without_inline_html_or_style() -> None:
    html = _render('<a id="seat-1"></a>\n\n<a id="x" onclick="y"></a>\n\n| a | b |\n|--:|:-:|\n| 1 | 2 |\n')
    assert '<a id="seat-1"></a>' in html and "onclick=&quot;y&quot;" in html and 'onclick="y"' not in html
    assert 'class="align-right"' in html and 'class="align-center"' in html and "style=" not in html


def _call(seq: int, role: str, messages: list[dict], reply: str) -> StoredCall:
    request = {"messages": messages}
    response = {"text": reply, "errors": ["HTTP 429"] if seq == 2 else []}
    return StoredCall("u", f"k{seq}", seq, role, "m", request, response, 0.1, 10, 2, 1, False, float(seq))


def test_calls_group_into_one_conversation_per_seat_with_only_new_messages() -> None:
    sys_msg = {"role": "system", "content": "rules"}
    a1 = [sys_msg, {"role": "user", "content": "seat A, round 1"}]
    b1 = [sys_msg, {"role": "user", "content": "seat B, round 1"}]
    a2 = [*a1, {"role": "assistant", "content": "1"}, {"role": "user", "content": "invalid, again"}]
    b2 = [*b1, {"role": "assistant", "content": "2"}, {"role": "user", "content": "round 2"}]
    other = [{"role": "user", "content": "judge this"}]
    out = threads(
        [_call(1, "subject", a1, "1"), _call(2, "subject", b1, "2"), _call(3, "subject", a2, "3")]
        + [_call(4, "subject", b2, "4"), _call(5, "judge", other, "ok")]
    )
    assert [len(t.turns) for t in out] == [2, 2, 1] and out[2].role == "judge"
    assert [m["content"] for m in out[0].turns[1].new_messages] == ["invalid, again"]  # the re-ask only
    assert out[1].turns[0].errors == ["HTTP 429"] and out[0].tokens == (20, 4)
