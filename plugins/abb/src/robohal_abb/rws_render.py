"""How the simulated RWS writes its answers, in each dialect's media types.

- RWS 1.0 (RobotWare 6): XHTML by default, JSON with ``?json=1`` (RWS manual: "json=1 Returns
  JSON representation. The default is always XML"). XHTML lists resources as
  ``<li class="TYPE" title="TITLE"><span class="FIELD">VALUE</span>...</li>`` (the manual's samples);
  JSON as ``{"_links": {"base": ...}, "_embedded": {"_state": [{"_type", "_title", FIELD...}]}}`` with
  the media type exactly ``application/json`` (abb-robot-client reads JSON only then), errors as
  ``{"_embedded": {"status": {"code", "msg"}}}`` (abb-robot-client) or the XHTML
  ``<div class="status"><span class="code">..</span><span class="msg">..</span></div>`` (RWS manual).
- RWS 2.0 (RobotWare 7): ``application/hal+json;v=2.0`` with one resource in ``state`` and lists
  in ``_embedded.resources``, a ``status`` object on errors, or ``application/xhtml+xml;v=2.0``
  (shapes as captured from an OmniCore virtual controller by a public client).
- Subscription events, both dialects: XHTML, one ``<li>`` per line (abb-robot-client matches each
  event's link and value on one line), class first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any

XHTML = "xhtml"
JSON = "json"  # RWS 1.0's ?json=1
HAL = "hal"  # RWS 2.0's hal+json
CONTENT_TYPES = {
    (6, XHTML): "application/xhtml+xml;charset=utf-8",
    (6, JSON): "application/json",
    (7, XHTML): "application/xhtml+xml;v=2.0",
    (7, HAL): "application/hal+json;v=2.0",
}


@dataclass
class Answer:
    """A successful answer: ``items`` are resources (dicts with ``_type``, ``_title`` and fields);
    ``listing`` puts them in RWS 2.0's ``_embedded.resources`` (else ``state``). ``raw`` is a body
    sent as it is (a file). ``code`` is a controller return code to report with a success."""

    status: int = 200
    items: list[dict[str, Any]] = field(default_factory=list)
    listing: bool = False
    base: str = "/"
    title: str = "rw"
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    raw_type: str = "application/octet-stream"
    next_link: str | None = None
    code: int | None = None
    message: str = ""


def render(answer: Answer, version: int, media: str, origin: str) -> tuple[bytes, str | None]:
    """(body, content type) of an answer; no body for 204."""
    if answer.raw is not None:
        return answer.raw, answer.raw_type
    if answer.status == 204:
        return b"", None
    if media == XHTML:
        return _xhtml(answer.items, origin + answer.base, answer.title, answer.code, answer.message), \
            CONTENT_TYPES[(version, XHTML)]
    if version == 6:
        body: dict[str, Any] = {"_links": {"base": {"href": origin + answer.base}}, "_embedded": {"_state": answer.items}}
        if answer.code is not None:
            body["_embedded"]["status"] = {"code": answer.code, "msg": answer.message}
        return _json(body), CONTENT_TYPES[(6, JSON)]
    links: dict[str, Any] = {"base": {"href": origin + answer.base}, "self": {"href": ""}}
    if answer.next_link:
        links["next"] = {"href": answer.next_link}
    hal: dict[str, Any] = {"_links": links}
    if answer.code is not None:
        hal["status"] = {"code": answer.code, "msg": answer.message}
    if answer.listing:
        hal["_embedded"] = {"resources": answer.items}
    else:
        hal["state"] = answer.items
    return _json(hal), CONTENT_TYPES[(7, HAL)]


def render_error(status: int, code: int, message: str, version: int, media: str, origin: str) -> tuple[bytes, str]:
    if media == XHTML:
        page = (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">\n'
                f'<head><title>rw</title><base href="{escape(origin)}/"/></head>\n<body>\n<div class="status">\n'
                f'<span class="code">{code}</span>\n<span class="msg">{escape(message)}</span>\n</div>\n</body>\n</html>\n')
        return page.encode(), CONTENT_TYPES[(version, XHTML)]
    if version == 6:
        return _json({"_links": {"base": {"href": origin + "/"}}, "_embedded": {"status": {"code": code, "msg": message}}}), \
            CONTENT_TYPES[(6, JSON)]
    return _json({"_links": {"base": {"href": origin + "/"}}, "status": {"code": code, "msg": message}}), \
        CONTENT_TYPES[(7, HAL)]


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _li(item: dict[str, Any], link: str | None = None) -> str:
    spans = "".join(f'<span class="{escape(str(key))}">{escape(str(value))}</span>'
                    for key, value in item.items() if not key.startswith("_") and not isinstance(value, (list, dict)))
    anchor = f'<a href="{escape(link)}" rel="self"/>' if link else ""
    return f'<li class="{escape(item["_type"])}" title="{escape(str(item["_title"]))}">{anchor}{spans}</li>'


def _xhtml(items: list[dict[str, Any]], base: str, title: str, code: int | None, message: str) -> bytes:
    lines = ['<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">',
             f'<head><title>{escape(title)}</title><base href="{escape(base)}"/></head>',
             '<body>\n<div class="state">\n<a href="" rel="self"></a>\n<ul>']
    lines += [_li(item, item.get("_links", {}).get("self", {}).get("href")) for item in items]
    lines.append("</ul>\n</div>")
    if code is not None:
        lines.append(f'<div class="status"><span class="code">{code}</span><span class="msg">{escape(message)}</span></div>')
    lines.append("</body>\n</html>\n")
    return "\n".join(lines).encode()


def event_page(events: list[tuple[dict[str, Any], str]], group: int, origin: str, websocket: str | None = None) -> str:
    """A subscription's XHTML: the group's links and one ``<li>`` per (item, resource link) on its
    own line (RWS manual's subscription samples; abb-robot-client finds the websocket in the
    ``rel="self"`` link)."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<html xmlns="http://www.w3.org/1999/xhtml">',
             f'<head><title>Event</title><base href="{escape(origin)}/"/></head>', '<body>', '<div class="state">',
             f'<a href="subscription/{group}" rel="group"></a>']
    if websocket:
        lines.append(f'<a href="{escape(websocket)}" rel="self"></a>')
        lines.append(f'<a href="subscription/{group}?action=show" rel="action"></a>')
    lines.append("<ul>")
    lines += [_li(item, link) for item, link in events]
    lines += ["</ul>", "</div>", "</body>", "</html>"]
    return "\n".join(lines)
