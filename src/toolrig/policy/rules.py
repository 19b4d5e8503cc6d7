"""The permission model: one kind of rule, three verdicts, a fixed order.

A rule is ``(tool glob, subject glob and/or argument predicate, verdict)``. For a call, the policy asks in
this order and the first answer stands:

1. Is the tool offered to this agent at all (``agents.NAME.tools``)? If not: deny.
2. Does any ``deny`` rule hit the call? Deny.
3. Does any ``ask`` rule hit it? Ask.
4. Do ``allow`` rules (``tools.rules`` and the approvals allowlist) cover it? Allow; but a shell command
   that is not provably plain only asks, since a pattern cannot vouch for what it cannot read.
5. Otherwise the approval mode decides: ``off`` allows, ``smart`` allows read-only tools and asks for the
   rest, ``always`` asks.

Deny beats ask beats allow whatever the order in the files, so a broad deny cannot be undone by a
narrower allow written later, by an agent's own rules or by a workspace's file (see docs/policy.md).
A hit needs only one subject to match (a deny on ``rm *`` catches ``git status && rm -rf ~``); an allow
must cover every subject (``git *`` never approves that line).
"""

from __future__ import annotations

import fnmatch
import json
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from toolrig.config import AgentConfig, ApprovalMode, Config, RuleConfig
from toolrig.errors import ConfigError
from toolrig.permissions import AgentView, configured
from toolrig.policy.names import seed_subjects
from toolrig.policy.subjects import SubjectView, kind_of, matches, view
from toolrig.registry import AnyTool, matches_any

if TYPE_CHECKING:
    from toolrig.config import LoadedConfig
    from toolrig.sandbox.paths import Workspace

Verdict = Literal["allow", "ask", "deny"]


@dataclass(frozen=True, slots=True)
class Rule:
    tool: str
    verdict: Verdict
    subject: str | None = None
    args: Mapping[str, Any] | None = None
    reason: str = ""
    source: str = ""  # where it was written, like "tools.rules[2]" or "approvals.allow[0]"
    keys: tuple[str, ...] = ()  # config keys, for LoadedConfig.where()

    @property
    def outright(self) -> bool:
        """Applies to every call of the tool (no subject, no predicate)."""
        return self.subject is None and self.args is None

    def describe(self) -> str:
        parts = [self.verdict, self.tool]
        if self.subject is not None:
            parts.append(repr(self.subject))
        if self.args is not None:
            parts.append("when " + json.dumps(self.args, sort_keys=True, default=str))
        return " ".join(parts)

    def applies_to(self, tool: AnyTool) -> bool:
        return matches_any(tool, (self.tool,))


def allow_pattern(pattern: str, source: str, keys: tuple[str, ...] = ()) -> Rule:
    """An allowlist entry: ``tool`` or ``tool:glob`` (``group:NAME`` and ``group:NAME:glob`` too)."""
    head = ""
    rest = pattern.strip()
    if rest.startswith("group:"):
        head, rest = "group:", rest[len("group:") :]
    tool, sep, subject = rest.partition(":")
    if not tool or (sep and not subject):
        raise ValueError(f"{pattern!r} is not an allowlist pattern: write 'tool' or 'tool:glob'")
    return Rule(head + tool, "allow", subject if sep else None, source=source, keys=keys)


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    rule: str  # what decided, as written in the config ("tools.rules[1]", "approvals.mode")
    reason: str  # in words for a person (prompts) and the model (refusals)
    keys: tuple[str, ...] = ()
    trace: tuple[str, ...] = ()
    subjects: SubjectView | None = None


@dataclass(slots=True)
class _Plan:
    """The rules that concern one tool for one agent, computed once."""

    kind: str
    unavailable: Decision | None
    deny: list[Rule]
    ask: list[Rule]
    allow: list[Rule]
    default: Decision
    subject_rules: bool  # any deny/ask rule looks at subjects (then unreadable subjects must ask)
    predicates: bool  # any rule looks at the arguments
    # What ``decide`` answers for every call when the tool is offered and no rule names it (``default``):
    # the policy gate answers with it without the walk. None when a rule or a refusal has a say.
    settled: Decision | None = None


Agent = AgentView | str | None  # a view, or a configured agent's name (None: the global settings)


