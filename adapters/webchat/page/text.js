// A message's text as the page draws it: file blocks folded, the Markdown models write drawn,
// real mentions highlighted, and the short form a reply quotes. Loaded before page.js, which
// draws messages with it. Text only ever becomes text nodes and elements made here: nothing in
// a message is parsed as HTML.
"use strict";

// A file an agent attached is a block of the text (adapters/webchat/file_blocks.py): a line
// "📎 name", then its content between two equal fences of backticks; it is shown folded.
function withFiles(text, mentioned) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/^📎 (.+)\n(`{3,})\n([\s\S]*?)\n\2$/gmu)) {
    parts.push(...withMarkdown(text.slice(last, match.index).trimEnd(), mentioned));
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
  parts.push(...withMarkdown(text.slice(last), mentioned));
  return parts;
}

// A fenced code block (one still open at the end, as a streamed answer has it, runs to the end).
const FENCED = /^(`{3,}|~{3,})[^\n`]*\n([\s\S]*?)(?:\n\1[ \t]*$|(?![\s\S]))/gm;
// At each place, the first that matches: `code` (or ``code``), **bold**, *italic* or _italic_
// (never inside a word: snake_case and 2*3*4 stay as written), [a link](https://…), a bare
// https:// address. Each tries its own openers only and stops looking for its closer at the next
// opener of its kind (bold text holds no "**"), so no line of marks is read again from each of
// its marks: a message (at most 40,000 characters) draws in time linear in its length.
const INLINE = new RegExp(
  [
    /(?<!`)(`{1,2})(?!`)([^`\n]|[^`\n][^\n]*?[^`\n])\1(?!`)/.source,
    /\*\*(\S(?:(?:(?!\*\*)[^\n])*?\S)?)\*\*/.source,
    /(?<![\w*])\*([^*\s](?:[^*\n]*?[^*\s])?)\*(?![\w*])/.source,
    /(?<![\w_])_([^_\s](?:[^_\n]*?[^_\s])?)_(?![\w_])/.source,
    /\[([^\[\]\n]+)\]\((https?:\/\/[^\s()<>]+)\)/.source,
    /(https?:\/\/[^\s<>]*[^\s<>.,;:!?)\]'"])/.source,
  ].join("|"),
  "g",
);

// Markdown as models write it: fenced blocks and inline code shown as code, bold, italics, and
// links to http(s) addresses only (a `javascript:` link stays text), opened in a new tab.
function withMarkdown(text, mentioned) {
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(FENCED)) {
    // A block stands on its own lines: the line breaks around it are its edges, not text.
    parts.push(...inline(text.slice(last, match.index).replace(/\n$/, ""), mentioned));
    const block = document.createElement("pre");
    block.className = "code";
    const code = document.createElement("code");
    code.textContent = match[2];
    block.append(code);
    parts.push(block);
    last = match.index + match[0].length;
    if (text[last] === "\n") last += 1;
  }
  parts.push(...inline(text.slice(last), mentioned));
  return parts;
}

function inline(text, mentioned) {
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    parts.push(...withMentions(text.slice(last, m.index), mentioned));
    if (m[2] !== undefined) parts.push(element("code", m[2]));
    else if (m[3] !== undefined) parts.push(element("strong", m[3], mentioned));
    else if (m[4] !== undefined || m[5] !== undefined) {
      parts.push(element("em", m[4] ?? m[5], mentioned));
    } else parts.push(link(m[6] ?? m[8], m[7] ?? m[8]));
    last = m.index + m[0].length;
  }
  parts.push(...withMentions(text.slice(last), mentioned));
  return parts;
}

// An element holding `text`, with the names it really mentions highlighted (none in code).
function element(tag, text, mentioned = []) {
  const e = document.createElement(tag);
  e.append(...withMentions(text, mentioned));
  return e;
}

function link(label, url) {
  const a = document.createElement("a");
  a.href = url;
  a.textContent = label;
  a.target = "_blank";
  a.rel = "noopener noreferrer nofollow";
  return a;
}

// Only the names a message really mentions are highlighted, in any case ("@Lead"): an agent's
// text may say "@ana" without pinging her.
function withMentions(text, mentioned) {
  const names = new Set((mentioned || []).map((name) => name.toLowerCase()));
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(/@([a-z0-9][a-z0-9_-]*)/gi)) {
    if (!names.has(match[1].toLowerCase())) continue;
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
