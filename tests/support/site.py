"""Reading the report site's audit pages."""
from __future__ import annotations

import html as H
import re

from tests.support import DATA, QUIET, ROOT  # noqa: F401


def _instance_rows(page_html: str) -> list[dict]:
    """(entity, level, frame index, crop src, detail) of each instance row of an audit page."""
    out = []
    for t in re.findall(r'<table class="instances">(.*?)</table>', page_html, re.S):
        for tr in re.findall(r"<tr><td>.*?</tr>", t, re.S):
            tds = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            src = re.search(r'<img class="crop" src="([^"]+)"', tr)
            frame = re.match(r"\d+", tds[5])
            out.append({"entity": tds[1], "level": tds[2], "frame": int(frame.group(0)) if frame else None,
                        "src": src.group(1) if src else None, "detail": H.unescape(tds[6])})
    return out

