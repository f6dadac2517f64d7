"""The Compositional Reasoning Progression templates: 5 variants per (dimension, format, direction), written by us
from the paper's appendix (Tables 8.1). Placeholders: {a} {o} {s} the anchor state's action / outfit / scene,
{x} the asked value (binary), {when} "at the beginning" | "at the end" | "in the video", {rel} "later" | "earlier".
Existence has a group per track type; its binary negatives ask another type's question about the same anchor.
Actions are -ing phrases ("walking to the left"), outfits and scenes noun phrases."""
from __future__ import annotations

WHEN = {"start_to_later": "at the beginning", "later_to_start": "at the end", "agnostic": "in the video"}
REL = {"start_to_later": "later", "later_to_start": "earlier", "agnostic": ""}

# ---------------------------------------------------------------------------------------------- EE (existence)
EE_BINARY = {
    "appear": [
        "Is the person {a} in {s} with {o} only seen at the end?",
        "Does the person {a} and wearing {o} in {s} first appear at the end?",
        "Is the person {a} and wearing {o} in {s} not seen earlier but appearing at the end?",
        "Does the person who is {a} and wearing {o} in {s} appear only at the end?",
        "At the end, is the person {a} in {s} while wearing {o} seen for the first time?"],
    "reappear_start_to_later": [
        "Does the person {a} and wearing {o} in {s} at the beginning disappear during the video and reappear at the end?",
        "Is the person {a} and wearing {o} in {s} at the beginning gone for a while and then present again at the end?",
        "Does the person {a} and wearing {o} in {s} at the beginning disappear and later show up at the end?",
        "Does the person {a} and wearing {o} in {s} at the beginning appear again at the end?",
        "After appearing {a} and wearing {o} in {s} at the beginning, does the person reappear at the end?"],
    "reappear_later_to_start": [
        "Does the person {a} and wearing {o} in {s} at the end also appear at the beginning, and then disappear for a while?",
        "Does the person {a} and wearing {o} in {s} at the end also appear at the beginning, and then go missing for a while?",
        "Does the person {a} and wearing {o} in {s} at the end also show up earlier, at the beginning?",
        "Was the person {a} and wearing {o} in {s} at the end already seen at the beginning?",
        "Before appearing {a} and wearing {o} in {s} at the end, was the person seen at the beginning and then gone for a while?"],
    "disappear": [
        "Does the person who is {a} and wearing {o} in {s} appear at the beginning and then remain unseen afterward?",
        "Is the person {a} in {s} with {o} seen only at the beginning and then gone?",
        "Does the person {a} in {s} with {o} disappear after the beginning and not come back?",
        "Is the person {a} and wearing {o} in {s} only seen at the beginning and never again?",
        "Does the person who is {a} and wearing {o} in {s} appear at the beginning, then leave and never come back?"],
}
# the group a track type's anchor is asked with, per direction, and the wrong-type group its negative uses
EE_GROUP = {("appear", "later_to_start"): "appear", ("disappear", "start_to_later"): "disappear",
            ("reappear", "start_to_later"): "reappear_start_to_later",
            ("reappear", "later_to_start"): "reappear_later_to_start"}
EE_NEGATIVE = {"appear": "reappear_later_to_start", "disappear": "reappear_start_to_later",
               "reappear_start_to_later": "disappear", "reappear_later_to_start": "appear"}
EE_MC = [
    "Which best describes the person {a} and wearing {o} in {s} {when}?",
    "Which best describes the person in {s}, {a} and wearing {o}, {when}?",
    "Which best describes the person {a} in {s} while wearing {o} {when}?",
    "When is the person appearing {when} while {a} and wearing {o} in {s} seen?",
    "When is the person who appears {when}, {a} in {s} and wearing {o}, visible?"]
EE_OPTIONS = {"appear": "Appears only at the end",
              "reappear": "Appears at the start, is missing for a while, then comes back",
              "disappear": "Appears at the start and is missing until the end"}

