"""Questions for a person (``ask_user``): reading them and their answers in every spelling, checking answers.

Trust model: questions come from the model and answers from a person through some channel (a terminal,
an MCP client, Telegram, a resumed run's caller); both are data. An answer is kept only as far as it fits
its question: labels that are not options are dropped, one label where only one may be picked, free text
only where the question takes it. Codebuff's spellings are accepted too (``options: [str]``,
``allowMultipleOptions``, ``allowOtherText``; answers with ``selectedOption(s)``, ``otherText``).

A question may carry a ``form`` of its own (MCP elicitation's flat JSON Schema, checked by
``toolrig.forms``): its answer is ``values`` (``content`` in MCP's spelling), kept only when every value fits
its field (defaults fill the fields left out); values that do not fit are refused with the reason, never
passed on. A front end that can show forms (MCP elicitation) sends the form as written; one that cannot
(a terminal) asks one plain question per field (``field_questions``) and folds the answers back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from toolrig.approvals.model import ApprovalDecision, ApprovalRequest, Choice, Question, Reply
from toolrig.forms import FormError, check_form, check_values, choices, fields

MAX_TEXT = 2_000


def question_from(data: Mapping[str, Any]) -> Question:
    """A question from its JSON (ours or the seed's spelling); its ``form``, if any, is checked (``FormError``)."""
    form = data.get("form")
    if form is not None:
        return Question(
            question=str(data.get("question", "")), header=str(data.get("header") or ""), form=check_form(form)
        )
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
    if question.form is not None:
        return {"question": question.question, "header": question.header, "form": question.form}
    return {
        "question": question.question,
        "header": question.header,
        "options": [{"label": c.label, "description": c.description} for c in question.options],
        "allow_multiple": question.allow_multiple,
        "allow_other_text": question.allow_other_text,
    }


def reply_from(data: Any, question: Question) -> Reply:
    """One answer, in any accepted spelling, cut down to what ``question`` allows."""
    if question.form is not None:
        return form_reply(data, question.form)
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


def form_reply(data: Any, form: Mapping[str, Any]) -> Reply:
    """A form's answer (``{"values": {...}}``, ``{"content": {...}}`` or the values themselves), checked."""
    if isinstance(data, Mapping) and data.get("error") is not None and "values" not in data:
        return Reply(error=str(data["error"])[:MAX_TEXT])
    values = data.get("values", data.get("content", data)) if isinstance(data, Mapping) else data
    if values is None:
        return Reply()
    try:
        return Reply(values=check_values(form, values))
    except FormError as exc:
        return Reply(error=str(exc))


def reply_json(reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if reply.values is not None:
        out["values"] = dict(reply.values)
    if reply.error is not None:
        out["error"] = reply.error
    if reply.selected:
        out["selected"] = list(reply.selected)
    if reply.other_text is not None:
        out["other_text"] = reply.other_text
    return out


def answered(replies: Sequence[Reply]) -> bool:
    """Whether the person said anything at all (an empty answer to every question is a skip)."""
    return any(r.selected or r.other_text or r.values is not None for r in replies)


def refused(replies: Sequence[Reply]) -> str | None:
    """Why an answer was refused (values that did not fit their form), or None."""
    for index, reply in enumerate(replies, start=1):
        if reply.error is not None:
            return f"answer {index}: {reply.error}" if len(replies) > 1 else reply.error
    return None


def elicitation_schema(questions: Sequence[Question]) -> dict[str, Any]:
    """A flat form (MCP elicitation allows only primitive fields): per question a choice field and/or a text field.

    Field names are ``q1``, ``q1_other``...; each option becomes a ``oneOf`` const with its label as title
    (an ``array`` of enum items when several may be picked). A question with a form of its own, asked
    alone, is sent as written; among other questions its fields are named ``q1_<field>``.
    """
    if len(questions) == 1 and questions[0].form is not None:
        return dict(questions[0].form)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for index, question in enumerate(questions, start=1):
        if question.form is not None:
            for name, spec in fields(question.form).items():
                properties[f"q{index}_{name}"] = spec
            required += [f"q{index}_{name}" for name in question.form.get("required", ())]
            continue
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
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}


def replies_from_form(content: Mapping[str, Any], questions: Sequence[Question]) -> tuple[Reply, ...]:
    """Answers from an elicitation form built by ``elicitation_schema``."""
    if len(questions) == 1 and questions[0].form is not None:
        return (form_reply({"values": dict(content)}, questions[0].form),)
    replies = []
    for index, question in enumerate(questions, start=1):
        if question.form is not None:
            prefix = f"q{index}_"
            own = {k[len(prefix) :]: v for k, v in content.items() if k.startswith(prefix)}
            replies.append(form_reply({"values": own}, question.form))
            continue
        value = content.get(f"q{index}")
        picked = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        replies.append(reply_from({"selected": picked, "other_text": content.get(f"q{index}_other")}, question))
    return tuple(replies)


# ------------------------------------------------------------------------------ forms where no form can be shown


def field_questions(question: Question) -> list[Question]:
    """A form as plain questions, one per field (a terminal): choices as options, the default in the text.

    A field left empty takes its default (``values_from_fields``); a choice's option label is its value.
    """
    form = question.form or {}
    out = []
    for name, spec in fields(form).items():
        label = str(spec.get("title") or name)
        text = f"{label}: {spec['description']}" if spec.get("description") else label
        if "default" in spec:
            text += f" (empty: {spec['default']})"
        kind = spec["type"]
        if kind == "boolean":
            options: tuple[Choice, ...] = (Choice("yes"), Choice("no"))
        else:
            options = tuple(Choice(value, title if title != value else "") for value, title in choices(spec))
        out.append(
            Question(
                question=text,
                header=name[:60],
                options=options,
                allow_multiple=kind == "array",
                allow_other_text=not options,
            )
        )
    return out


def optional_fields(question: Question) -> list[bool]:
    """Per field of a form question: whether it may be left empty (it has a default or is not required)."""
    form = question.form or {}
    required = set(form.get("required", ()))
    return ["default" in spec or name not in required for name, spec in fields(form).items()]


def values_from_fields(question: Question, replies: Sequence[Reply]) -> Reply:
    """The plain answers to ``field_questions`` as the form's typed values, checked; a refusal says why."""
    form = question.form or {}
    values: dict[str, Any] = {}
    for (name, spec), reply in zip(fields(form).items(), replies, strict=False):
        kind = spec["type"]
        if kind == "array":
            if reply.selected:
                values[name] = list(reply.selected)
            continue
        raw = reply.selected[0] if reply.selected else (reply.other_text or "").strip()
        if not raw:
            continue  # the default, or missing
        try:
            if kind == "boolean":
                values[name] = raw == "yes"
            elif kind == "integer":
                values[name] = int(raw)
            elif kind == "number":
                values[name] = float(raw)
            else:
                values[name] = raw
        except ValueError:
            return Reply(error=f"field {name!r}: {raw[:60]!r} is not a {kind}")
    return form_reply({"values": values}, form)


def without_forms(request: ApprovalRequest) -> ApprovalRequest:
    """The request with each form question as its plain field questions, for a channel that shows no forms."""
    if not any(q.form is not None for q in request.questions):
        return request
    plain = tuple(p for q in request.questions for p in (field_questions(q) if q.form is not None else [q]))
    return dataclasses.replace(request, questions=plain)


def with_forms(request: ApprovalRequest, decision: ApprovalDecision) -> ApprovalDecision:
    """A decision on ``without_forms(request)`` read back: each form's field answers folded into its values."""
    answers = decision.answers
    if answers is None or not any(q.form is not None for q in request.questions):
        return decision
    folded, at = [], 0
    for question in request.questions:
        count = len(fields(question.form)) if question.form is not None else 1
        mine = answers[at : at + count]
        at += count
        folded.append(values_from_fields(question, mine) if question.form is not None else (mine or (Reply(),))[0])
    return dataclasses.replace(decision, answers=tuple(folded))
