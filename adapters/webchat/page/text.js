// A message's text as the page draws it: file blocks folded, real mentions highlighted, and the
// short form a reply quotes. Loaded before page.js, which draws messages with it.
"use strict";

// A file an agent attached is a block of the text (adapters/webchat/file_blocks.py): a line
// "📎 name", then its content between two equal fences of backticks; it is shown folded.
function withFiles(text, mentioned) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/^📎 (.+)\n(`{3,})\n([\s\S]*?)\n\2$/gmu)) {
    parts.push(...withMentions(text.slice(last, match.index).trimEnd(), mentioned));
    const block = document.createElement("details");
    block.className = "file";
    const name = document.createElement("summary");
    name.textContent = `📎 ${match[1]}`;
    const content = document.createElement("pre");
    content.textContent = match[3];
    block.append(name, content);
    parts.push(block);
    last = match.index + match[0].length;
  }
  parts.push(...withMentions(text.slice(last), mentioned));
  return parts;
}

// Only the names a message really mentions are highlighted: an agent's text may say "@ana"
// without pinging her.
function withMentions(text, mentioned) {
  const names = new Set(mentioned || []);
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/@([a-z0-9][a-z0-9_-]*)/g)) {
    if (!names.has(match[1])) continue;
    parts.push(document.createTextNode(text.slice(last, match.index)));
    parts.push(span("mention", match[0]));
    last = match.index + match[0].length;
  }
  parts.push(document.createTextNode(text.slice(last)));
  return parts;
}

function snippet(m) {
  if (m.deleted) return "a deleted message";
  return m.text.length > 60 ? `${m.text.slice(0, 60)}…` : m.text;
}