@dataclass
class Policy:
    """The rules a call is decided by, read from the config once; a caller's view says which agent's apply.

    The configured agents' views are built here, once; a subagent's view comes with its calls (``AgentView``)
    and its rules and plans live on that view, so no run adds or removes anything here but "allow always"
    answers and a run's own grants.
    """

    config: Config
    workspace: Workspace
    loaded: LoadedConfig | None = None
    _rules: list[Rule] = field(default_factory=list)
    _agent_rules: dict[str, list[Rule]] = field(default_factory=dict)
    _plans: dict[tuple[str, str | None], _Plan] = field(default_factory=dict)
    _allow_decisions: dict[tuple[int, ...], Decision] = field(default_factory=dict)
    # Allow rules that hold in one run only, by (session, agent): what a skill pre-approves for the run that loaded it.
    session_grants: dict[tuple[str, str | None], list[Rule]] = field(default_factory=dict)
    _views: dict[str | None, AgentView] = field(default_factory=dict)
    _generation: int = 0  # bumped by every rule added at run time: a child view's plans are rebuilt after it

    def __post_init__(self) -> None:
        # Read once, as the rules are: plans cache each tool's default, so a mode read later would hold for
        # the tools not yet called and not for the others (a config object flipped after the rig was built).
        self._mode: ApprovalMode = self.config.approvals.mode
        self._rules = [
            *self._from_config(self.config.tools.rules, ("tools", "rules")),
            *self._from_allowlist(self.config.approvals.allow, ("approvals", "allow")),
        ]
        self._views[None] = configured(None, None)
        for name, agent in self.config.agents.items():
            self._views[name] = configured(name, agent)
            self._agent_rules[name] = [
                *self._from_config(agent.rules, ("agents", name, "rules")),
                *self._from_allowlist(agent.approvals.allow, ("agents", name, "approvals", "allow")),
            ]

    def view(self, agent: Agent) -> AgentView:
        """The view of ``agent``: itself, a configured agent's, or (any other id, or None) the global settings.

        An id that names no configured agent gets the global settings, as it always did: an id is a label.
        """
        if isinstance(agent, AgentView):
            return agent
        found = self._views.get(agent)
        return found if found is not None else self._views[None]

    # ------------------------------------------------------------------------------ building

    def _from_config(self, rules: Sequence[RuleConfig], keys: tuple[str, ...]) -> list[Rule]:
        label = ".".join(keys)
        return [
            Rule(r.tool, r.verdict, r.subject, r.args, r.reason, f"{label}[{i}]", (*keys, str(i)))
            for i, r in enumerate(rules)
        ]

    def _from_allowlist(self, patterns: Sequence[str], keys: tuple[str, ...]) -> list[Rule]:
        label = ".".join(keys)
        rules = []
        for i, pattern in enumerate(patterns):
            try:
                rule = allow_pattern(pattern, f"{label}[{i}] ({pattern})", (*keys, str(i)))
            except ValueError as exc:
                file, line = self.loaded.where(*keys, str(i)) if self.loaded else (None, None)
                raise ConfigError(str(exc), file=file, key=f"{label}[{i}]", line=line) from None
            rules.extend(self._seed_meaning(rule))
        return rules

    def _seed_meaning(self, rule: Rule) -> list[Rule]:
        """A pattern written under another system's name (``Edit:/src/*``) with that system's meaning."""
        if rule.subject is None:
            return [rule]
        return [replace(rule, subject=s) for s in seed_subjects(rule.tool, rule.subject, self.workspace.root)]

    def add_allow(
        self, patterns: Sequence[str], source: str, agent: Agent = None, *, session: str | None = None
    ) -> list[Rule]:
        """Add allowlist patterns at run time ("allow always"); they hold from the next call on.

        With ``session``, they hold only for that session's calls as ``agent`` (a run), never for another run.
        A subagent's view keeps its own (its rules are its own object); a configured agent's go to its section.
        """
        rules = [r for p in patterns for r in self._seed_meaning(allow_pattern(p, f"{source} ({p})"))]
        chosen = self.view(agent) if isinstance(agent, AgentView) else None
        if session is not None:
            self.session_grants.setdefault((session, _label(agent)), []).extend(rules)
            return rules
        if chosen is not None and not chosen.configured:
            self._child_rules(chosen).extend(rules)
        else:
            name = chosen.name if chosen is not None else _name(agent)
            target = self._agent_rules.setdefault(name, []) if name else self._rules
            target.extend(rules)
        self._plans.clear()
        self._generation += 1
        return rules

    def _child_rules(self, agent: AgentView) -> list[Rule]:
        """A subagent's own rules, compiled from its profile on first use and kept on its view."""
        rules: list[Rule] | None = agent.memo.get("rules")
        if rules is None:
            profile = agent.profile or AgentConfig()
            keys = ("agents", agent.label or "")
            rules = agent.memo["rules"] = [
                *self._from_config(profile.rules, (*keys, "rules")),
                *self._from_allowlist(profile.approvals.allow, (*keys, "approvals", "allow")),
            ]
        return rules

    def lasting_scope(self, agent: Agent) -> str | None:
        """The configured agent a lasting answer ("allow always") of ``agent`` belongs to; None: the global one.

        A subagent's id is made up per child: it answers for its tree's root (a configured agent, or none).
        """
        owner = self.view(agent).owner
        return owner if owner is not None and owner in self._views else None

    def mode(self, agent: Agent) -> ApprovalMode:
        profile = self.view(agent).profile
        if profile is not None and profile.approvals.mode is not None:
            return profile.approvals.mode
        return self._mode

    def _plan(self, tool: AnyTool, agent: Agent) -> _Plan:
        chosen = self.view(agent)
        if chosen.configured:
            plans = self._plans
        else:
            memo = chosen.memo.get("plans")
            if memo is None or memo[0] is not self or memo[1] != self._generation:
                memo = chosen.memo["plans"] = (self, self._generation, {})
            plans = memo[2]
        plan = plans.get((tool.name, chosen.name))
        if plan is not None:
            return plan
        own = self._agent_rules.get(chosen.name or "", ()) if chosen.configured else self._child_rules(chosen)
        rules = [r for r in (*own, *self._rules) if r.applies_to(tool)]
        deny = [r for r in rules if r.verdict == "deny"]
        ask = [r for r in rules if r.verdict == "ask"]
        plan = _Plan(
            kind=kind_of(tool),
            unavailable=self._unavailable(tool, chosen, deny),
            deny=deny,
            ask=ask,
            allow=[r for r in rules if r.verdict == "allow"],
            default=self._default(tool, chosen),
            subject_rules=any(r.subject is not None for r in (*deny, *ask)),
            predicates=any(r.args is not None for r in rules),
        )
        if plan.unavailable is None and not rules:
            plan.settled = plan.default
        plans[(tool.name, chosen.name)] = plan
        return plan

    def _unavailable(self, tool: AnyTool, agent: AgentView, deny: list[Rule]) -> Decision | None:
        profile = agent.profile
        if profile is not None and profile.tools is not None and not matches_any(tool, profile.tools):
            label = agent.label or ""
            return Decision(
                "deny",
                f"agents.{label}.tools",
                f"the tool '{tool.name}' is not available to agent '{label}'",
                ("agents", label, "tools"),
            )
        for rule in deny:
            if rule.outright:
                return self._deny(rule, tool.name, "")
        return None

    def _default(self, tool: AnyTool, agent: AgentView) -> Decision:
        mode = self.mode(agent)
        profile = agent.profile
        where = f"agents.{agent.label}.approvals.mode" if profile and profile.approvals.mode else "approvals.mode"
        if mode == "off":
            return Decision("allow", where, "approvals are off")
        if mode == "smart" and tool.read_only:
            return Decision("allow", where, f"approvals are smart and '{tool.name}' is read-only")
        if mode == "smart":
            return Decision("ask", where, f"approvals are smart and '{tool.name}' can change things")
        return Decision("ask", where, "approvals are 'always'")

    # ------------------------------------------------------------------------------ deciding

    def offered(self, tool: AnyTool, agent: Agent) -> bool:
        """Whether the tool appears in this agent's schemas at all."""
        return self._plan(tool, agent).unavailable is None

    def unavailable(self, tool: AnyTool, agent: Agent) -> Decision | None:
        """The refusal of every call of this tool by this agent (not offered, or denied outright), if any."""
        return self._plan(tool, agent).unavailable

    def decide(
        self,
        tool: AnyTool,
        agent: Agent,
        subjects: list[str],
        args: Mapping[str, Any] | BaseModel | None = None,
        *,
        explain: bool = False,
        session: str | None = None,
    ) -> Decision:
        """Decide one call; ``args`` are its validated arguments (dumped only if a rule has a predicate)."""
        plan = self._plan(tool, agent)
        trace: list[str] | None = [] if explain else None
        if plan.unavailable is not None:
            return _with(plan.unavailable, trace, "the tool is not offered: nothing else is considered")
        allow = plan.allow
        if session is not None and (granted := self.session_grants.get((session, _label(agent)))):
            allow = [*allow, *(rule for rule in granted if rule.applies_to(tool))]
        if not (plan.deny or plan.ask or allow or explain):
            return plan.default
        subject_view = view(plan.kind, subjects, self.workspace) if subjects else _EMPTY
        if explain and subject_view.unclear:
            trace.append("not plain: " + "; ".join(subject_view.unclear))  # type: ignore[union-attr]
        if isinstance(args, BaseModel):
            args = args.model_dump(mode="json") if plan.predicates else {}
        args = args or {}
        for rule in plan.deny:
            hit = _hits(rule, plan.kind, subject_view, args)
            _note(trace, rule, hit)
            if hit is not None:
                return _with(self._deny(rule, tool.name, hit), trace, subjects=subject_view)
        for rule in plan.ask:
            hit = _hits(rule, plan.kind, subject_view, args)
            _note(trace, rule, hit)
            if hit is not None:
                reason = rule.reason or f"{rule.source} asks for {_target(tool.name, hit)}"
                return _with(Decision("ask", rule.source, reason, rule.keys), trace, subjects=subject_view)
        covering = _cover(allow, plan.kind, subject_view, args, trace)
        unclear = "; ".join(subject_view.unclear)
        if covering:
            first = covering[0]
            by_subject = any(r.subject is not None for r in covering)
            if unclear and by_subject:
                reason = f"{first.source} would allow it, but it is not plain ({unclear})"
                return _with(Decision("ask", first.source, reason, first.keys), trace, subjects=subject_view)
            return _with(self._allowed(covering), trace, subjects=subject_view)
        if unclear and plan.subject_rules and plan.default.verdict == "allow":
            reason = f"rules about its subjects cannot be checked: {unclear}"
            return _with(Decision("ask", plan.default.rule, reason), trace, subjects=subject_view)
        return _with(plan.default, trace, "no rule decided", subjects=subject_view)

    def _allowed(self, covering: list[Rule]) -> Decision:
        key = tuple(id(rule) for rule in covering)  # rules live as long as the policy; their args are dicts
        decision = self._allow_decisions.get(key)
        if decision is None:
            sources = ", ".join(dict.fromkeys(r.source for r in covering))
            decision = Decision("allow", sources, f"allowed by {sources}", covering[0].keys)
            self._allow_decisions[key] = decision
        return decision

    def _deny(self, rule: Rule, tool: str, hit: str) -> Decision:
        reason = rule.reason or f"{rule.source} ({rule.describe()}) denies {_target(tool, hit)}"
        return Decision("deny", rule.source, reason, rule.keys)


