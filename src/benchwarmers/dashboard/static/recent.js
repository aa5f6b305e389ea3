// Collections: Recent asks, polled from /ui/api/asks, each drawn by
// judge.js as the Ask page draws a panel, so a verdict (or a pair) can be
// given later, in place. The log keeps no text unless the collection keeps
// it (`keep_text`): then the question and the answers are shown too.
(() => {
  'use strict';

  const { api, el, readable } = window.bw;
  const box = document.getElementById('asks');
  if (!box) return;

  let last = '';
  let timer = null;

  async function refresh() {
    clearTimeout(timer);
    const result = await api('GET', '/ui/api/asks');
    if (result.ok) {
      const text = JSON.stringify(result.data.asks);
      if (text !== last && !box.contains(document.activeElement)) {
        last = text;
        draw(result.data.asks);
      }
    }
    timer = setTimeout(refresh, 3000);
  }

  function draw(asks) {
    box.replaceChildren();
    if (!asks.length) {
      box.append(el('p', { class: 'hint', text: 'No asks yet: try the Ask page, or any client pointed at this server.' }));
      return;
    }
    for (const ask of asks) {
      const article = el('article', { class: 'ask', 'data-ask': ask.ask },
        el('header', {}, el('strong', { text: `bench/${ask.collection}` }), ' ', el('span', { class: 'tag', text: ask.shape }), ' ',
          el('time', { datetime: ask.at, text: readable(ask.at) })));
      box.append(article);
      const seats = ask.seats.filter((s) => s.kind !== 'merge');
      const turn = new bw.Turn(article, { collection: ask.collection, names: namesOf(ask), question: questionText(ask.question), textKept: ask.question !== undefined });
      turn.start(seats.map((s) => ({ seat: s.seat, alias: s.alias, call: s.call })));
      for (const seat of seats) turn.done({ ...seat, content: seat.content ?? '', costUsd: seat.cost_usd });
      const merge = ask.seats.find((s) => s.kind === 'merge' && s.seat !== 'report'); // not the merger's report call
      if (merge) turn.merged({ ...merge, content: merge.content ?? '', agreement: [], costUsd: merge.cost_usd });
      for (const pair of ask.pairs || []) turn.remember(pair);
      turn.revealIfJudged(); // judged already, by the Ask page's rule: every answer, a pair or the best
    }
  }

  // A kept question (`{"system", "messages": [{"role", "content"}], "images"}`) as the page shows it:
  // the last user turn, saying how many turns came before it.
  function questionText(question) {
    const messages = question?.messages || [];
    const last = messages.filter((m) => m.role === 'user').at(-1);
    if (!last) return '';
    const before = messages.indexOf(last);
    return before ? `${last.content} (after ${before} earlier message${before === 1 ? '' : 's'})` : last.content;
  }

  // A blind collection's asks are blind here too, each keeping its shuffle across redraws.
  const names = new Map();
  function namesOf(ask) {
    if (!names.has(ask.ask)) {
      const section = document.querySelector(`section[data-collection="${CSS.escape(ask.collection)}"]`);
      names.set(ask.ask, bw.seatNames(section?.dataset.blind === '1'));
    }
    return names.get(ask.ask);
  }

  // A verdict given here: the collection's record table follows it.
  document.addEventListener('bw:judged', (event) => {
    const record = event.detail.record;
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
  });

  refresh();
})();
