// The c2a web chat page: one websocket to the local server, everything drawn from its messages.
// Text is always inserted as text, never as HTML.
"use strict";

// Every change redraws the place, so only its newest messages are drawn, more on request: a
// place with thousands kept a page busy for most of a second at each redraw of a streamed reply.
const SHOWN = 300;
const state = {
  hello: null,            // roster: humans, agents, roles, channels, dms
  messages: new Map(),    // id -> message
  attention: new Map(),   // message id -> [{agent, directedness, policy, mode, ...}]
  typing: new Map(),      // "user|channel|thread" -> expiry time (ms)
  place: null,            // channel id shown in the main pane
  thread: null,           // root message id of the open thread, or null
  editing: null,          // id of the message being edited
  models: {},             // agent -> {model, where, state, since, log, detail, hint}
  asks: new Map(),        // message id -> {request, choices} of an open question
  shown: SHOWN,           // how many of the place's newest messages are drawn
};
const $ = (id) => document.getElementById(id);
let socket = null;
let lastTyping = 0;
let retryIn = 1000;       // ms until the next reconnect; doubles up to 30 s while refused

function me() { return $("as").value; }

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.onopen = () => { $("status").textContent = "connected"; retryIn = 1000; };
  socket.onclose = () => {
    // The browser does not say why: after c2a run restarts, this page's token is refused and
    // only the new URL it printed opens the chat again.
    $("status").textContent =
      "disconnected — reconnecting… (if c2a run restarted, open the URL it printed)";
    setTimeout(connect, retryIn);
    retryIn = Math.min(retryIn * 2, 30000);
  };
  socket.onmessage = (frame) => receive(JSON.parse(frame.data));
}

function send(op, fields) {
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({ op, as: me(), ...fields }));
  }
}

function receive(body) {
  if (body.op === "hello") {
    state.hello = body;
    state.messages = new Map(body.messages.map((m) => [m.id, m]));
    state.models = body.models || {};
    state.asks = new Map((body.asks || []).map((a) => [a.id, a]));
    setUpRoster();
    drawModels();
    draw();
  } else if (body.op === "message") {
    state.messages.set(body.message.id, body.message);
    draw();
  } else if (body.op === "models") {
    state.models = body.models;
    drawModels();
  } else if (body.op === "ask") {
    if (body.choices.length) state.asks.set(body.id, body); else state.asks.delete(body.id);
    draw();
  } else if (body.op === "forgotten") {
    // The workspace's retention dropped these threads: gone from the page as from its record,
    // and the thread open beside the channel closed if it was one of them.
    for (const id of body.ids) {
      state.messages.delete(id);
      state.attention.delete(id);
    }
    if (state.thread && !state.messages.has(state.thread)) state.thread = null;
    draw();
  } else if (body.op === "attention") {
    state.attention.set(body.id, body.agents);
    draw();
  } else if (body.op === "typing") {
    const key = `${body.user}|${body.channel}|${body.thread || ""}`;
    // A person's typing lasts a few seconds unless repeated; an agent's until it stops.
    const lasts = state.hello && state.hello.agents.includes(body.user) ? 120000 : 6000;
    if (body.on) state.typing.set(key, Date.now() + lasts); else state.typing.delete(key);
    drawTyping();
  } else if (body.op === "error") {
    $("status").textContent = body.text;
    $("status").classList.add("error");
  } else if (body.op === "notice") {
    // A `/c2a` answer: shown to this page alone, never a message; a click puts it away.
    $("notice-text").textContent = body.text;
    $("notice").hidden = false;
  }
}

// ---- the roster and where we are ------------------------------------------------------------

function setUpRoster() {
  const hello = state.hello;
  $("workspace").textContent = hello.workspace;
  const select = $("as");
  const chosen = select.value || localStorage.getItem("c2a-as") || hello.humans[0];
  select.replaceChildren(...hello.humans.map((h) => new Option(h, h)));
  select.value = hello.humans.includes(chosen) ? chosen : hello.humans[0];
  $("agents").replaceChildren(...hello.agents.map((a) => {
    const li = document.createElement("li");
    li.textContent = `@${a}`;
    return li;
  }));
  if (!state.place) state.place = hello.channels[0];
  drawPlaces();
}

function drawPlaces() {
  const hello = state.hello;
  const link = (label, channel) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = "#";
    a.textContent = label;
    a.dataset.channel = channel;
    a.className = channel === state.place ? "current" : "";
    a.onclick = (e) => { e.preventDefault(); go(channel); };
    li.append(a);
    return li;
  };
  $("channels").replaceChildren(...hello.channels.map((c) => link(`# ${c}`, c)));
  const dms = hello.dms[me()] || {};
  $("dms").replaceChildren(...Object.entries(dms).map(([agent, c]) => link(agent, c)));
}

function go(channel) {
  state.place = channel;
  state.thread = null;
  state.shown = SHOWN;
  drawPlaces();
  draw();
}

function placeName(channel) {
  if (!channel.startsWith("dm:")) return `# ${channel}`;
  return `DM with ${channel.split(":")[2]}`;
}