_EMPTY = SubjectView("text", (), (), ())


def hidden_globs(config: Config) -> list[str]:
    """Deny rules on every tool's path subjects, as gitignore globs the workspace hides from listings.

    A rule ``{tool: "*", subject: "secrets/**", verdict: deny}`` refuses a call that names the path; a
    recursive read of an ancestor (read_subtree ``.``, code_search, glob, list_directory) names only the
    ancestor, so the same rule also hides the path from every walk, the way ``deny_globs`` do.
    Rules limited to some tools, to an agent or by an argument predicate stay call-level only.
    """
    globs: list[str] = []
    for rule in config.tools.rules:
        if rule.verdict != "deny" or rule.tool != "*" or rule.subject is None or rule.args is not None:
            continue
        pattern = rule.subject.strip().removeprefix("./")
        if not pattern or pattern.startswith(("/", "~", "!")) or ".." in pattern.split("/"):
            continue  # outside the workspace, or not a path glob a listing could apply
        while pattern.endswith("/**"):
            pattern = pattern[: -len("/**")]  # the directory itself: a hidden directory hides what is below
        if pattern and pattern != "**":
            globs.append(pattern if pattern.startswith("**/") else "/" + pattern)
    return globs


def _target(tool: str, hit: str) -> str:
    return f"'{hit}'" if hit else f"every call of '{tool}'"


