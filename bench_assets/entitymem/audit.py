"""The audit page of one (configuration, episode): every artifact EntityMem made, in pipeline order: per entity
the Classification Agent's decision, each portrait attempt (chroma key, prompt, the N candidates, the selection
grid, the selected candidate, the Verification Agent's verdict), the reference; per shot the Layout Agent's plan,
the keyframes, the references and first frame the backbone received, and both arms' videos. Pure: tables in,
HTML out; images are linked by their path relative to the page (``href``)."""
from __future__ import annotations

import html
import json
from typing import Callable

import pandas as pd

STYLE = ("body{font:14px sans-serif;margin:1.5em;max-width:1200px}img{height:96px;margin:2px;"
         "border:1px solid #ccc;vertical-align:top}img.big{height:160px}.fail{color:#b00}.ok{color:#070}"
         "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px;vertical-align:top}"
         "video{height:160px}code{font-size:12px}")


def _e(x) -> str:
    return html.escape("" if x is None or (isinstance(x, float) and pd.isna(x)) else str(x))


def page(config: str, episode: str, bank: pd.DataFrame, layouts: pd.DataFrame, keyframes: pd.DataFrame,
         shots: pd.DataFrame, control: pd.DataFrame, href: Callable[[str, str], str]) -> str:
    """``href(sha, ext)``: the link to an artifact from the page."""
    def img(sha, cls="", title=""):
        return (f'<img class="{cls}" src="{href(sha, "png")}" title="{_e(title)}">'
                if isinstance(sha, str) and sha else "")

    out = [f"<!doctype html><meta charset=utf-8><title>EntityMem {_e(config)} / {_e(episode)}</title>",
           f"<style>{STYLE}</style><h1>EntityMem: {_e(config)} / {_e(episode)}</h1>", "<h2>Bank</h2>"]
    for r in bank.to_dict("records"):
        out.append(f"<h3>{_e(r['name'])} <small>({_e(r['type'])})</small></h3><p>{_e(r['description'])}<br>"
                   f"reference: <b>{_e(r['reference'])}</b>{' of ' + _e(r['owner']) if isinstance(r['owner'], str) else ''}"
                   f" &mdash; {_e(r['reason'])}; first appearance: {_e(r['context'])}</p>")
        if not isinstance(r.get("reference_json"), str):
            continue
        ref = json.loads(r["reference_json"])
        out.append(f"<p>style {_e(ref.get('style'))}; prompt: <code>{_e(ref.get('prompt'))}</code></p>")
        if "panorama" in ref:
            out.append(img(ref["panorama"], "big", "panorama") + "".join(img(v, "", k) for k, v in
                                                                         ref["crops"].items()))
        for a in ref["attempts"]:
            verdict = (f'<span class="ok">pass</span>' if a["verdict"] else
                       f'<span class="fail">fail: {_e(a["failure"])}</span>')
            out.append(f"<p>attempt {a['attempt']} on <b>{_e(a['chroma'])}</b>: selected #{a['selected']} "
                       f"({_e(a['selection_reason'])}); verification {verdict} ({_e(a['verdict_reason'])})<br>"
                       + "".join(img(c, "", f"candidate {i + 1}") for i, c in enumerate(a["candidates"]))
                       + img(a["grid"], "", "selection grid") + "</p>")
        if ref.get("cutout"):
            mark = ("" if ref.get("verified") is not False else
                    f' <span class="fail">UNVERIFIED, used anyway: {_e(ref.get("unverified_reason"))}</span>')
            out.append("<p>in the bank" + mark + ": " + img(ref["cutout"], "big", "cut-out")
                       + img(ref.get("labelled"), "big", "labelled") + "</p>")
    out.append("<h2>Shots</h2><table><tr><th>shot</th><th>layout</th><th>keyframes</th><th>EntityMem: references, "
               "first frame, video</th><th>control: memory, video</th></tr>")
    kf = keyframes.groupby("shot")
    ctl = {int(r["shot"]): r for r in control.to_dict("records")}
    for lay, s in zip(layouts.sort_values("shot").to_dict("records"), shots.sort_values("shot").to_dict("records")):
        plan = json.loads(lay["plan_json"])
        cells = "<br>".join(
            f"{i + 1}: " + ", ".join(f"{_e(e['name'])} @ {_e(e['position'])}" for e in k["entities"])
            for i, k in enumerate(plan["keyframes"]))
        kimgs = "".join(img(r["image"], "big", f"keyframe {r['keyframe']}")
                        + (f'<br><span class="fail">unverified: {_e(", ".join(json.loads(r["unverified"])))}</span>'
                           if json.loads(r["unverified"]) else "")
                        for r in kf.get_group(lay["shot"]).to_dict("records")) if lay["shot"] in kf.groups else ""
        refs = "".join(img(x, "", f"{role}: {label}") for x, role, label in zip(
            json.loads(s["references"]), json.loads(s["reference_roles"]), json.loads(s["reference_labels"])))
        first = (" first frame: " + img(s["first_frame_input"], "", "previous shot's last frame")
                 if isinstance(s["first_frame_input"], str) else "")
        direct, inherited = json.loads(s["unverified_references"]), json.loads(s["unverified_via_first_frame"])
        if direct or inherited:
            first += (f'<br><span class="fail">uses unverified references: {_e(", ".join(direct) or "-")}'
                      + (f"; through its first frame: {_e(', '.join(inherited))}" if inherited else "") + "</span>")
        c = ctl.get(int(s["shot"]))
        cref = "".join(img(x, "", "memory") for x in json.loads(c["references"])) if c is not None else ""
        cvid = f'<video controls src="{href(c["video"], "mp4")}"></video>' if c is not None else ""
        out.append(f"<tr><td>{lay['shot']}{'' if lay['cut'] else ' (continues)'}</td><td>camera "
                   f"{_e(plan['camera_angle'])}, pan {_e(plan.get('pan'))}<br>{cells}<br><small>retained "
                   f"{_e(lay['retained'])} entering {_e(lay['entering'])} leaving {_e(lay['leaving'])}; repairs "
                   f"{_e(lay['repairs'])}</small></td><td>{kimgs}</td><td>{refs}{first}<br>"
                   f'<small>{_e(s["prompt"])}</small><br><video controls src="{href(s["video"], "mp4")}"></video>'
                   f"</td><td>{cref}<br>{cvid}</td></tr>")
    out.append("</table>")
    return "\n".join(out)