// ---- which model answers each agent ----------------------------------------------------------

// One line per model (agents on the same model share it): its name, where it runs, whether it
// is ready, and the one step to another model. Model names come from a model server: text only.
function drawModels() {
  const groups = new Map();
  for (const [agent, m] of Object.entries(state.models)) {
    const key = JSON.stringify([m.model, m.where, m.state, m.detail, m.hint]);
    if (!groups.has(key)) groups.set(key, { agents: [], m });
    groups.get(key).agents.push(agent);
  }
  const lines = [...groups.values()].map(({ agents, m }) => {
    const line = document.createElement("p");
    line.className = "model";
    line.dataset.state = m.state;
    line.append(span("agents", agents.join(", ")), `: ${m.model} (${m.where})`);
    if (m.state === "building") {
      line.append(" — ", span("state-building",
        `the model is being built/loaded (${minutesSince(m.since)} min so far); ` +
        "agents will answer when it is ready"));
    } else if (m.state === "failed") {
      line.append(" — ", span("state-failed", `the model cannot run: ${m.detail}`));
    } else if (m.state === "down" || m.state === "none") {
      line.append(" — ", span("state-failed", m.detail));
    }
    if (m.hint) line.append(` · ${m.hint}`);
    return line;
  });
  $("models").replaceChildren(...lines);
  $("models").hidden = lines.length === 0;
}

function minutesSince(since) {
  return since ? Math.max(0, Math.floor((Date.now() / 1000 - since) / 60)) : 0;
}

setInterval(drawModels, 15000);  // the minutes go on while a build runs

// ---- drawing messages ----------------------------------------------------------------------

function draw() {
  if (!state.hello) return;
  $("place-name").textContent = placeName(state.place);
  const all = [...state.messages.values()];
  const top = all.filter((m) => m.channel === state.place && !m.thread);
  const earlier = Math.max(0, top.length - state.shown);
  fill($("messages"), top.slice(earlier), all);
  if (earlier) $("messages").prepend(showEarlier(earlier));
  const open = state.thread && state.messages.get(state.thread);
  $("thread").hidden = !open;
  if (open) {
    const replies = all.filter((m) => m.thread === state.thread);
    fill($("thread-messages"), [open, ...replies], all);
  }
  drawTyping();
}

function showEarlier(count) {
  const li = document.createElement("li");
  li.className = "earlier";
  const more = Math.min(count, SHOWN);
  li.append(button(`Show ${more} earlier messages (${count} not shown)`, () => {
    state.shown += SHOWN;
    draw();
  }));
  return li;
}

function fill(list, shown, all) {
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren(...shown.map((m) => drawMessage(m, all)));
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function drawMessage(m, all) {
  const agents = state.hello.agents;
  const li = document.createElement("li");
  li.className = "msg";
  li.dataset.id = m.id;
  li.dataset.user = m.user;
  li.dataset.replyTo = m.replyTo || "";
  if (agents.includes(m.user)) li.classList.add("from-agent");
  if (m.deleted) li.classList.add("deleted");

  const head = document.createElement("div");
  head.append(span("who", m.user), span("when", new Date(m.ts).toLocaleTimeString()));
  if (m.edited && !m.deleted) head.append(span("edited", "(edited)"));
  head.append(actions(m));
  li.append(head);

  if (m.replyTo && state.messages.has(m.replyTo)) {
    const answered = state.messages.get(m.replyTo);
    li.append(span("replying", `↪ replying to ${answered.user}: ${snippet(answered)}`));
  }
  const body = document.createElement("div");
  body.className = "body";
  if (state.editing === m.id) body.append(editBox(m));
  else if (m.deleted) body.textContent = "message deleted";
  else body.append(...withFiles(m.text, m.mentions));
  li.append(body);

  const asked = state.asks.get(m.id);
  if (asked && !m.deleted) li.append(choices(asked));
  li.append(reactions(m));
  const replies = all.filter((r) => r.thread === m.id).length;
  if (!m.thread && replies) {
    const b = button(`${replies} repl${replies === 1 ? "y" : "ies"}`, () => openThread(m.id));
    b.className = "thread-link";
    li.append(b);
  }
  const chips = state.attention.get(m.id);
  if (chips && chips.length) li.append(attention(chips, m.deleted));
  return li;
}

function actions(m) {
  const box = document.createElement("span");
  box.className = "actions";
  if (m.deleted) return box;
  if (!m.thread) box.append(button("Reply in thread", () => openThread(m.id), "reply-thread"));
  for (const emoji of ["👍", "✅", "👀", "❓", "🛑"]) {
    box.append(button(emoji, () => toggleReaction(m, emoji), "react"));
  }
  if (m.user === me()) {
    box.append(button("Edit", () => { state.editing = m.id; draw(); }, "edit"));
    box.append(button("Delete", () => send("delete", { id: m.id }), "delete"));
  }
  return box;
}

// An open question's buttons; a press goes to POST /approve as the person chosen above, and
// a refusal is shown where errors are.
function choices(asked) {
  const box = document.createElement("div");
  box.className = "choices";
  for (const c of asked.choices) {
    const b = button(c.label, () => press(asked.request, c.id), c.allow ? "allow" : "refuse");
    box.append(b);
  }
  return box;
}

async function press(request, choice) {
  const answer = await fetch("/approve", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ as: me(), request, choice }),
  });
  if (!answer.ok) {
    const body = await answer.json().catch(() => ({}));
    $("status").textContent = body.refused || `refused (${answer.status})`;
    $("status").classList.add("error");
  }
}