def _with(
    decision: Decision, trace: list[str] | None, note: str = "", *, subjects: SubjectView | None = None
) -> Decision:
    """The decision as is; when explaining, with the trace and the subjects as policy read them."""
    if trace is None:
        return decision
    if note:
        trace.append(note)
    return _replace(decision, trace=tuple(trace), subjects=subjects)


def _replace(decision: Decision, **changes: Any) -> Decision:
    return replace(decision, **changes)


def _note(trace: list[str] | None, rule: Rule, hit: str | None) -> None:
    if trace is not None:
        if hit is None:
            outcome = "no match"
        elif hit:
            outcome = f"matches {hit!r}"
        else:
            outcome = "the arguments match" if rule.args is not None else "matches every call"
        trace.append(f"{rule.source}: {rule.describe()}: {outcome}")


def _hits(rule: Rule, kind: str, subjects: SubjectView, args: Mapping[str, Any]) -> str | None:
    """For deny/ask: the subject (or "" for the whole call) one spelling of which matches, else None."""
    if rule.args is not None and not _predicate(rule.args, args, every=False):
        return None
    if rule.subject is None:
        return ""
    for text in subjects.deny_texts:
        if matches(kind, rule.subject, text):
            return text
    return None


def _cover(
    rules: list[Rule], kind: str, subjects: SubjectView, args: Mapping[str, Any], trace: list[str] | None
) -> list[Rule]:
    """For allow: the rules that together cover the whole call, or [] if some part stays uncovered."""
    usable = [r for r in rules if r.args is None or _predicate(r.args, args, every=True)]
    for rule in usable:
        if rule.subject is None:
            if trace is not None:
                trace.append(f"{rule.source}: {rule.describe()}: covers the whole call")
            return [rule]
    if not subjects.units:
        if trace is not None and rules:
            trace.append("allow rules with subject patterns need subjects to cover; this call has none readable")
        return []
    covering: list[Rule] = []
    for unit in subjects.units:
        found = next((r for r in usable if matches(kind, r.subject or "", unit)), None)
        if found is None:
            if trace is not None:
                trace.append(f"no allow rule covers {unit!r}")
            return []
        if trace is not None:
            trace.append(f"{found.source}: {found.describe()}: covers {unit!r}")
        covering.append(found)
    return covering


