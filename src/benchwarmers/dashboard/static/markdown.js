// Markdown as DOM nodes, for model answers: our own small renderer.
//
// A model's text is never parsed as HTML: every piece of it becomes a text
// node inside elements this file creates, so `<script>` or `<img onerror>`
// in an answer shows as those characters. What it knows: ATX headings,
// paragraphs, bullet and numbered lists (nested by indentation), block
// quotes (lists and quotes 32 deep at most; deeper is their text), rules,
// pipe tables (64 columns at most), code fences (with a copy button; an unclosed
// fence, as a stream leaves it, is code so far), code indented four spaces
// (or a tab) after a blank line, task items (`- [ ]`, `- [x]` as ☐ and ☑,
// text, not inputs), and inline code, **strong**, *emphasis*,
// ~~strike~~ (links and emphasis nest 32 deep: deeper is their text),
// [links](https://...) and <https://...>. A link is a link only
// when its scheme is http, https or mailto; any other shows as its text. An
// image (`![alt](https://...)`) is never loaded: it is a link "image: alt".
// Entities (`&lt;`, `&amp;`, `&#39;`, `&#x27;`, any HTML5 name) show as the
// character they name, as text (`&lt;b&gt;` is the characters `<b>`, never
// an element); in code they stay as written, and an unknown name is left
// alone (CommonMark). In code, a character that shows nothing or turns the
// text around (U+202E, U+200B...) is shown as a mark naming it. No input makes
// it throw or take time squared in its length (tests/dashboard/test_browser_hostile.py).
//
//   bw.markdown(text) -> DocumentFragment
//   bw.answer(text, writing, before) -> DocumentFragment: a leading think block folded, the rest markdown
//   bw.reasoning(text) -> {reasoning, answer, closed}; bw.thinking(text) -> still inside the block
(() => {
  'use strict';

  const SAFE_LINK = /^(https?:\/\/|mailto:)/i;
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const QUOTE = /^ {0,3}> ?/;
  const TASK = /^\[([ xX])\][ \t]+/;
  const ITEM = /^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$/;
  const TABLE_ROW = /^ {0,3}\|.*\|\s*$/;
  const TABLE_RULE = /^ {0,3}\|(?:\s*:?-+:?\s*\|)+\s*$/;
  const ESCAPABLE = '\\`*_{}[]()#+-.!~<>|"\'&';
  // An entity: decimal (1-7 digits), hex (1-6) or a name (the longest HTML5 one is 31).
  const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));/y;
  const ENTITIES = new RegExp(ENTITY.source, 'g'); // every one in a text (a link's destination)

  // A child may be a list of nodes, appended one by one: spread into a call
  // (`append(...nodes)`), an answer's 200,000 lines or links overflowed the
  // stack, and the seat showed nothing.
  function node(tag, className, ...children) {
    const made = document.createElement(tag);
    if (className) made.className = className;
    for (const child of children) {
      if (Array.isArray(child)) for (const one of child) made.append(one);
      else made.append(child);
    }
    return made;
  }

  // Characters that show nothing or turn the text around: bidi controls (U+202E
  // draws `evil() //⁦ safe` as something else), zero-width spaces, the BOM. In
  // code, where what is read is what is copied and run ("Trojan Source"), each
  // is shown as a mark naming it; a code block's Copy still gives the code as written.
  const HIDDEN = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

  function codeText(code) {
    const out = [];
    let at = 0;
    for (const found of code.matchAll(HIDDEN)) {
      if (found.index > at) out.push(code.slice(at, found.index));
      const name = `U+${found[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
      const mark = node('span', 'hidden-char', `⟨${name}⟩`);
      mark.title = `${name}: a character that shows nothing or turns text around, here in the code`;
      out.push(mark);
      at = found.index + 1;
    }
    if (at < code.length || !out.length) out.push(code.slice(at));
    return out;
  }

  function codeBlock(code, language) {
    const copy = node('button', 'small copy', 'Copy');
    copy.type = 'button';
    copy.dataset.copyCode = '';
    copy.code = code; // what Copy gives: the code as written, not its marks (judge.js)
    copy.setAttribute('aria-label', language ? `Copy the ${language} code` : 'Copy the code');
    const bar = node('div', 'code-bar', node('span', 'code-lang', language || 'code'), copy);
    const body = node('code', language ? `language-${language.replace(/[^\w+-]/g, '')}` : '', codeText(code));
    return node('div', 'code-block', bar, node('pre', '', body));
  }

  // ------------------------------------------------------------- blocks

  // Lists and quotes nest by drawing their lines as blocks again. A model
  // caught in a loop writes `- - - - …` or `> > > …` thousands deep, which
  // overflowed the stack and stopped the page: deeper than this, the rest is
  // its text as written.
  const DEEPEST = 32;
  // A table of 200,000 columns took the browser 97 s to lay out: wider than
  // this, its lines are text.
  const WIDEST = 64;

  function blocks(lines, depth = 0) {
    if (depth > DEEPEST) return [node('p', '', lines.join('\n'))];
    const out = [];
    let i = 0;
    let paragraph = [];
    const flush = () => {
      if (paragraph.length) out.push(node('p', '', inline(paragraph.join('\n').trim())));
      paragraph = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      let match;
      if (!line.trim()) { flush(); i += 1; continue; }
      if (!paragraph.length && columns(line) >= 4) { // indented code (in a paragraph: its next line)
        const code = [];
        while (i < lines.length && (!lines[i].trim() || columns(lines[i]) >= 4)) {
          code.push(untab(lines[i]).slice(4));
          i += 1;
        }
        while (!code[code.length - 1].trim()) code.pop();
        out.push(codeBlock(code.join('\n'), ''));
        continue;
      }
      if ((match = FENCE.exec(line))) {
        flush();
        const marker = match[1];
        const body = [];
        i += 1;
        while (i < lines.length && !closes(lines[i], marker)) {
          body.push(lines[i]);
          i += 1;
        }
        i += 1; // the closing fence (or past the end, in a stream)
        out.push(codeBlock(body.join('\n'), match[2]));
        continue;
      }
      if ((match = HEADING.exec(line))) {
        flush();
        const level = match[1].length;
        out.push(node(`h${Math.min(level + 2, 6)}`, `md-h${level}`, inline(match[2] || '')));
        i += 1;
        continue;
      }
      if (RULE.test(line) && !(paragraph.length && /^ {0,3}-+\s*$/.test(line))) {
        flush();
        out.push(node('hr', ''));
        i += 1;
        continue;
      }
      if (TABLE_ROW.test(line) && TABLE_RULE.test(lines[i + 1] || '') && cells(lines[i + 1]).length <= WIDEST) {
        flush();
        i = table(lines, i, out);
        continue;
      }
      if (QUOTE.test(line)) {
        flush();
        const quoted = [];
        while (i < lines.length && QUOTE.test(lines[i])) { quoted.push(lines[i].replace(QUOTE, '')); i += 1; }
        out.push(node('blockquote', '', blocks(quoted, depth + 1)));
        continue;
      }
      if ((match = ITEM.exec(line)) && (!paragraph.length || match[3])) {
        flush();
        i = list(lines, i, out, depth);
        continue;
      }
      paragraph.push(line);
      i += 1;
    }
    flush();
    return out;
  }

  // One list from line `start`: its items at the first item's indentation,
  // each item's own lines (indented further, blank lines between) rendered
  // as blocks of their own (one level deeper than `depth`), so lists nest.
  // Returns the line after it.
  function list(lines, start, out, depth) {
    const first = ITEM.exec(lines[start]);
    const indent = first[1].length;
    const ordered = /\d/.test(first[2]);
    const made = node(ordered ? 'ol' : 'ul', 'md-list');
    if (ordered && parseInt(first[2], 10) !== 1) made.start = parseInt(first[2], 10);
    let i = start;
    let loose = false;
    const items = [];
    while (i < lines.length) {
      // Blank lines between two items of this list keep it one (loose) list:
      // "1. a", "", "2. b" is one <ol> of two items, as models often write it.
      let at = i;
      while (at < lines.length && !lines[at].trim()) at += 1;
      const match = ITEM.exec(lines[at] || '');
      if (!match || match[1].length !== indent || /\d/.test(match[2]) !== ordered) break;
      if (at > i) loose = true;
      i = at;
      const offset = match[1].length + match[2].length + 1;
      const body = [(match[3] || '').replace(TASK, (_, done) => (done === ' ' ? '☐ ' : '☑ '))];
      i += 1;
      while (i < lines.length) {
        const line = lines[i];
        if (!line.trim()) { // blank lines: the item goes on if the next line that is not is indented
          let next = i + 1;
          while (next < lines.length && !lines[next].trim()) next += 1;
          if (next === lines.length || leading(lines[next]) <= indent) break;
          for (; i < next; i += 1) body.push('');
          loose = true;
          continue;
        }
        if (leading(line) > indent) { body.push(line.slice(Math.min(offset, leading(line)))); i += 1; continue; }
        if (ITEM.test(line) || FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || body[body.length - 1] === '') break;
        body.push(line); // a lazy continuation of the item's paragraph
        i += 1;
      }
      items.push(body);
    }
    for (const body of items) {
      const rendered = blocks(body, depth + 1);
      const li = node('li', '', !loose && rendered[0]?.tagName === 'P' ? [...rendered.shift().childNodes] : [], rendered);
      made.append(li);
    }
    out.push(made);
    return i;
  }

  // A pipe table (`| a | b |`, then `|---|:-:|`, then rows): its cells are inline
  // markdown, aligned as the rule line says. Returns the line after it.
  function table(lines, start, out) {
    const align = cells(lines[start + 1]).map((c) => (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : ''));
    // A row has the rule's columns, no more (GFM drops the rest).
    const row = (line, tag) => node('tr', '', cells(line).slice(0, align.length).map((text, index) => {
      const cell = node(tag, '', inline(text));
      if (align[index]) cell.setAttribute('align', align[index]);
      return cell;
    }));
    const body = node('tbody', '');
    let i = start + 2;
    while (i < lines.length && TABLE_ROW.test(lines[i])) { body.append(row(lines[i], 'td')); i += 1; }
    out.push(node('div', 'table-wrap', node('table', 'md-table', node('thead', '', row(lines[start], 'th')), body)));
    return i;
  }

  // A table row's cells, trimmed.
  function cells(line) {
    return line.trim().replace(/^\|/, '').replace(/\|$/, '').split(/(?<!\\)\|/).map((c) => c.trim());
  }

  // A fence closes on a line of only its own character, at least as many.
  function closes(line, marker) {
    const bare = line.trim();
    return bare.length >= marker.length && bare === marker[0].repeat(bare.length);
  }

  // A line's indentation in columns, a tab to the next multiple of four; the line so expanded.
  function untab(line) {
    return line.replace(/^[ \t]+/, (space) => space.replace(/ {0,3}\t/g, '    '));
  }

  function columns(line) {
    return leading(untab(line));
  }

  function leading(line) {
    return line.length - line.trimStart().length;
  }

  // ------------------------------------------------------------- inline

  const PAIRS = [
    ['**', 'strong'], ['__', 'strong'], ['~~', 'del'], ['*', 'em'], ['_', 'em'],
  ];

  // A link's label and an emphasis' inside are drawn as inline markdown again:
  // `[*[*[*…*](u)*](u)*](u)` ten thousand deep crashed the tab. Deeper than
  // DEEPEST, the rest is its text as written, as blocks' is.
  function inline(text, depth = 0) {
    if (depth > DEEPEST) return [document.createTextNode(text)];
    const out = [];
    const seen = { brackets: null, runs: null, noCloser: {} }; // what one pass over `text` found, for every opener after
    let plain = '';
    const push = (made) => { if (plain) out.push(document.createTextNode(plain)); plain = ''; out.push(made); };
    let i = 0;
    while (i < text.length) {
      const ch = text[i];
      if (ch === '\\' && i + 1 < text.length && ESCAPABLE.includes(text[i + 1])) { plain += text[i + 1]; i += 2; continue; }
      if (ch === '\\' && text[i + 1] === '\n') { push(node('br', '')); i += 2; continue; }
      if (ch === '&') {
        ENTITY.lastIndex = i;
        const found = ENTITY.exec(text);
        const character = found && entity(found);
        if (character !== null) { plain += character; i += found[0].length; continue; }
      }
      if (ch === '`') {
        const run = /^`+/.exec(text.slice(i))[0];
        const close = closingRun(text, run.length, i + run.length, seen);
        if (close >= 0) {
          let code = text.slice(i + run.length, close).replace(/\n/g, ' ');
          if (/^ .* $/.test(code)) code = code.slice(1, -1);
          push(node('code', '', codeText(code)));
          i = close + run.length;
          continue;
        }
        plain += run;
        i += run.length;
        continue;
      }
      if (ch === '!' && text[i + 1] === '[') {
        // An image is never loaded (nothing a model wrote fetches anything): a
        // safe one is a link to it, named by its alt text; else its characters.
        const link = readLink(text, i + 1, seen);
        if (link) {
          const url = entities(link.url);
          if (SAFE_LINK.test(url)) {
            const a = node('a', 'md-image', `image: ${link.label || url}`);
            a.setAttribute('href', url);
            a.rel = 'noopener noreferrer nofollow';
            a.target = '_blank';
            push(a);
          } else {
            plain += text.slice(i, link.end);
          }
          i = link.end;
          continue;
        }
      }
      if (ch === '[') {
        const link = readLink(text, i, seen);
        if (link) {
          const url = entities(link.url); // checked as the browser will read it: `javascript&#58;` is not safe
          if (SAFE_LINK.test(url)) {
            const a = node('a', '', inline(link.label, depth + 1));
            a.setAttribute('href', url);
            a.rel = 'noopener noreferrer nofollow';
            a.target = '_blank';
            push(a);
          } else {
            plain += text.slice(i, link.end); // an unsafe scheme: the characters, as written
          }
          i = link.end;
          continue;
        }
      }
      if (ch === '<') {
        const auto = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(text.slice(i));
        if (auto) {
          const a = node('a', '', auto[1]);
          a.setAttribute('href', auto[1]);
          a.rel = 'noopener noreferrer nofollow';
          a.target = '_blank';
          push(a);
          i += auto[0].length;
          continue;
        }
      }
      if (ch === '*' || ch === '_' || ch === '~') {
        const span = readEmphasis(text, i, seen.noCloser);
        if (span) { push(node(span.tag, '', inline(span.inner, depth + 1))); i = span.end; continue; }
      }
      // Two spaces before a line's end: a line break. Read in `text`, not `plain`: asking the text
      // so far (a string built a character at a time) copied it whole at every line, so a
      // 200,000-line paragraph took minutes. The spaces went into `plain` as they are.
      if (ch === '\n' && text[i - 1] === ' ' && text[i - 2] === ' ') { plain = plain.trimEnd(); push(node('br', '')); i += 1; continue; }
      plain += ch;
      i += 1;
    }
    if (plain) out.push(document.createTextNode(plain));
    return out;
  }

  // The character(s) an entity match stands for, or null for an unknown name.
  // A number out of Unicode's range, a surrogate or 0 is U+FFFD (CommonMark).
  // A name is looked up by the browser's own table (every HTML5 entity), in
  // a detached <textarea>: its content is text to the parser (no element can
  // come of it), and what goes in is `&`, letters and digits, and `;`.
  const NAMED = new Map();
  let decoder = null;
  function entity(found) {
    if (found[1] !== undefined || found[2] !== undefined) {
      const code = found[1] !== undefined ? parseInt(found[1], 10) : parseInt(found[2], 16);
      const valid = code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff);
      return String.fromCodePoint(valid ? code : 0xfffd);
    }
    if (!NAMED.has(found[3])) lookUp([found[3]]);
    return NAMED.get(found[3]);
  }

  // Names not looked up yet, all in one parse: one each, an answer of 200,000 made-up
  // names (`&q1; &q2; …`) took 5 s a draw. Between two names, a private-use character,
  // which no entity stands for. Unknown: left as written. A longer name after a legacy
  // one (`&ampx;`) the parser reads as that one and the rest (`&x;`): no entity is over
  // two characters. Past 20,000 names (an answer's made-up ones), the table starts again
  // before the next answer is drawn.
  const BETWEEN = '\ue000';
  function lookUp(names) {
    if (!names.length) return;
    decoder = decoder || document.createElement('textarea');
    decoder.innerHTML = names.map((name) => `&${name};`).join(BETWEEN);
    const decoded = decoder.value.split(BETWEEN);
    names.forEach((name, index) => {
      const it = decoded[index];
      NAMED.set(name, it !== `&${name};` && [...it].length <= 2 ? it : null);
    });
  }

  // Every name in `text` not looked up yet, looked up at once.
  function lookUpAll(text) {
    if (NAMED.size > 20000) NAMED.clear();
    const names = new Set();
    for (const found of text.matchAll(ENTITIES)) if (found[3] !== undefined && !NAMED.has(found[3])) names.add(found[3]);
    lookUp([...names]);
  }

  // `text` with its entities decoded (a link's destination).
  function entities(text) {
    return text.replace(ENTITIES, (...found) => entity(found) ?? found[0]);
  }

  // Where a run of exactly `length` backticks starts at or after `from` (-1 if none), `from`
  // being just past an opening run. Every run of `text` is found in one pass, then looked up:
  // scanning on from each opener took time squared in the runs when none of them closed
  // (a run of 1, of 2, ... of 1,500 backticks: seconds a frame).
  function closingRun(text, length, from, seen) {
    seen.runs = seen.runs || backtickRuns(text);
    const starts = seen.runs.get(length) || [];
    let low = 0;
    let high = starts.length;
    while (low < high) { // the first start at or after `from`
      const middle = (low + high) >> 1;
      if (starts[middle] < from) low = middle + 1;
      else high = middle;
    }
    return low < starts.length ? starts[low] : -1;
  }

  // Each length of backtick run in `text` -> where the runs of it start, in order.
  function backtickRuns(text) {
    const runs = new Map();
    for (let j = text.indexOf('`'); j >= 0; j = text.indexOf('`', j)) {
      let k = j;
      while (text[k] === '`') k += 1;
      if (!runs.has(k - j)) runs.set(k - j, []);
      runs.get(k - j).push(j);
      j = k;
    }
    return runs;
  }

  // The `]` closing each `[` of `text` (nested ones counted, a backslash
  // skipping the character after it), found in one pass: scanning on from
  // every `[` instead took time squared in the text's brackets.
  function bracketPairs(text) {
    const pairs = new Map();
    const open = [];
    for (let j = 0; j < text.length; j += 1) {
      if (text[j] === '\\') { j += 1; continue; }
      if (text[j] === '[') open.push(j);
      else if (text[j] === ']' && open.length) pairs.set(open.pop(), j);
    }
    return pairs;
  }

  function readLink(text, start, seen) {
    seen.brackets = seen.brackets || bracketPairs(text);
    const j = seen.brackets.get(start);
    if (j === undefined || text[j + 1] !== '(') return null;
    const target = /^\(\s*<?([^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)>?(?:\s+"[^"]*")?\s*\)/.exec(text.slice(j + 1));
    if (!target) return null;
    return { label: text.slice(start + 1, j), url: target[1], end: j + 1 + target[0].length };
  }

  // `noCloser[marker]`: a start from which no closing `marker` was found.
  // Whether a marker closes depends on it alone, not on where the span
  // began, so no later start finds one either and is not scanned again.
  function readEmphasis(text, start, noCloser) {
    for (const [marker, tag] of PAIRS) {
      if (!text.startsWith(marker, start)) continue;
      if (noCloser[marker] !== undefined && start >= noCloser[marker]) continue;
      const after = text[start + marker.length];
      if (!after || /\s/.test(after)) continue;
      // `_` inside a word (snake_case) is not emphasis.
      if (marker[0] === '_' && start > 0 && /\w/.test(text[start - 1])) continue;
      if (marker === '~~' || marker.length === 2 || text[start + 1] !== marker) {
        let j = start + marker.length + 1;
        while ((j = text.indexOf(marker, j)) >= 0) {
          const before = text[j - 1];
          const next = text[j + marker.length];
          const doubled = marker.length === 1 && (next === marker || before === marker);
          const wordy = marker[0] === '_' && next && /\w/.test(next);
          if (!/\s/.test(before) && !doubled && !wordy) {
            return { tag, inner: text.slice(start + marker.length, j), end: j + marker.length };
          }
          j += 1;
        }
        noCloser[marker] = start;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------- API

  function markdown(text) {
    const fragment = document.createDocumentFragment();
    lookUpAll(String(text));
    for (const made of blocks(String(text).replace(/\r\n?/g, '\n').split('\n'))) fragment.append(made);
    return fragment;
  }

  // ---------------------------------------------------------- reasoning

  // A reasoning model's leading think block (DeepSeek-R1, QwQ through Ollama; some free tiers),
  // told from its answer by the rules of src/benchwarmers/reasoning.py, on purpose the same:
  // `<think>` or `<thinking>` (any case) after nothing but whitespace, ended by its own closing
  // tag; or, the opening left to the chat template, a `</think>` with no opening tag before it
  // and no backtick just before it. A `<think>` anywhere else is the answer's own text.
  const OPENING = /^[\s\ufeff]*<(think|thinking)>/i;
  const CLOSING = /<\/(think|thinking)>/i;
  const ANY_OPENING = /<(?:think|thinking)>/i;

  // {reasoning (null: no block), answer, closed (false: the text stopped inside the block)}.
  function reasoning(text) {
    text = String(text);
    const opening = OPENING.exec(text);
    if (opening) {
      const rest = text.slice(opening[0].length);
      const closing = new RegExp(`</${opening[1]}>`, 'i').exec(rest);
      if (!closing) return { reasoning: rest.trim(), answer: '', closed: false };
      return { reasoning: rest.slice(0, closing.index).trim(), answer: rest.slice(closing.index + closing[0].length).trimStart(), closed: true };
    }
    const closing = CLOSING.exec(text);
    const before = closing ? text.slice(0, closing.index) : '';
    if (!closing || before.endsWith('`') || ANY_OPENING.test(before)) return { reasoning: null, answer: text, closed: true };
    return { reasoning: before.trim(), answer: text.slice(closing.index + closing[0].length).trimStart(), closed: true };
  }

  // Whether a text still being written is inside its leading think block: unclosed, or so far
  // no more than the start of an opening tag (`<thi`), which is not shown as the answer either.
  function thinking(text) {
    const start = String(text).trimStart().slice(0, 11).toLowerCase();
    if (start && ('<thinking>'.startsWith(start) || '<think>'.startsWith(start))) return true;
    return reasoning(text).closed === false;
  }

  // An answer as people read it: a leading think block folded in a closed "Reasoning"
  // disclosure (its text as text, its length in characters), the answer after it as markdown.
  // `writing`: the text is still coming (inside the block: thinking, no answer yet). `before`:
  // the element the answer was drawn in last, whose disclosure stays as it was left (opened
  // to read the reasoning as it grows, it stays open through the redraws).
  function answer(text, writing = false, before = null) {
    const part = reasoning(text);
    const thinks = writing && thinking(text);
    if (part.reasoning === null && !thinks) return markdown(text);
    const fragment = document.createDocumentFragment();
    const said = part.reasoning || '';
    const length = `${said.length.toLocaleString('en')} character${said.length === 1 ? '' : 's'}`;
    const state = thinks ? ', still thinking…' : part.closed ? '' : ', cut before it ended';
    const box = node('details', 'reasoning', node('summary', '', `Reasoning · ${length}${state}`), node('div', 'reasoning-text', said));
    box.open = Boolean(before?.querySelector(':scope > details.reasoning')?.open);
    fragment.append(box);
    if (part.answer) fragment.append(markdown(part.answer));
    else if (!thinks) fragment.append(node('p', 'hint', part.closed ? 'no answer after its reasoning' : 'stopped before it answered'));
    return fragment;
  }

  window.bw = Object.assign(window.bw || {}, { markdown, reasoning, thinking, answer });
})();