# ---------------------------------------------------------------------------------------------- AC / OC / SC
BINARY = {
    "AC": [
        "Is the person {a} in {s} while wearing {o} {when} {rel} seen {x}?",
        "Is the person who is {a} and wearing {o} in {s} {when} {rel} {x}?",
        "Is the person who is {a} while wearing {o} in {s} {when} seen {x} {rel}?",
        "{When_cap}, the person {a} in {s} with {o} is visible. Are they {x} {rel}?",
        "Does the person who is {a} and wearing {o} in {s} {when} appear {x} {rel}?"],
    "OC": [
        "Is the person who is {a} and wearing {o} in {s} {when} {rel} shown wearing {x}?",
        "{When_cap}, the person is {a} in {s} with {o}. Do they wear {x} {rel}?",
        "Is the person {a} and wearing {o} in {s} {when} seen {rel} wearing {x}?",
        "After being in {s} {a} and wearing {o} {when}, is the person seen wearing {x} {rel}?",
        "Does the person {a} and wearing {o} in {s} {when} appear {rel} wearing {x}?"],
    "SC": [
        "Does the person who is {a} and wearing {o} in {s} {when} appear {rel} in {x}?",
        "Is the person {a} and wearing {o} in {s} {when} seen {rel} in {x}?",
        "Is the person {a} and in {s} while wearing {o} {when} shown {rel} in {x}?",
        "After being {a} and wearing {o} in {s} {when}, does the person show up in {x} {rel}?",
        "Is the person {a} while wearing {o} in {s} {when} present {rel} in {x}?"],
    "EA": [
        "Is the person {a} and wearing {o} in {s} {when} the same person seen {rel} {x}?",
        "Does the person who is {a} and wearing {o} in {s} {when} match the person seen {rel} {x}?",
        "{When_cap}, the person is {a} in {s} with {o}. Is the same person seen {rel} {x}?",
        "After appearing {a} and wearing {o} in {s} {when}, is it the same person shown {rel} {x}?",
        "Is the person {a} in {s} while wearing {o} {when} identical to the person seen {rel} {x}?"],
}
MC = {
    "AC": [
        "What is the person {a} in {s} with {o} {when} doing {rel}?",
        "What action does the person who is {a} and wearing {o} in {s} {when} perform {rel}?",
        "What action is performed {rel} by the person who is {a} and wearing {o} in {s} {when}?",
        "{When_cap}, the person {a} in {s} with {o} is visible. What are they doing {rel}?",
        "What action does the person {a} with {o} in {s} {when} perform {rel}?"],
    "OC": [
        "What outfit is worn {rel} by the person who is {a} and wearing {o} in {s} {when}?",
        "{When_cap}, the person is {a} in {s} with {o}. What outfit does the person wear {rel}?",
        "What outfit does the person {a} in {s} while wearing {o} {when} wear {rel}?",
        "After being seen {a} and wearing {o} in {s} {when}, what outfit is the person seen wearing {rel}?",
        "Which outfit does the person {a} and wearing {o} in {s} {when} have on {rel}?"],
    "SC": [
        "In which scene does the person who is {a} and wearing {o} in {s} {when} appear {rel}?",
        "In which scene is the person {a} and wearing {o} in {s} {when} seen {rel}?",
        "In which scene is the person {a} and in {s} while wearing {o} {when} shown {rel}?",
        "After being {a} and wearing {o} in {s} {when}, in which scene does the person appear {rel}?",
        "In which scene is the person {a} while wearing {o} in {s} {when} present {rel}?"],
    "EA": [
        "{Rel_cap} in the video, which person is most likely the same one who was {a} and wearing {o} in {s} {when}?",
        "{Rel_cap} in the video, who is the same person who was {a} and wearing {o} in {s} {when}?",
        "Which person seen {rel} matches the one who was {a} and wearing {o} in {s} {when}?",
        "{Rel_cap} in the video, who is the same person seen {when} wearing {o} in {s}, {a}?",
        "Which person seen {rel} matches the one seen {when} who was {a} and wearing {o} in {s}?"],
}
ORDERING = {
    "AC": [
        "What is the chronological order of the following actions performed by the person who was {a} and wearing {o} in {s} {when}?",
        "Arrange the following actions in the order performed by the person seen {a} and wearing {o} in {s} {when}.",
        "In what order did the person {a} and wearing {o} in {s} {when} perform these actions?",
        "Put the following actions in the order performed by the person {a} and wearing {o} in {s} {when}.",
        "Identify the order of actions performed by the person {a} and wearing {o} in {s} {when}."],
    "OC": [
        "What is the chronological order of the following outfits worn by the person who was {a} and wearing {o} in {s} {when}?",
        "Arrange the following outfits in the order worn by the person {a} and wearing {o} in {s} {when}.",
        "In what order did the person {a} and wearing {o} in {s} {when} wear the following outfits during the video?",
        "Put the following outfits in the order worn by the person who is {a} and wearing {o} in {s} {when}.",
        "Identify the order of outfits worn by the person who is {a} and wearing {o} in {s} {when}."],
    "SC": [
        "What is the chronological order of the following scenes involving the person who was {a} and wearing {o} in {s} {when}?",
        "Arrange the following scenes in the order the person seen {a} and wearing {o} in {s} {when} appears in them.",
        "In what order did the person {a} and wearing {o} in {s} {when} move through these scenes?",
        "Put the following scenes in the order in which the person seen {a} and wearing {o} in {s} {when} appears.",
        "Identify the order of scenes in which the person who is {a} and wearing {o} in {s} {when} appears."],
}


def fill(template: str, direction: str, a: str, o: str, s: str, x: str = "") -> str:
    when, rel = WHEN[direction], REL[direction]
    text = template.format(a=a, o=o, s=s, x=x, when=when, rel=rel, When_cap=when[:1].upper() + when[1:],
                           Rel_cap=rel[:1].upper() + rel[1:])
    return " ".join(text.split()).replace(" ?", "?").replace(" .", ".").replace(" ,", ",")


def template_table() -> dict[tuple[str, str, str], list[str]]:
    """Every (dimension, format, direction[/group]) -> its 5 variants (for coverage checks and the grammar filter)."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for g, vs in EE_BINARY.items():
        out[("EE", "binary", g)] = vs
    for d in ("start_to_later", "later_to_start"):
        out[("EE", "mc", d)] = EE_MC
        for dim in ("AC", "OC", "SC", "EA"):
            out[(dim, "binary", d)] = BINARY[dim]
            out[(dim, "mc", d)] = MC[dim]
    for d in ("start_to_later", "later_to_start", "agnostic"):
        for dim in ("AC", "OC", "SC"):
            out[(dim, "ordering", d)] = ORDERING[dim]
    return out