# ---------------------------------------------------------------------------------- argument predicates


def _predicate(conditions: Mapping[str, Any], args: Mapping[str, Any], *, every: bool) -> bool:
    """All conditions hold. A list argument satisfies a condition if any (deny/ask) or every (allow) item does."""
    for name, condition in conditions.items():
        found, value = _lookup(args, name)
        if not found:
            return False
        whole_list = isinstance(value, list) and isinstance(condition, dict) and list(condition) == ["eq"]
        if whole_list and _same(value, condition["eq"]):
            continue  # {eq: [...]}: a condition about the whole list
        values = value if isinstance(value, list) else [value]
        checks = [_holds(condition, item) for item in values]
        if not checks or not (all(checks) if every else any(checks)):
            return False
    return True


def _lookup(args: Mapping[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = args
    for part in dotted.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value


def _holds(condition: Any, value: Any) -> bool:
    if isinstance(condition, dict):
        return all(_operator(op, operand, value) for op, operand in condition.items())
    if isinstance(condition, str):
        return _operator("glob", condition, value)
    if isinstance(condition, list):
        return _operator("in", condition, value)
    return _operator("eq", condition, value)


_COMPARE = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _operator(op: str, operand: Any, value: Any) -> bool:
    if op == "eq":
        return _same(value, operand)
    if op == "ne":
        return not _same(value, operand)
    if op == "in":
        return isinstance(operand, list) and any(_same(value, item) for item in operand)
    if op == "glob":
        text = value if isinstance(value, str) else json.dumps(value)
        return isinstance(operand, str) and fnmatch.fnmatchcase(text, operand)
    if not (_number(value) and _number(operand)):
        return False
    return bool(_COMPARE[op](value, operand))


def _name(agent: Agent) -> str | None:
    return agent.name if isinstance(agent, AgentView) else agent


def _label(agent: Agent) -> str | None:
    return agent.label if isinstance(agent, AgentView) else agent
