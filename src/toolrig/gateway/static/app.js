// toolrig's web page. Everything a model or a tool wrote is shown with textContent, never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { session: null, run: null, source: null, bubble: null, subagents: new Map() };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function api(path, options = {}) {
  const init = { credentials: "same-origin", ...options, headers: { "content-type": "application/json" } };
  const response = await fetch(path, init);
  if (response.status === 401) {
    $("login").classList.remove("hidden");
    throw new Error("not signed in");
  }
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function say(text) { $("status").textContent = text; }

function logLine(node) {
  $("log").appendChild(node);
  node.scrollIntoView({ block: "end" });
  return node;
}

function short(value, width = 300) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > width ? text.slice(0, width - 1) + "…" : text;
}

// ------------------------------------------------------------------ events of a run

const handlers = {
  init(ev) { state.session = ev.session_id; $("session-title").textContent = `Session ${ev.session_id}`; },
  stream_text(ev) {
    if (!state.bubble) state.bubble = logLine(el("div", "msg assistant", ""));
    state.bubble.textContent += ev.text;
  },
  tool_call(ev) {
    state.bubble = null;
    logLine(el("div", ev.task_id ? "tool sub" : "tool", `→ ${ev.name}(${short(ev.args, 200)})`));
  },
  tool_result(ev) {
    const mark = ev.is_error ? "✗" : "✓";
    logLine(el("div", `tool${ev.is_error ? " error" : ""}${ev.task_id ? " sub" : ""}`, `${mark} ${ev.name}: ${ev.preview}`));
  },
  subagent_start(ev) {
    const line = logLine(el("div", "subagent", `⇢ ${ev.agent_type} ${ev.task_id}: started — ${short(ev.prompt, 120)}`));
    state.subagents.set(ev.task_id, { line, type: ev.agent_type });
  },
  subagent_progress(ev) {
    const sub = state.subagents.get(ev.task_id);
    if (sub) sub.line.textContent = `⇢ ${sub.type} ${ev.task_id}: ${ev.tool_calls} tool calls${ev.last_tool ? ", last " + ev.last_tool : ""}`;
  },
  subagent_done(ev) {
    const sub = state.subagents.get(ev.task_id);
    const text = `⇢ ${sub ? sub.type : "subagent"} ${ev.task_id}: ${ev.status}${ev.error ? " — " + ev.error : ""}`;
    if (sub) sub.line.textContent = text; else logLine(el("div", "subagent", text));
  },
  history(ev) { state.bubble = null; showMessages(ev.messages); },
  todos(ev) { showTodos(ev.todos); },
  followups(ev) { showFollowups(ev.followups); },
  pending(ev) { showCard(ev); },
  pending_answered(ev) { removeCard(ev.id); },
  pending_withdrawn(ev) { removeCard(ev.id); },
  done(ev) { state.bubble = null; },
  error(ev) { logLine(el("div", "error-line", `run failed (${ev.kind}): ${ev.message}`)); },
  run_end(ev) { endRun(ev.status); },
};

function follow(runId) {
  if (state.source) state.source.close();
  const source = new EventSource(`/api/runs/${encodeURIComponent(runId)}/events`);
  state.source = source;
  source.onmessage = (message) => {
    const ev = JSON.parse(message.data);
    const handle = handlers[ev.type];
    if (handle) handle(ev);
  };
  source.addEventListener("end", () => { source.close(); if (state.source === source) state.source = null; });
}

function endRun(status) {
  say(`run ${status}`);
  state.run = null;
  $("send").disabled = false;
  $("cancel").disabled = true;
  if (state.session) loadTurns(state.session);
  loadSessions();
  loadRuns();
}

// ------------------------------------------------------------------ cards: approvals and questions

function removeCard(id) {
  const card = document.querySelector(`[data-card="${CSS.escape(id)}"]`);
  if (card) card.remove();
}