function editBox(m) {
  const form = document.createElement("form");
  const text = document.createElement("textarea");
  text.className = "edit-box";
  text.maxLength = 65536;  // the host's limit (adapters/limits.py MAX_TEXT)
  text.value = m.text;
  form.append(text, button("Save", null, "save"), button("Cancel", () => {
    state.editing = null; draw();
  }, "cancel"));
  form.onsubmit = (e) => {
    e.preventDefault();
    if (text.value.trim()) send("edit", { id: m.id, text: text.value.trim() });
    state.editing = null;
    draw();
  };
  setTimeout(() => text.focus(), 0);
  return form;
}

function reactions(m) {
  const box = document.createElement("div");
  box.className = "reactions";
  for (const [emoji, users] of Object.entries(m.reactions)) {
    const chip = button(`${emoji} ${users.length}`, () => toggleReaction(m, emoji), "reaction");
    chip.dataset.emoji = emoji;
    chip.title = users.join(", ");
    if (users.includes(me())) chip.classList.add("mine");
    box.append(chip);
  }
  return box;
}

function attention(chips, deleted) {
  const box = document.createElement("div");
  box.className = "attention";
  for (const c of chips) {
    const chip = document.createElement("span");
    chip.className = "chip";
    for (const key of ["agent", "directedness", "policy", "mode", "status", "disposition"]) {
      chip.dataset[key] = c[key] || "";
    }
    chip.title = `reason: ${c.reason}${c.claimedBy ? `; claimed by ${c.claimedBy}` : ""}`;
    chip.dataset.claim = c.holdsClaim ? "held" : "";
    const name = document.createElement("b");
    name.textContent = c.holdsClaim ? `✋ ${c.agent}` : c.agent;
    chip.append(name, ` · ${c.directedness} · ${c.policy} · ${c.mode}`);
    if (c.disposition) chip.append(" → ", span("disp", c.disposition));
    else if (deleted || c.status === "cancelled") chip.append(" → ", span("disp", "cancelled"));
    box.append(chip);
  }
  return box;
}

function toggleReaction(m, emoji) {
  const mine = (m.reactions[emoji] || []).includes(me());
  send(mine ? "unreact" : "react", { id: m.id, emoji });
}

function openThread(id) {
  state.thread = id;
  draw();
  $("thread-text").focus();
}

function span(cls, text) {
  const s = document.createElement("span");
  s.className = cls;
  s.textContent = text;
  return s;
}

function button(label, onclick, cls) {
  const b = document.createElement("button");
  b.type = onclick ? "button" : "submit";
  b.textContent = label;
  if (cls) b.dataset.action = cls;
  if (onclick) b.onclick = onclick;
  return b;
}

// ---- typing, both ways --------------------------------------------------------------------

function drawTyping() {
  const now = Date.now();
  const who = (channel, thread) => [...state.typing.entries()]
    .filter(([key, until]) => {
      const [user, c, t] = key.split("|");
      return until > now && user !== me() && c === channel && t === (thread || "");
    })
    .map(([key]) => key.split("|")[0]);
  const line = (names) => (names.length ? `${names.join(", ")} ${names.length > 1 ? "are" : "is"} typing…` : "");
  $("typing").textContent = line(who(state.place, null));
  $("thread-typing").textContent = state.thread
    ? line(who(state.messages.get(state.thread).channel, state.thread)) : "";
}

function typed(channel, thread) {
  const now = Date.now();
  if (now - lastTyping > 3000) {
    lastTyping = now;
    send("typing", { channel, thread });
  }
}

function composer(form, text, where) {
  text.addEventListener("input", () => { const [c, t] = where(); typed(c, t); });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });
  form.onsubmit = (e) => {
    e.preventDefault();
    const body = text.value.trim();
    if (!body) return;
    const [channel, thread] = where();
    send("post", { channel, thread, text: body });
    text.value = "";
    lastTyping = 0;
  };
}

composer($("composer"), $("composer-text"), () => [state.place, null]);
composer($("thread-composer"), $("thread-text"),
  () => [state.messages.get(state.thread).channel, state.thread]);
$("thread-close").onclick = () => { state.thread = null; draw(); };
$("as").onchange = () => { localStorage.setItem("c2a-as", me()); go(state.place.startsWith("dm:") ? state.hello.channels[0] : state.place); };
$("main").insertBefore($("legend").content.cloneNode(true), $("messages"));
setInterval(drawTyping, 1000);
connect();
$("notice").addEventListener("click", () => { $("notice").hidden = true; });
