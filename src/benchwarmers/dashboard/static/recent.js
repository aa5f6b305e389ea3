// Collections: Recent asks, polled from /ui/api/asks, each drawn by
// judge.js as the Ask page draws a panel, so a verdict (or a pair) can be
// given later, in place. The log keeps no text unless the collection keeps
// it (`keep_text`): then the question and the answers are shown too.
// The poll redraws the first page only, and only when it changed (its ETag
// sent back: an unchanged page is a 304 with no body, however much kept text
// it holds); "Older asks" pages back (the API's `next` cursor) into a list
// of its own, judged in place alike and read again as the first page is
// (its own ETag), so what was judged elsewhere shows there too.
// The lists are read with each kept text cut to its head (`head`, the whole
// length said beside it): asks whose answers run to megabytes draw in a
// moment. A cut answer says so, with a button that opens the ask: read
// whole (`/ui/api/asks/<ask>`), drawn again in place and kept whole across
// the polls' redraws, judged there as any ask is.
(() => {
  'use strict';

  const { api, el, readable } = window.bw;
  const box = document.getElementById('asks');
  if (!box) return;
  const olderBox = document.getElementById('older-asks');
  const olderButton = document.getElementById('older');
  const olderState = document.getElementById('older-state');
  // Characters of each kept text the lists carry: most answers whole (a long one is some 4k
  // tokens), a runaway's or a pasted document's cut; an ask opened is read whole.
  const HEAD = 16000;
  const asksUrl = (query = '') => `/ui/api/asks?head=${HEAD}${query}`;
  const whole = new Map(); // ask id -> the ask read whole, once opened: its text never changes

  let last = '';
  let tag = ''; // the ETag of the first page drawn: a poll of an unchanged page is a 304, no body
  let firstNext = null; // the first page's `next`: where the older asks shown begin
  let timer = null;
  let next = null; // the cursor of the page after those shown: the first page's, then the last older page's
  let pagedBack = false; // once older asks are shown, the first page's `next` no longer moves the cursor

  async function refresh() {
    clearTimeout(timer);
    // A field of the first page in use (a note typed, A or B chosen): it waits, unread.
    const result = typing(box) ? null : await api('GET', asksUrl(), null, tag ? { 'if-none-match': tag } : {});
    if (result?.ok && !typing(box)) {
      tag = result.headers.get('etag') || '';
      const text = JSON.stringify(result.data.asks);
      if (text !== last) {
        last = text;
        const hands = inHand(box);
        draw(result.data.asks);
        putBack(box, hands);
        refreshRecords();
      }
      firstNext = result.data.next;
      if (!pagedBack) { next = result.data.next; olderButton.hidden = !next; }
      else await fillGap(result.data.asks, result.data.next);
    }
    if (pagedBack && firstNext) await refreshOlder(firstNext);
    timer = setTimeout(refresh, 3000);
  }

  // The older asks shown, read again (one page from the first page's end, its own ETag:
  // a 304 while nothing changed) and redrawn when a verdict, a pair or a note given
  // elsewhere (the API, the CLI, another tab) changed them, as the first page is.
  let olderTag = '';
  let olderLast = '';
  async function refreshOlder(firstNext) {
    const count = olderBox.querySelectorAll('article.ask').length;
    if (!firstNext || !count || count > 100 || typing(olderBox)) return;
    const url = asksUrl(`&before=${encodeURIComponent(firstNext)}&limit=${count}`);
    const result = await api('GET', url, null, olderTag ? { 'if-none-match': olderTag } : {});
    if (!result.ok || typing(olderBox)) return;
    olderTag = result.headers.get('etag') || '';
    const text = JSON.stringify(result.data.asks);
    if (text === olderLast) return;
    olderLast = text;
    const hands = inHand(olderBox);
    olderBox.replaceChildren();
    for (const ask of result.data.asks) drawAsk(ask, olderBox);
    putBack(olderBox, hands);
    refreshRecords(); // a verdict given elsewhere on an older ask moves its record too
  }

  // A field in a list in use (a note being typed, A or B being chosen): that list waits.
  function typing(list) {
    return !!document.activeElement?.matches('input, select, textarea') && list.contains(document.activeElement);
  }

  // Where a node of the list is, to find it again once the list is redrawn: its ask,
  // its answer (call), and which of the answer's (or the ask's) controls it is.
  function placeOf(node) {
    const ask = node.closest('article.ask');
    if (!ask) return null;
    const card = node.closest('[data-call]');
    const attribute = ['data-verdict', 'data-merge-verdict', 'data-best', 'data-copy-answer', 'data-pair', 'data-side']
      .find((name) => node.hasAttribute(name));
    const control = attribute ? `[${attribute}="${CSS.escape(node.getAttribute(attribute))}"]` : node.matches('input.note') ? 'input.note' : '';
    return { ask: ask.dataset.ask, call: card?.dataset.call || '', control };
  }

  function find(list, place) {
    const ask = place && list.querySelector(`article.ask[data-ask="${CSS.escape(place.ask)}"]`);
    const scope = ask && place.call ? ask.querySelector(`[data-call="${CSS.escape(place.call)}"]`) : ask;
    if (!scope) return null;
    return place.control ? scope.querySelector(place.control) : scope;
  }

  // What the person has in hand before a redraw: the focus, the notes typed and not
  // saved yet (each differs from its answer's or its pair's saved note), the pairs chosen.
  function inHand(list) {
    const fields = [];
    for (const field of list.querySelectorAll('input.note, select')) {
      const turn = field.closest('section.turn')?.turn;
      const card = field.closest('.seat-card');
      const saved = field.matches('select') ? null
        : card?.seat ? card.seat.note || ''
          : card ? turn?.mergedJson?.verdict?.note || ''
            : turn?.compare.filled || '';
      if (saved === null || field.value !== saved) fields.push({ place: placeOf(field), value: field.value });
    }
    return { focus: list.contains(document.activeElement) ? placeOf(document.activeElement) : null, fields };
  }

  function putBack(list, { focus, fields }) {
    for (const { place, value } of fields) {
      const field = find(list, place);
      if (!field || (field.matches('select') && ![...field.options].some((o) => o.value === value))) continue;
      field.value = value;
      if (field.matches('select')) field.dispatchEvent(new Event('change'));
    }
    find(list, focus)?.focus();
  }

  function draw(asks) {
    box.replaceChildren();
    if (!asks.length) {
      box.append(el('p', { class: 'hint', text: 'No asks yet: try the Ask page, or any client pointed at this server.' }));
      return;
    }
    for (const ask of asks) drawAsk(ask, box);
  }

  // "Older asks": the next page, after the ones shown, by mouse or keyboard (a button).
  async function loadOlder() {
    if (!next) return;
    olderButton.disabled = true;
    olderState.textContent = 'Loading older asks…';
    const result = await api('GET', asksUrl(`&before=${encodeURIComponent(next)}`));
    olderButton.disabled = false;
    if (!result.ok) {
      olderState.textContent = result.data?.error?.message || `Could not load older asks (${result.status}).`;
      return;
    }
    pagedBack = true;
    const shown = new Set([...document.querySelectorAll('#recent article.ask')].map((a) => a.dataset.ask));
    const fresh = result.data.asks.filter((ask) => !shown.has(ask.ask));
    for (const ask of fresh) drawAsk(ask, olderBox);
    next = result.data.next;
    olderButton.hidden = !next;
    olderState.textContent = `${fresh.length} older ask${fresh.length === 1 ? '' : 's'} shown${next ? '' : '; none older'}.`;
  }
  olderButton?.addEventListener('click', loadOlder);

  // New asks push the first page's oldest out: once paged back, those are drawn at the top of
  // the older list (read down from the first page's end to the first older ask), so none is lost.
  async function fillGap(asks, firstNext) {
    const top = olderBox.querySelector('article.ask')?.dataset.ask;
    if (!top || !asks.length || asks.some((a) => a.ask === top)) return;
    let cursor = firstNext;
    const missing = [];
    for (let i = 0; cursor && cursor !== top && i < 5; i++) {
      const result = await api('GET', asksUrl(`&before=${encodeURIComponent(cursor)}`));
      if (!result.ok) return;
      const index = result.data.asks.findIndex((a) => a.ask === top);
      missing.push(...(index < 0 ? result.data.asks : result.data.asks.slice(0, index)));
      cursor = index < 0 ? result.data.next : null;
    }
    const shown = new Set([...document.querySelectorAll('#recent article.ask')].map((a) => a.dataset.ask));
    const first = olderBox.firstChild;
    for (const ask of missing.filter((a) => !shown.has(a.ask))) drawAsk(ask, olderBox, first);
  }

  function drawAsk(listed, into, before = null) {
    const ask = withWhole(listed);
    const cut = isCut(ask);
    const article = el('article', { class: 'ask', 'data-ask': ask.ask },
      el('header', {}, el('strong', { text: `bench/${ask.collection}` }), ' ', el('span', { class: 'tag', text: ask.shape }), ' ',
        el('time', { datetime: ask.at, text: readable(ask.at) }),
        cut ? el('button', { type: 'button', class: 'small open-whole', text: 'Open whole', title: 'Read this ask whole: its answers are cut here', onclick: () => open(ask.ask, article) }) : null));
    article.listed = listed;
    into.insertBefore(article, before);
    const seats = ask.seats.filter((s) => s.kind !== 'merge');
    // Blind, each seat is its call here, as the server names it until the ask is judged (`hidden`);
    // once judged, the JSON brings the models, each under the letter it had.
    const names = namesOf(ask);
    const key = (s) => (names.blind ? s.call : s.alias);
    names.handles = names.blind && Boolean(ask.hidden);
    if (names.blind && !ask.hidden) for (const s of seats) names.real.set(s.call, s.alias);
    const turn = new bw.Turn(article, { collection: ask.collection, names, question: questionText(ask.question), textKept: ask.question !== undefined, at: Date.parse(ask.at) });
    turn.start(seats.map((s) => ({ seat: key(s), alias: key(s), call: s.call })));
    for (const seat of seats) if (seatCut(seat)) turn.seats.get(key(seat)).cut = cutNote(seat, () => open(ask.ask, article, seat.call));
    for (const seat of seats) {
      turn.done({ ...seat, seat: key(seat), alias: key(seat), content: seat.content ?? '', costUsd: seat.cost_usd });
      if (!ask.hidden) turn.seats.get(key(seat)).serverSeat = seat.seat;
    }
    const merge = ask.seats.find((s) => s.kind === 'merge' && s.seat !== 'report'); // not the merger's report call
    const mergeText = seatCut(merge || {}) ? `${merge.content}\n\n*… cut here: ${sizeText(merge.content_chars)} in all; Open whole reads it.*` : merge?.content ?? '';
    if (merge) turn.merged({ ...merge, content: mergeText, agreement: [], costUsd: merge.cost_usd });
    for (const pair of ask.pairs || []) turn.remember(pair);
    turn.revealIfJudged(); // judged already, by the Ask page's rule: every answer, a pair or the best
  }

  // A text the list cut to its head (`content_chars` its whole length).
  const seatCut = (seat) => seat.content_chars !== undefined && seat.content_chars > (seat.content || '').length;
  const questionCut = (question) => [question, ...(question?.messages || [])].some((m) => m && ((m.content_chars ?? 0) > (m.content || '').length || (m.system_chars ?? 0) > (m.system || '').length));
  const isCut = (ask) => ask.seats.some(seatCut) || questionCut(ask.question);
  const sizeText = (chars) => chars >= 1e6 ? `${(chars / 1e6).toFixed(1)} million characters` : `${chars.toLocaleString('en')} characters`;

  function cutNote(seat, opener) {
    return el('p', { class: 'hint cut-note' }, `Its first ${(seat.content || '').length.toLocaleString('en')} of ${sizeText(seat.content_chars)} are shown. `,
      el('button', { type: 'button', class: 'small', 'data-open-whole': '', text: 'Read it whole', onclick: opener }));
  }

  // The listed ask with its text whole, once opened (the list's row brings the verdicts, the pairs).
  function withWhole(ask) {
    const read = whole.get(ask.ask);
    if (!read) return ask;
    const texts = new Map(read.seats.map((s) => [s.call, s.content]));
    const seats = ask.seats.map(({ content_chars: _, ...seat }) => (texts.has(seat.call) ? { ...seat, content: texts.get(seat.call) } : seat));
    return { ...ask, question: read.question, seats };
  }

  // An ask opened: read whole and drawn again where it is now (a poll may have drawn it anew
  // meanwhile), what was in hand kept, the focus on the answer opened (else its first).
  async function open(id, article, call = '') {
    const buttons = article.querySelectorAll('.open-whole, [data-open-whole]');
    for (const button of buttons) { button.disabled = true; button.textContent = 'Reading…'; }
    const result = await api('GET', `/ui/api/asks/${encodeURIComponent(id)}`);
    if (!result.ok) {
      for (const button of buttons) { button.disabled = false; button.textContent = 'Could not read it: try again'; }
      return;
    }
    whole.set(id, result.data.ask);
    const shown = article.isConnected ? article : document.querySelector(`#recent article.ask[data-ask="${CSS.escape(id)}"]`);
    if (!shown) return;
    const into = shown.parentNode;
    const hands = inHand(into);
    drawAsk(shown.listed, into, shown);
    shown.remove();
    putBack(into, hands);
    const drawn = into.querySelector(`article.ask[data-ask="${CSS.escape(id)}"]`);
    (call && drawn.querySelector(`.seat-card[data-call="${CSS.escape(call)}"]`) || drawn.querySelector('.seat-card'))?.focus();
  }

  // A kept question (`{"system", "messages": [{"role", "content"}], "images"}`) as the page shows it:
  // the last user turn, saying how many turns came before it.
  function questionText(question) {
    const messages = question?.messages || [];
    const last = messages.filter((m) => m.role === 'user').at(-1);
    if (!last) return '';
    const before = messages.indexOf(last);
    const content = (last.content_chars ?? 0) > last.content.length ? `${last.content}… (${sizeText(last.content_chars)} in all)` : last.content;
    return before ? `${content} (after ${before} earlier message${before === 1 ? '' : 's'})` : content;
  }

  // A blind collection's asks are blind here too, each keeping its shuffle across redraws; an ask
  // the Ask page's toggle made blind or not says so itself (`blind`).
  const names = new Map();
  function namesOf(ask) {
    if (!names.has(ask.ask)) {
      const section = document.querySelector(`section[data-collection="${CSS.escape(ask.collection)}"]`);
      names.set(ask.ask, bw.seatNames(ask.blind ?? section?.dataset.blind === '1', { handles: true }));
    }
    return names.get(ask.ask);
  }

  // A verdict given here: the collection's record table follows it, once the
  // names are shown (blind, a row that moved would name the seat just judged;
  // the verdict that reveals them brings the whole record).
  document.addEventListener('bw:judged', (event) => {
    if (!event.detail.hidden) fillRecord(event.detail.record);
  });

  // Asks judged elsewhere (the API, the CLI, another tab): each record table follows
  // them, but a blind collection's not while an ask of it here still hides its names.
  async function refreshRecords() {
    for (const table of document.querySelectorAll('table[data-record]')) {
      const name = table.dataset.record;
      if (bw.Turn.all.some((t) => t.collection === name && t.root.isConnected && !t.names.revealed)) continue;
      const result = await api('GET', `/ui/api/collections/${encodeURIComponent(name)}/record`);
      if (result.ok) fillRecord(result.data);
    }
  }

  function fillRecord(record) {
    if (!record) return;
    const name = record.collection.replace(/^bench\//, '');
    const table = document.querySelector(`table[data-record="${CSS.escape(name)}"] tbody`);
    if (!table) return;
    const rows = Object.entries(record.aliases).sort().map(([alias, r]) => el('tr', { 'data-alias': alias },
      el('th', { scope: 'row', text: alias }),
      el('td', { class: 'useful', text: r.useful }),
      el('td', { class: 'not-useful', text: r.notUseful }),
      el('td', { class: 'judged', text: r.judged })));
    if (rows.length) table.replaceChildren(...rows);
  }

  refresh();
})();