function showCard(ev) {
  const card = el("div", `card ${ev.kind}`);
  card.dataset.card = ev.id;
  const who = ev.task_id ? ` (subagent ${ev.task_id})` : "";
  if (ev.kind === "approval") {
    card.appendChild(el("strong", "", `Approve ${ev.tool}${who}?`));
    if (ev.reason) card.appendChild(el("div", "muted", ev.reason));
    card.appendChild(el("pre", "", ev.arguments));
    if (ev.subjects.length) card.appendChild(el("div", "muted", `subjects: ${ev.subjects.join(", ")}`));
    const row = el("div", "row");
    row.appendChild(button("Approve once", "primary", () => answer(ev, { verdict: "allow_once" }, card)));
    const always = el("input", "pattern");
    always.placeholder = (ev.suggested || []).join(", ") || ev.tool;
    always.title = "What \"Allow always\" adds to the allowlist (for this agent): leave empty for the suggestion, or type a pattern like 'git *'";
    row.appendChild(button("Allow always", "", () => answer(ev, { verdict: "allow_always", pattern: always.value.trim() || null }, card)));
    row.appendChild(always);
    row.appendChild(button("Deny", "danger", () => answer(ev, { verdict: "deny" }, card)));
    card.appendChild(row);
  } else {
    card.appendChild(el("strong", "", `The agent asks${who}:`));
    const pickers = ev.questions.map((question) => questionPicker(card, question));
    const row = el("div", "row");
    row.appendChild(button("Answer", "primary", () => answer(ev, { verdict: "allow_once", answers: pickers.map((p) => p()) }, card)));
    row.appendChild(button("Skip", "", () => answer(ev, { verdict: "deny" }, card)));
    card.appendChild(row);
  }
  $("cards").appendChild(card);
  card.scrollIntoView({ block: "end" });
}

function questionPicker(card, question) {
  card.appendChild(el("div", "", question.header ? `${question.header}: ${question.question}` : question.question));
  const picked = new Set();
  const row = el("div", "row");
  for (const option of question.options || []) {
    const choice = button(option.label, "option", () => {
      if (!question.allow_multiple) { picked.clear(); row.querySelectorAll(".option").forEach((b) => b.classList.remove("picked")); }
      if (picked.has(option.label)) { picked.delete(option.label); choice.classList.remove("picked"); }
      else { picked.add(option.label); choice.classList.add("picked"); }
    });
    if (option.description) choice.title = option.description;
    row.appendChild(choice);
  }
  card.appendChild(row);
  let text = null;
  if (!(question.options || []).length || question.allow_other_text) {
    text = el("input");
    text.placeholder = "Your answer";
    card.appendChild(text);
  }
  return () => {
    const reply = { selected: [...picked] };
    if (text && text.value) reply.other_text = text.value;
    return reply;
  };
}

function button(label, className, onClick) {
  const node = el("button", className, label);
  node.type = "button";
  node.addEventListener("click", onClick);
  return node;
}

async function answer(ev, body, card) {
  card.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  try {
    await api(`/api/runs/${encodeURIComponent(state.run)}/pending/${encodeURIComponent(ev.id)}`, {
      method: "POST", body: JSON.stringify({ ...body, call_id: ev.call_id }),
    });
  } catch (error) {
    card.appendChild(el("div", "error-line", String(error.message)));
    card.querySelectorAll("button").forEach((b) => { b.disabled = false; });
  }
}

// ------------------------------------------------------------------ todos, follow-ups, sessions

function showTodos(todos) {
  const list = $("todos");
  list.replaceChildren(...todos.map((t) => el("li", t.status, t.task)));
  $("todos-box").classList.toggle("hidden", todos.length === 0);
}

function showFollowups(followups) {
  $("followups").replaceChildren(...followups.map((text) => button(text, "", () => send(text))));
}

async function loadSessions() {
  try {
    const data = await api("/api/sessions?limit=50");
    $("sessions").replaceChildren(...data.sessions.map((s) => {
      const item = el("li", s.id === state.session ? "current" : "", s.title || s.id);
      item.title = `${s.id} · ${s.model} · ${s.turns} turns`;
      item.addEventListener("click", () => openSession(s.id));
      return item;
    }));
  } catch (error) { say(String(error.message)); }
}

async function loadRuns() {
  try {
    const data = await api("/api/runs");
    const live = data.runs.filter((r) => r.status === "running" || r.status === "waiting");
    $("runs").replaceChildren(...live.map((r) => {
      const where = r.elsewhere ? " (another server)" : "";
      const item = el("li", r.id === state.run ? "current" : "", `${r.status === "waiting" ? "waits for you" : "running"}${where} · ${r.session_id || r.id}`);
      item.title = r.prompt;
      item.addEventListener("click", () => watchRun(r));
      return item;
    }));
  } catch (error) { say(String(error.message)); }
}

