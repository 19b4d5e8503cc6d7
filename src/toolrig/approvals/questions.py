"""Questions for a person (``ask_user``): reading them and their answers in every spelling, checking answers.

Trust model: questions come from the model and answers from a person through some channel (a terminal,
an MCP client, Telegram, a resumed run's caller); both are data. An answer is kept only as far as it fits
its question: labels that are not options are dropped, one label where only one may be picked, free text
only where the question takes it. Codebuff's spellings are accepted too (``options: [str]``,
``allowMultipleOptions``, ``allowOtherText``; answers with ``selectedOption(s)``, ``otherText``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toolrig.approvals.model import Choice, Question, Reply

MAX_TEXT = 2_000


def question_from(data: Mapping[str, Any]) -> Question:
    """A question from its JSON (ours or the seed's spelling); already validated by the tool's input model."""
    options = []
    for option in data.get("options") or ():
        if isinstance(option, str):
            options.append(Choice(option))
        elif isinstance(option, Mapping):
            options.append(Choice(str(option.get("label", "")), str(option.get("description") or "")))
    return Question(
        question=str(data.get("question", "")),
        header=str(data.get("header") or ""),
        options=tuple(options),
        allow_multiple=bool(data.get("allow_multiple", data.get("allowMultipleOptions", False))),
        allow_other_text=bool(data.get("allow_other_text", data.get("allowOtherText", False))),
    )


def question_json(question: Question) -> dict[str, Any]:
    return {
        "question": question.question,
        "header": question.header,
        "options": [{"label": c.label, "description": c.description} for c in question.options],
        "allow_multiple": question.allow_multiple,
        "allow_other_text": question.allow_other_text,
    }


def reply_from(data: Any, question: Question) -> Reply:
    """One answer, in any accepted spelling, cut down to what ``question`` allows."""
    if isinstance(data, str):  # a bare string: the label picked, or the person's own words
        data = {"selected": [data]} if any(c.label == data for c in question.options) else {"other_text": data}
    if not isinstance(data, Mapping):
        return Reply()
    picked: list[Any] = []
    for key in ("selected", "selectedOptions", "selected_options"):
        value = data.get(key)
        if isinstance(value, list):
            picked.extend(value)
    for key in ("selectedOption", "selected_option"):
        value = data.get(key)
        if isinstance(value, str):
            picked.append(value)
    labels = [c.label for c in question.options]
    selected = tuple(dict.fromkeys(p for p in picked if isinstance(p, str) and p in labels))
    if not question.allow_multiple:
        selected = selected[:1]
    text = data.get("other_text", data.get("otherText"))
    other = text.strip()[:MAX_TEXT] if isinstance(text, str) and text.strip() and question.free_text else None
    return Reply(selected, other)


def replies_from(data: Any, questions: Sequence[Question]) -> tuple[Reply, ...] | None:
    """All answers of a request: a list (one per question) or ``{"answers": [...]}``; None when unusable."""
    if isinstance(data, Mapping) and isinstance(data.get("answers"), list):
        data = data["answers"]
    if not isinstance(data, list) or len(data) != len(questions):
        return None
    return tuple(reply_from(item, q) for item, q in zip(data, questions, strict=True))


def reply_json(reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if reply.selected:
        out["selected"] = list(reply.selected)
    if reply.other_text is not None:
        out["other_text"] = reply.other_text
    return out


def answered(replies: Sequence[Reply]) -> bool:
    """Whether the person said anything at all (an empty answer to every question is a skip)."""
    return any(r.selected or r.other_text for r in replies)


def elicitation_schema(questions: Sequence[Question]) -> dict[str, Any]:
    """A flat form (MCP elicitation allows only primitive fields): per question a choice field and/or a text field.

    Field names are ``q1``, ``q1_other``...; each option becomes a ``oneOf`` const with its label as title
    (an ``array`` of enum items when several may be picked).
    """
    properties: dict[str, Any] = {}
    for index, question in enumerate(questions, start=1):
        title = question.header or f"Question {index}"
        if question.options:
            choices = [{"const": c.label, "title": c.label} for c in question.options]
            if question.allow_multiple:
                properties[f"q{index}"] = {
                    "type": "array",
                    "title": title,
                    "description": question.question,
                    "items": {"anyOf": choices},
                }
            else:
                properties[f"q{index}"] = {
                    "type": "string",
                    "title": title,
                    "description": question.question,
                    "oneOf": choices,
                }
        if question.free_text:
            properties[f"q{index}_other"] = {
                "type": "string",
                "title": f"{title}: your own answer" if question.options else title,
                "description": question.question,
                "maxLength": MAX_TEXT,
            }
    return {"type": "object", "properties": properties}


def replies_from_form(content: Mapping[str, Any], questions: Sequence[Question]) -> tuple[Reply, ...]:
    """Answers from an elicitation form built by ``elicitation_schema``."""
    replies = []
    for index, question in enumerate(questions, start=1):
        value = content.get(f"q{index}")
        picked = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        replies.append(reply_from({"selected": picked, "other_text": content.get(f"q{index}_other")}, question))
    return tuple(replies)