async function watchElsewhere(run) {
  // Another server of this workspace runs it: its cards are answered here (forwarded), its live events are there.
  say("this run runs on another server: answer its cards here; its session shows what it did");
  for (const card of run.pending || []) showCard(card);
  while (state.run === run.id) {
    const now = await api(`/api/runs/${encodeURIComponent(run.id)}`).catch(() => null);
    if (!now || !["running", "waiting"].includes(now.status)) {
      if (state.run === run.id) endRun(now ? now.status : "gone");
      if (now && now.session_id) openSession(now.session_id);
      return;
    }
    const open = new Set(now.pending.map((p) => p.id));
    document.querySelectorAll("#cards [data-card]").forEach((c) => { if (!open.has(c.dataset.card)) c.remove(); });
    for (const card of now.pending) if (!document.querySelector(`[data-card="${CSS.escape(card.id)}"]`)) showCard(card);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function watchRun(run) {
  state.run = run.id;
  state.session = run.session_id;
  state.bubble = null;
  $("session-title").textContent = `Session ${run.session_id || ""}`;
  $("log").replaceChildren();
  $("cards").replaceChildren();
  $("send").disabled = true;
  $("cancel").disabled = false;
  if (run.elsewhere) { if (state.source) state.source.close(); state.source = null; watchElsewhere(run); return; }
  say(run.status === "waiting" ? "waiting for your answer" : "running…");
  follow(run.id);  // the stream starts from the run's first event: its open cards come back too
}

function showMessages(messages) {
  for (const message of messages) {
    for (const block of message.content || []) {
      if (block.type === "text" && block.text) logLine(el("div", `msg ${message.role}`, block.text));
      else if (block.type === "tool_call") logLine(el("div", "tool", `→ ${block.name}(${short(block.arguments, 200)})`));
      else if (block.type === "tool_result") logLine(el("div", block.is_error ? "tool error" : "tool", `${block.is_error ? "✗" : "✓"} ${short(block.content, 300)}`));
    }
  }
}

async function openSession(id) {
  const data = await api(`/api/sessions/${encodeURIComponent(id)}`);
  state.session = id;
  $("session-title").textContent = `Session ${id} — ${data.title}`;
  $("log").replaceChildren();
  $("cards").replaceChildren();
  showMessages(data.messages);
  const notes = await api(`/api/sessions/${encodeURIComponent(id)}/notes`);
  showTodos(notes.todos);
  showFollowups(notes.followups);
  loadTurns(id);
  loadSessions();
}

// ------------------------------------------------------------------ rewind (checkpoints)

async function loadTurns(id) {
  let data;
  try { data = await api(`/api/sessions/${encodeURIComponent(id)}/turns`); } catch (error) { say(String(error.message)); return; }
  if (state.session !== id) return;
  $("rewind-plan").replaceChildren();
  $("turns").replaceChildren(...data.turns.map((t) => {
    const item = el("li", "turn");
    item.dataset.turn = String(t.turn);
    const subagents = t.agents.filter((a) => a !== null);
    let text = t.files.join(", ") || "-";
    if (subagents.length) text += `  (subagents: ${subagents.join(", ")})`;
    if (t.commands_changed.length) text += `\nchanged by commands, not restorable: ${t.commands_changed.join(", ")}`;
    item.append(el("span", "muted", `turn ${t.turn}`), el("span", "files", text));
    const control = button("Rewind", "danger rewind", () => previewRewind(id, t.turn));
    control.title = `Put the files back as they were before turn ${t.turn}`;
    control.disabled = data.running;
    item.appendChild(control);
    return item;
  }));
  $("rewind-box").classList.toggle("hidden", data.turns.length === 0);
}

function fileList(label, items) {
  if (!items.length) return [];
  const list = el("ul");
  list.replaceChildren(...items.map((text) => el("li", "", text)));
  return [el("div", "", label), list];
}

function planNodes(plan) {
  const notes = (list) => list.map((c) => `${c.path}: ${c.reason}`);
  const commandsNote = plan.commands_fully_checked ? "" : " (the look was bounded: there may be more)";
  return [
    ...fileList(plan.done ? "Restored:" : "Would restore:", plan.restored),
    ...fileList(plan.done ? "Removed:" : "Would remove (the agent created them):", plan.removed),
    ...fileList("Already as they were:", plan.unchanged),
    ...fileList(plan.forced ? "Changed since, overwritten:" : "Changed since the agent wrote them (a person's edit?):", notes(plan.conflicts)),
    ...fileList("Earlier content not kept (never restorable):", notes(plan.not_kept)),
    ...fileList(`Changed by commands, not restorable${commandsNote}:`, plan.changed_by_commands),
  ];
}

async function postRewind(id, turn, dryRun, force) {
  return api(`/api/sessions/${encodeURIComponent(id)}/rewind`, {
    method: "POST", body: JSON.stringify({ turn, dry_run: dryRun, force }),
  });
}

async function previewRewind(id, turn) {
  const box = el("div", "plan");
  $("rewind-plan").replaceChildren(box);
  let plan;
  try { plan = await postRewind(id, turn, true, false); } catch (error) { box.appendChild(el("div", "error-line", String(error.message))); return; }
  box.append(el("strong", "", `Rewind session ${id} to before turn ${turn}?`), ...planNodes(plan));
  const row = el("div", "row");
  if (!plan.would_refuse) row.appendChild(button("Confirm rewind", "primary confirm-rewind", () => confirmRewind(id, turn, false, box)));
  else if (!plan.not_kept.length) row.appendChild(button("Overwrite their changes and rewind", "danger force-rewind", () => confirmRewind(id, turn, true, box)));
  row.appendChild(button("Cancel", "", () => $("rewind-plan").replaceChildren()));
  box.appendChild(row);
}

async function confirmRewind(id, turn, force, box) {
  box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  try {
    const done = await postRewind(id, turn, false, force);
    await loadTurns(id);
    const result = el("div", "plan done");
    result.append(el("strong", "", `Rewound to before turn ${done.to_turn}.`), ...planNodes(done));
    $("rewind-plan").replaceChildren(result);
  } catch (error) {
    box.appendChild(el("div", "error-line", String(error.message)));
  }
}

async function send(prompt) {
  if (state.run || !prompt.trim()) return;
  $("followups").replaceChildren();
  $("turns").querySelectorAll("button").forEach((b) => { b.disabled = true; });  // no rewind while a run goes
  logLine(el("div", "msg user", prompt));
  state.bubble = null;
  $("send").disabled = true;
  try {
    const run = await api("/api/runs", { method: "POST", body: JSON.stringify({ prompt, session_id: state.session }) });
    state.run = run.id;
    $("cancel").disabled = false;
    say("running…");
    follow(run.id);
    loadRuns();
  } catch (error) {
    logLine(el("div", "error-line", String(error.message)));
    $("send").disabled = false;
  }
}

// ------------------------------------------------------------------ audit, tasks, schedules

function cells(row, values) {
  const tr = el("tr");
  for (const value of values) tr.appendChild(el("td", "", value === null || value === undefined ? "-" : short(value, 200)));
  return tr;
}

async function loadAudit() {
  const query = new URLSearchParams();
  for (const name of ["since", "tool", "agent", "limit"]) {
    const value = $(`audit-${name}`).value.trim();
    if (value) query.set(name, value);
  }
  try {
    const data = await api(`/api/audit?${query}`);
    $("audit").tBodies[0].replaceChildren(...data.rows.map((r) => cells(r, [r.time, r.agent, r.tool, r.decision, r.approval, r.is_error ? (r.error_type || "error") : "ok", r.args])));
  } catch (error) { say(String(error.message)); }
}

async function loadWork() {
  const note = [];
  try {
    const tasks = await api("/api/tasks?limit=100");
    $("tasks").tBodies[0].replaceChildren(...tasks.rows.map((t) => cells(t, [t.id, t.status, t.kind, t.created, t.prompt])));
  } catch (error) { note.push(`tasks: ${error.message}`); }
  try {
    const jobs = await api("/api/schedules");
    $("schedules").tBodies[0].replaceChildren(...jobs.rows.map((j) => cells(j, [j.id, j.name, j.schedule, j.prompt_preview, j.next_run])));
  } catch (error) { note.push(`schedules: ${error.message}`); }
  $("work-note").textContent = note.join(" · ");
}

function show(view) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === view);
  for (const name of ["chat", "audit", "work"]) $(`view-${name}`).classList.toggle("hidden", name !== view);
  if (view === "audit") loadAudit();
  if (view === "work") loadWork();
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask").addEventListener("submit", (event) => {
    event.preventDefault();
    const prompt = $("prompt").value;
    $("prompt").value = "";
    send(prompt);
  });
  $("prompt").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("ask").requestSubmit(); }
  });
  $("cancel").addEventListener("click", () => { if (state.run) api(`/api/runs/${encodeURIComponent(state.run)}/cancel`, { method: "POST" }).catch((e) => say(e.message)); });
  $("new-session").addEventListener("click", () => {
    state.session = null;
    $("session-title").textContent = "New session";
    $("log").replaceChildren(); $("cards").replaceChildren(); showTodos([]); showFollowups([]);
    $("turns").replaceChildren(); $("rewind-plan").replaceChildren(); $("rewind-box").classList.add("hidden");
    loadSessions();
  });
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.view));
  $("audit-filters").addEventListener("submit", (event) => { event.preventDefault(); loadAudit(); });
  loadSessions();
  loadRuns();
});
