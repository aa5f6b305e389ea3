// Judging in place: one ask's answers side by side, each with its verdict
// under it (Useful / Not useful, a note), a bar comparing any two of them
// ("A is better", "B is better", "tie", "both bad"), "best of the panel",
// and the keys for all of it. The Ask page streams into it; Recent asks
// draws kept asks with it. Blind: seats are "Seat A/B/C" in a shuffled
// order, their models named only once the person has judged.
//
//   const names = bw.seatNames(blind);          // one per conversation
//   const turn = new bw.Turn(box, { collection, names, question });
//   turn.start([{ seat, alias, call }]); turn.text(seat, delta); turn.done(seatJson); ...
(() => {
  'use strict';

  const { api, el, message } = window.bw;
  const JUDGEABLE = new Set(['ok', 'empty']);
  const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

  // ------------------------------------------------------------ names

  // "Seat A", "Seat B"... per model, stable over a conversation's turns; in
  // blind mode handed out in a shuffled order, the model's name hidden
  // until `reveal()`.
  // `handles`: the server named the seats by handles (a blind ask on the Ask page, `dashboard/blind.py`),
  // their models asked for once judged (`POST /ui/api/names`); Recent asks has the models already,
  // and keys its seats by call id too. Keyed by call ids, a blind panel's letters are `byHash`'s.
  function seatNames(blind, { handles = false } = {}) {
    const letters = new Map();
    return {
      blind,
      handles: blind && handles,
      real: new Map(), // handle -> model, once revealed
      revealed: !blind,
      realName(alias) { return this.real.get(alias) || alias; },
      assign(aliases) {
        const fresh = aliases.filter((a) => !letters.has(a));
        if (blind && handles) byHash(fresh);
        else if (blind) shuffle(fresh);
        for (const alias of fresh) letters.set(alias, `Seat ${letter(letters.size)}`);
      },
      label(alias) { return letters.get(alias) || alias; },
      shown(alias) { return this.revealed ? `${letters.get(alias) || ''} · ${this.realName(alias)}` : this.label(alias); },
      order(aliases) { return [...aliases].sort((a, b) => this.label(a).localeCompare(this.label(b))); },
      // A message of ours that names seats' models ("no model 'x' on the bench", a left-off
      // reason): while hidden, each model with a seat here is named by its seat instead.
      hide(text) {
        if (this.revealed) return text;
        const longest = [...letters.keys()].sort((a, b) => b.length - a.length);
        // A whole name: `gpt-4o` is not the start of `gpt-4o-mini`.
        const whole = (alias) => new RegExp(`(?<![\\w.:/-])${alias.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.:/-])`, 'g');
        return longest.reduce((out, alias) => out.replace(whole(alias), () => letters.get(alias)), String(text));
      },
    };
  }

  // A, B, ... Z, then AA, AB...: a panel of more than 26 seats names each one once.
  function letter(n) {
    return (n >= LETTERS.length ? letter(Math.floor(n / LETTERS.length) - 1) : '') + LETTERS[n % LETTERS.length];
  }

  function shuffle(items) {
    const random = new Uint32Array(items.length);
    crypto.getRandomValues(random);
    for (let i = items.length - 1; i > 0; i -= 1) {
      const j = random[i] % (i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  // Seats named by handles are keyed by call ids (the Ask page's handle, Recent asks' key), random
  // for each ask: ordered by a hash of them, the seats are shuffled, and shuffled alike wherever the
  // ask is drawn, so the Seat B judged on the Ask page is Seat B in Recent asks and after a reload.
  function byHash(items) {
    const hash = (text) => [...text].reduce((h, c) => Math.imul(h ^ c.codePointAt(0), 16777619) >>> 0, 2166136261);
    return items.sort((a, b) => hash(a) - hash(b) || a.localeCompare(b));
  }

  // -------------------------------------------------------------- copy

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch (e) {
      const area = el('textarea', { class: 'visually-hidden' });
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    const was = button.dataset.label || button.textContent;
    button.dataset.label = was;
    button.textContent = 'Copied';
    setTimeout(() => { button.textContent = was; }, 1500);
  }

  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-copy-code]');
    if (button) copyText(button.code ?? button.closest('.code-block').querySelector('code').textContent, button);
  });

  // ------------------------------------------------------------- pacing

  // A streaming answer is drawn whole at most once a frame, however many pieces arrive in it,
  // and at most a fifth of the time: after a draw (with its layout) that took 1 s, as a 2 MB
  // answer's does, the next waits 4 s. Drawn every frame, each draw longer than the last, a
  // long answer kept the page from answering a click until it was done. `owner.frame`: the
  // frame asked for; `owner.calm`: no draw before it.
  function paced(owner, drawIt) {
    if (owner.frame) return;
    const tick = () => {
      if (performance.now() < (owner.calm || 0)) { owner.frame = requestAnimationFrame(tick); return; }
      owner.frame = 0;
      const started = performance.now();
      drawIt();
      document.body.offsetHeight; // its layout now, to count it
      owner.calm = performance.now() + 4 * (performance.now() - started);
    };
    owner.frame = requestAnimationFrame(tick);
  }

  // The draw asked for is not needed (the whole answer is drawn now).
  function unpaced(owner) {
    cancelAnimationFrame(owner.frame || 0);
    owner.frame = 0;
  }

  // -------------------------------------------------------------- turn

  class Turn {
    constructor(box, { collection, names, question, onJudged, textKept = true, at = Date.now() }) {
      this.collection = collection;
      this.at = at; // when it was asked (ms): the keys act on the latest turn when none is in focus
      this.textKept = textKept; // false: the log kept no answers (Recent asks of a collection without keep_text)
      this.names = names;
      this.onJudged = onJudged || (() => {});
      this.seats = new Map(); // seat label -> {seat, alias, call, text, status, card, verdict, note}
      this.pairs = new Map(); // "callA|callB" -> outcome text
      this.root = el('section', { class: 'turn', 'aria-label': question ? `Asked: ${question.slice(0, 60)}` : 'Answers' });
      this.root.turn = this;
      if (question) this.root.append(el('div', { class: 'question' }, el('strong', { text: 'Asked' }), ' ', el('span', { class: 'question-text', text: question })));
      this.grid = el('div', { class: 'seats', 'aria-live': 'polite' });
      this.mergedBox = el('div', { class: 'merged', hidden: true });
      this.mergePace = { frame: 0 }; // the merge's drawing as it streams (`paced`)
      this.compare = compareBar(this);
      this.root.append(el('div', { class: 'panel-row' }, this.grid, this.mergedBox), this.compare);
      box.append(this.root);
      Turn.all = Turn.all.filter((turn) => turn.root.isConnected); // Recent asks redraws its turns
      Turn.all.push(this);
    }

    start(seats, merged = false) {
      this.mergePlanned = merged; // a merge follows the seats: a Stop before it is done cuts it too
      this.names.assign(seats.map((s) => s.alias));
      for (const alias of this.names.order(seats.map((s) => s.alias))) {
        const planned = seats.find((s) => s.alias === alias);
        const seat = { ...planned, text: '', status: 'writing', verdict: null, note: '' };
        seat.card = seatCard(this, seat);
        this.seats.set(seat.seat, seat);
        this.grid.append(seat.card);
      }
    }

    text(label, delta) {
      const seat = this.seats.get(label);
      if (!seat || seat.status !== 'writing') return;
      seat.text += delta;
      seat.card.classList.add('streaming');
      paced(seat, () => draw(seat));
    }

    done(json) {
      let seat = this.seats.get(json.seat);
      if (!seat) { // a seat the start did not announce: draw it now
        this.names.assign([json.alias]);
        seat = { seat: json.seat, alias: json.alias, call: json.call, text: '', verdict: null, note: '' };
        seat.card = seatCard(this, seat);
        this.seats.set(seat.seat, seat);
        this.grid.append(seat.card);
      }
      unpaced(seat);
      Object.assign(seat, { call: json.call, status: json.status, seconds: json.seconds, error: json.error || '', costUsd: json.costUsd });
      // A seat cut mid-answer says no content: what it wrote here so far stays, shown as cut.
      if (json.content !== undefined && json.content !== null && !(json.status === 'cancelled' && !json.content)) seat.text = json.content;
      if (json.verdict) { seat.verdict = json.verdict.useful ? 'useful' : 'not_useful'; seat.note = json.verdict.note || ''; }
      seat.card.classList.remove('streaming');
      draw(seat);
      refreshCompare(this);
    }

    // A piece of the merger's answer as it is written (a new call: another merger starts afresh).
    mergeText(delta, call) {
      if (this.mergeCall !== call) { this.mergeCall = call; this.mergeStreamed = ''; }
      this.mergeStreamed += delta;
      this.mergedBox.hidden = false;
      this.root.querySelector('.panel-row').classList.add('with-merge');
      paced(this.mergePace, () => { if (!this.mergedJson) this.mergeSoFar('writing'); });
    }

    // The merge as far as it was written: still writing, or cut by a Stop.
    mergeSoFar(status) {
      const cut = status === 'cancelled';
      this.mergedBox.hidden = false;
      this.root.querySelector('.panel-row').classList.add('with-merge');
      this.mergedBox.replaceChildren(el('article', { class: `seat-card merged-card s-${status}` + (cut ? '' : ' streaming') },
        el('header', {}, el('strong', { text: 'Merged' }), ' ', el('span', { class: `status s-${status}`, text: cut ? status : bw.thinking(this.mergeStreamed) ? 'thinking…' : 'writing…' })),
        el('div', { class: 'answer md' }, this.mergeStreamed ? bw.answer(this.mergeStreamed, !cut, this.mergedBox.querySelector('.answer')) : el('p', { class: 'hint', text: 'stopped before it answered' })),
        cut ? el('p', { class: 'hint', text: 'Cancelled: stopped from the page; it costs no verdict.' }) : null));
    }

    merged(json) {
      unpaced(this.mergePace);
      this.mergedJson = json;
      const names = this.names;
      const seats = [...this.seats.values()];
      // The merger names the seats it drew on by their seat label (or model): shown as Seat A/B/C.
      const named = (who) => who.map((w) => names.label(seats.find((s) => s.seat === w)?.alias || w)).join(', ');
      const agreement = json.agreement || [];
      this.mergedBox.hidden = false;
      this.mergedBox.replaceChildren(el('article', { class: `seat-card merged-card s-${json.status}`, 'data-call': json.call, tabIndex: 0, 'aria-label': `Merged answer, ${json.status}` },
        el('header', {}, el('strong', { text: 'Merged' }), ' ', el('span', { class: 'tag who', text: names.revealed ? json.alias : 'merger' }), ' ',
          el('span', { class: `status s-${json.status}`, text: json.status }), ' ', el('small', { text: `${json.seconds} s` }), names.revealed ? costTag(json.costUsd) : null),
        el('p', { class: 'hint', text: `Merged from ${seats.filter((s) => JUDGEABLE.has(s.status)).map((s) => names.label(s.alias)).join(', ') || 'no seat'}, shown beside it.` }),
        el('div', { class: 'answer md' }, json.error ? el('p', { class: 'error', text: errorText(names, json.status, json.error) }) : bw.answer(json.content || '')),
        json.report ? reportBox(json.report, named) : agreement.length ? el('ul', { class: 'agreement' }, ...agreement.map((p) => el('li', {},
          own(p.point), ' ', el('small', { text: `held by ${named(p.heldBy) || 'none'}` + (p.contradictedBy.length ? `; contradicted by ${named(p.contradictedBy)}` : '') })))) : null,
        json.call && JUDGEABLE.has(json.status) ? mergeBar(json, names) : null));
      this.root.querySelector('.panel-row').classList.add('with-merge');
    }

    // The stream ended early (stopped, or broken): seats still writing were cut, and the merge not done.
    cut() {
      for (const seat of this.seats.values()) {
        if (seat.status !== 'writing') continue;
        unpaced(seat);
        seat.status = 'cancelled';
        seat.card.classList.remove('streaming');
        draw(seat);
      }
      if ((this.mergePlanned || this.mergeCall) && !this.mergedJson) {
        unpaced(this.mergePace);
        this.mergeSoFar('cancelled');
      }
      refreshCompare(this);
    }

    judgeable() {
      return [...this.seats.values()].filter((s) => s.call && JUDGEABLE.has(s.status));
    }

    // The digit's seat in the letters' order (1 is Seat A): a failed seat, or one still writing,
    // keeps its number, so 5 is Seat E whatever came back before it.
    focusSeat(index) {
      [...this.seats.values()][index]?.card.focus();
    }

    // Judged: a pair, the best, or every answer on its own (none to judge counts).
    settled() {
      return this.pairs.size > 0 || this.judgeable().every((s) => s.verdict);
    }

    // A conversation's names show once each of its turns is judged: a verdict on a one-seat
    // follow-up says nothing of the answers before it that were never judged.
    revealIfJudged() {
      if (Turn.all.filter((t) => t.names === this.names && t.root.isConnected).every((t) => t.settled())) this.reveal();
    }

    reveal() {
      const names = this.names;
      if (names.revealed || names.revealing) return;
      const turns = Turn.all.filter((turn) => turn.names === names && turn.root.isConnected);
      if (!names.handles) { show(names, turns); return; }
      names.revealing = true;
      named(turns).then((ok) => {
        names.revealing = false;
        if (!ok) return;
        show(names, turns);
        this.onJudged(this);
      });
    }

    redraw() {
      for (const seat of this.seats.values()) draw(seat);
      if (this.mergedJson) this.merged(this.mergedJson);
      refreshCompare(this);
    }

    // A blind panel is revealed once judged: a pair, the best, or every answer on its own.
    // The event says whether the names are still hidden: a record that moves tells who was judged.
    judged(data) {
      this.revealIfJudged();
      this.onJudged(this);
      document.dispatchEvent(new CustomEvent('bw:judged', { detail: { ...data, hidden: !this.names.revealed } }));
    }

    // What the store holds of this turn's ask (an ask of Recent asks' JSON): a verdict, a note
    // or a pair given elsewhere (the API, the CLI, another tab) shown here as if given here.
    // A card whose field is in use (a note being typed) waits for the next look: true when one did.
    // Idempotent: called again with the same ask, it changes nothing.
    sync(ask) {
      let changed = false;
      let waiting = false;
      for (const json of ask.seats) {
        const seat = [...this.seats.values()].find((s) => s.call === json.call);
        if (!seat || seat.status === 'writing') continue;
        const verdict = json.verdict ? (json.verdict.useful ? 'useful' : 'not_useful') : null;
        const note = json.verdict?.note || '';
        if (seat.verdict === verdict && (seat.note || '') === note) continue;
        if (seat.card.contains(document.activeElement) && document.activeElement.matches('input, select, textarea')) {
          waiting = true;
          continue;
        }
        Object.assign(seat, { verdict, note });
        draw(seat);
        changed = true;
      }
      // The merged answer's verdict likewise (its card redrawn, unless its note is in use).
      const merge = ask.seats.find((s) => s.kind === 'merge' && s.call === this.mergedJson?.call);
      if (merge) {
        const had = this.mergedJson.verdict || null;
        const now = merge.verdict ? { useful: merge.verdict.useful, note: merge.verdict.note || '' } : null;
        if ((had?.useful ?? null) !== (now?.useful ?? null) || (had?.note || '') !== (now?.note || '')) {
          if (this.mergedBox.contains(document.activeElement) && document.activeElement.matches('input')) waiting = true;
          else { this.mergedJson.verdict = now; this.merged(this.mergedJson); }
        }
      }
      // The compare bar in use (A or B being chosen, a pair's note typed): its pairs wait too.
      const comparing = this.compare.contains(document.activeElement) && document.activeElement.matches('input, select, textarea');
      for (const pair of ask.pairs || []) {
        const known = this.pairs.get(pairKey(pair.better, pair.worse));
        if (known && known.outcome === pair.outcome && known.better === pair.better && (known.note || '') === (pair.note || '')) continue;
        if (comparing) { waiting = true; continue; }
        remember(this, pair);
        changed = true;
      }
      if (changed) {
        if (!comparing) refreshCompare(this);
        this.revealIfJudged();
      }
      return waiting;
    }

    // A pair verdict already given (`{better, worse, outcome, note}`), shown in the compare bar.
    remember(pair) {
      remember(this, pair);
      refreshCompare(this);
    }
  }
  Turn.all = [];

  function show(names, turns) {
    names.revealed = true;
    for (const turn of turns) turn.redraw();
  }

  // A blind conversation's models, and what the stream kept back with them (a failed seat's error,
  // the costs), from the server once its asks are judged: false while one is not (the names wait).
  async function named(turns) {
    const calls = turns.flatMap((turn) => [...turn.seats.values()].map((s) => s.call).concat(turn.mergedJson?.call || []));
    const result = await api('POST', '/ui/api/names', { calls: calls.filter(Boolean) });
    if (!result.ok) return false;
    const found = result.data.calls;
    if (!calls.filter(Boolean).every((call) => found[call])) return false;
    for (const turn of turns) {
      for (const seat of turn.seats.values()) {
        const it = found[seat.call];
        turn.names.real.set(seat.alias, it.alias);
        Object.assign(seat, { error: seat.status === 'cancelled' ? seat.error : it.error, costUsd: it.costUsd, serverSeat: it.seat });
      }
      const merge = turn.mergedJson && found[turn.mergedJson.call];
      if (merge) Object.assign(turn.mergedJson, { alias: merge.alias, error: merge.error, costUsd: merge.costUsd });
      else if (turn.mergedJson?.error) { // no merger answered: the mergers tried, as the merge said them
        const tried = result.data.merges[turn.askId] || [];
        turn.mergedJson.error = tried.map((m) => `${m.alias}: ${m.status}` + (m.error ? ` (${m.error})` : '')).join('; ') || 'no member could merge';
      }
      turn.askCost = result.data.asks[turn.askId];
    }
    return true;
  }

  // A verdict's body: blind and still named by handles, its answer names no model either.
  function verdictBody(names, body) {
    return names.handles && !names.revealed ? { ...body, blind: true } : body;
  }

  // The merger's words before ours on a line ("— Seat A, judged right"), isolated: a right-to-left
  // override in them turned ours around too, so the merger could garble which seat said what.
  function own(text) {
    return el('bdi', { text });
  }

  // The merger's checked report beside the seats: what they agreed on, where
  // they contradicted each other (who on which side), points one seat alone
  // made (and whether the merger thinks each is right), gaps, confidence.
  function reportBox(report, named) {
    const list = (title, items) => items.length ? el('div', { class: 'report-part' }, el('h4', { text: title }), el('ul', {}, ...items)) : null;
    const right = (r) => (r === true ? 'judged right' : r === false ? 'judged wrong' : 'cannot tell');
    return el('section', { class: 'merge-report', 'aria-label': 'Merge report' },
      el('p', { class: 'hint', text: `Confidence ${Math.round(report.confidence * 100)}%` }),
      list('Consensus', report.consensus.map((p) => el('li', { text: p }))),
      list('Contradictions', report.contradictions.map((c) => el('li', {}, own(c.point),
        el('ul', {}, ...c.sides.map((s) => el('li', {}, own(s.position), ' ', el('small', { text: `— ${named(s.seats) || 'no seat'}` }))))))),
      list('Only one seat said', report.unique.map((u) => el('li', {}, own(u.point), ' ', el('small', { text: `— ${named([u.seat])}, ${right(u.right)}` })))),
      list('Gaps', report.gaps.map((g) => el('li', { text: g }))));
  }

  function seatCard(turn, seat) {
    const card = el('article', { class: 'seat-card', tabIndex: 0 });
    card.turn = turn;
    card.seat = seat;
    return card;
  }

  // The card from the seat's state: name (hidden while blind), status, the
  // answer as markdown, and the verdict controls once it can be judged.
  function draw(seat) {
    const { card } = seat;
    const turn = card.turn;
    const names = turn.names;
    card.className = `seat-card s-${seat.status}` + (seat.card.classList.contains('streaming') ? ' streaming' : '') + (seat.verdict ? ' judged' : '');
    card.dataset.label = names.label(seat.alias);
    // The server's seat ("Seat 2") is the panel's order, its members' as listed: blind, it waits too.
    if (names.revealed) Object.assign(card.dataset, { alias: names.realName(seat.alias), seat: seat.serverSeat || seat.seat });
    else { delete card.dataset.alias; delete card.dataset.seat; }
    if (seat.call) card.dataset.call = seat.call;
    card.setAttribute('aria-label', `${names.shown(seat.alias)}, ${seat.status}`);
    const place = [...turn.seats.values()].indexOf(seat);
    if (place >= 0 && place < 9) card.setAttribute('aria-keyshortcuts', String(place + 1));
    const header = el('header', {},
      el('strong', { class: 'seat-name', text: names.label(seat.alias) }), ' ',
      names.revealed ? el('span', { class: 'tag who', text: names.realName(seat.alias) }) : el('span', { class: 'tag who hidden-name', text: 'name hidden' }), ' ',
      el('span', { class: `status s-${seat.status}`, text: seat.status !== 'writing' ? seat.status : bw.thinking(seat.text) ? 'thinking…' : 'writing…' }),
      seat.seconds !== undefined ? el('small', { text: ` ${seat.seconds} s` }) : null,
      names.revealed ? costTag(seat.costUsd) : null); // a price would tell a blind seat's model
    // A seat cancelled mid-answer shows what it had written when it was cut, marked so.
    const cancelled = seat.status === 'cancelled';
    // The answer is drawn again only when what it shows changed: a verdict, a note or the names
    // shown redraw the rest of the card around it. Drawn anew at every click, a long answer
    // (megabytes of markdown) was parsed and laid out again each time, the page still meanwhile.
    const shows = [seat.status, seat.error, names.revealed, turn.textKept, seat.text];
    let answer = seat.answer;
    if (!answer || answer.parentNode !== card || shows.some((part, i) => part !== seat.answerShows[i])) {
      answer = el('div', { class: 'answer md' + (cancelled && seat.text ? ' cut-short' : '') });
      if (seat.error) answer.append(el('p', { class: 'error', text: errorText(names, seat.status, seat.error) }));
      if (seat.text && (!seat.error || cancelled)) answer.append(bw.answer(seat.text, seat.status === 'writing', seat.answer));
      else if (!seat.error) answer.append(el('p', { class: 'hint', text: emptyAnswer(turn, seat) }));
      Object.assign(seat, { answer, answerShows: shows });
    }
    const parts = [header, answer];
    // One status for both (the SPEC's word); a cut's error starts "cut: ".
    const wasCut = cancelled && (seat.error || '').startsWith('cut: ');
    const tail = seat.text ? '. What it had written by then is shown, cut where it stopped; it costs no verdict.' : '; it costs no verdict.';
    if (wasCut) parts.push(el('p', { class: 'hint cut-note', text: `Cut: the reply went without it (quorum or deadline)${tail}` }));
    else if (cancelled) parts.push(el('p', { class: 'hint cut-note', text: `Cancelled: stopped before it finished (Stop on the page, or its client hung up)${tail}` }));
    if (seat.cut) parts.push(seat.cut); // Recent asks sent its head only: the button that reads it whole
    if (seat.call && JUDGEABLE.has(seat.status)) parts.push(judgeBar(turn, seat));
    if (answer.parentNode !== card) { card.replaceChildren(...parts); return; }
    for (const child of [...card.children]) if (child !== answer) child.remove();
    answer.before(header);
    answer.after(...parts.slice(2));
  }

  // What a call cost, as the `bench` object says it: USD, or null for a price
  // unknown (said so, never shown as $0); nothing before the call has ended.
  function costTag(usd) {
    if (usd === undefined) return null;
    return el('small', { class: 'cost', text: ` · ${costText(usd)}` });
  }

  function costText(usd) {
    if (usd === null) return 'cost unknown';
    if (usd === 0) return '$0';
    return `$${usd < 1 ? Number(usd.toPrecision(2)) : usd.toFixed(2)}`;
  }

  // A failed call's error is the provider's words, which often name the model ("model 'x' not
  // found", "x is overloaded"): blind, it waits for the names. A cut or a stop is ours and names none.
  function errorText(names, status, error) {
    if (names.revealed || status === 'cancelled') return error;
    return `${status}: its message is shown once the names are (a provider's error often names its model)`;
  }

  function emptyAnswer(turn, seat) {
    if (seat.status === 'writing') return 'waiting for the first words…';
    if (seat.status === 'cancelled') return 'stopped before it answered';
    if (!turn.textKept && seat.status === 'ok') return 'answer not kept (its collection did not keep text then, or its days are over)';
    return 'no answer';
  }

  // A button with its key shown beside its words: the key is announced as
  // aria-keyshortcuts, not read into the name, so the button is named
  // "Useful" (a screen reader, or a test asking for that name, finds it).
  function keyed(words, key, attrs) {
    return el('button', { type: 'button', 'aria-keyshortcuts': key, ...attrs }, `${words} `, el('kbd', { text: key, 'aria-hidden': 'true' }));
  }

  function judgeBar(turn, seat) {
    const name = turn.names.label(seat.alias);
    const press = (kind) => ({ 'aria-pressed': String(seat.verdict === kind) });
    const note = el('input', { class: 'note', type: 'text', name: 'note', 'aria-label': `Note on ${name} (optional)`, placeholder: 'Note (optional): E, then Enter' });
    note.value = seat.note || '';
    return el('footer', { class: 'judge', role: 'group', 'aria-label': `Judge ${name}` },
      keyed('Useful', 'U', { class: 'good', 'data-verdict': 'useful', ...press('useful') }),
      keyed('Not useful', 'N', { class: 'bad', 'data-verdict': 'not_useful', ...press('not_useful') }),
      keyed('Best of the panel', 'P', { 'data-best': '' }),
      seat.text && !seat.cut ? keyed('Copy', 'C', { 'data-copy-answer': '' }) : null, // not kept, or its head only: not copied
      note,
      el('small', { class: 'judge-state', role: 'status', text: seat.verdict ? said(seat) : '' }));
  }

  // The merge is judged on its own (useful or not, a note): it is no seat to
  // compare. By mouse or by its keys, as a seat is (`bar.give`, the keydown below).
  function mergeBar(json, names) {
    const verdict = json.verdict ? (json.verdict.useful ? 'useful' : 'not_useful') : '';
    const note = el('input', { class: 'note', type: 'text', name: 'note', 'aria-label': 'Note on the merged answer (optional)', placeholder: 'Note (optional)' });
    note.value = json.verdict?.note || '';
    const state = el('small', { class: 'judge-state', role: 'status', text: verdict ? said({ verdict, note: note.value }) : '' });
    const give = async (useful) => {
      const result = await api('POST', '/ui/api/verdict', verdictBody(names, { call: json.call, useful, note: note.value.trim() }));
      if (!result.ok) { state.textContent = message(result); return; }
      json.verdict = { useful, note: note.value.trim() };
      state.textContent = said({ verdict: useful ? 'useful' : 'not_useful', note: json.verdict.note });
      for (const button of bar.querySelectorAll('button[data-merge-verdict]')) button.setAttribute('aria-pressed', String(button.dataset.mergeVerdict === (useful ? 'useful' : 'not_useful')));
      document.dispatchEvent(new CustomEvent('bw:judged', { detail: { ...result.data, hidden: !names.revealed } }));
    };
    const button = (kind, label, key, className) => {
      const made = keyed(label, key, { class: className, 'data-merge-verdict': kind, 'aria-pressed': String(verdict === kind) });
      made.addEventListener('click', () => give(kind === 'useful'));
      return made;
    };
    const bar = el('footer', { class: 'judge', role: 'group', 'aria-label': 'Judge the merged answer' },
      button('useful', 'Useful', 'U', 'good'), button('not_useful', 'Not useful', 'N', 'bad'), note, state);
    bar.give = give;
    // Enter in the note saves it with the verdict given (none yet: says to give one, the keys
    // back to the merged answer, so the U or N it asks for is a verdict, not the note's).
    bar.saveNote = () => {
      if (json.verdict) give(json.verdict.useful);
      else { state.textContent = 'Now Useful or Not useful saves the note with the verdict.'; bar.closest('.merged-card').focus(); }
    };
    return bar;
  }

  function said(seat) {
    return (seat.verdict === 'useful' ? '✓ useful' : '✗ not useful') + (seat.note ? ` — “${seat.note}”` : '');
  }

  // One seat's verdicts are sent one at a time, in the order given: N, then
  // E, a note and Enter before N's answer came back, is N and then N with its
  // note (`seat.pending`: the verdict on its way, which Enter in the note saves).
  function judgeSeat(seat, useful) {
    seat.pending = useful ? 'useful' : 'not_useful';
    const sent = (seat.sending || Promise.resolve()).then(() => sendVerdict(seat, useful));
    seat.sending = sent.catch(() => {});
    return sent;
  }

  async function sendVerdict(seat, useful) {
    const card = seat.card;
    const note = card.querySelector('input.note')?.value.trim() || '';
    const result = await api('POST', '/ui/api/verdict', verdictBody(card.turn.names, { call: seat.call, useful, note }));
    if (!result.ok) { card.querySelector('.judge-state').textContent = message(result); return; }
    seat.verdict = useful ? 'useful' : 'not_useful';
    seat.note = note;
    // A note being written while the verdict was on its way keeps its letters
    // and the focus: the redraw must neither drop them nor make keys of the rest.
    const box = card.querySelector('input.note');
    const writing = box && box === document.activeElement ? { value: box.value, at: box.selectionStart } : null;
    const focused = card.contains(document.activeElement);
    draw(seat);
    card.turn.judged(result.data);
    const again = card.querySelector('input.note');
    if (writing && again) {
      again.value = writing.value;
      again.focus();
      again.setSelectionRange(writing.at ?? writing.value.length, writing.at ?? writing.value.length);
    } else if (focused) card.focus();
  }

  async function best(seat) {
    const turn = seat.card.turn;
    const note = seat.card.querySelector('input.note')?.value.trim() || '';
    const result = await api('POST', '/ui/api/verdict', verdictBody(turn.names, { best: seat.call, note }));
    const state = seat.card.querySelector('.judge-state');
    if (!result.ok) { state.textContent = message(result); return; }
    for (const pair of result.data.recorded?.pairs || []) remember(turn, pair);
    turn.best = seat.call;
    refreshCompare(turn);
    turn.judged(result.data);
    turn.root.querySelector(`.seat-card[data-call="${CSS.escape(seat.call)}"]`)?.focus();
  }

  // ------------------------------------------------------------ compare

  function compareBar(turn) {
    const pick = (side) => el('select', { 'data-side': side, 'aria-label': `Answer ${side.toUpperCase()}` });
    const note = el('input', { class: 'note', type: 'text', name: 'pair-note', placeholder: 'Note on the pair (optional)', 'aria-label': 'Note on the pair (optional)', 'aria-keyshortcuts': 'O' });
    const bar = el('section', { class: 'compare card', hidden: true, tabIndex: -1, 'aria-label': 'Compare two answers' },
      el('h3', { text: 'Compare two answers' }),
      el('div', { class: 'buttons' },
        el('label', {}, 'A ', pick('a')), el('label', {}, 'B ', pick('b')),
        keyed('A is better', 'A', { 'data-pair': 'a' }),
        keyed('B is better', 'B', { 'data-pair': 'b' }),
        keyed('Tie', 'T', { 'data-pair': 'tie' }),
        keyed('Both bad', 'X', { 'data-pair': 'both_bad' }),
        note),
      el('small', { class: 'compare-state', role: 'status' }),
      el('ul', { class: 'pairs plain' }));
    bar.turn = turn;
    for (const side of bar.querySelectorAll('select')) {
      side.addEventListener('change', () => { bar.picked = true; pairNote(turn); });
    }
    return bar;
  }

  function pairKey(a, b) {
    return a < b ? `${a}|${b}` : `${b}|${a}`;
  }

  // The selects offer the judgeable seats; A and B move to the next pair not judged yet, in the
  // seats' order (Seat A and Seat B first, whichever finished first), unless the person picked a pair.
  function refreshCompare(turn, advance) {
    const seats = turn.judgeable();
    const bar = turn.compare;
    bar.hidden = seats.length < 2;
    // "Best of the panel" needs another answer to be best of: with one, it is not offered.
    for (const button of turn.root.querySelectorAll('[data-best]')) button.hidden = bar.hidden;
    if (bar.hidden) return;
    const [a, b] = [bar.querySelector('[data-side="a"]'), bar.querySelector('[data-side="b"]')];
    let chosen = [a.value, b.value];
    const options = () => seats.map((s) => el('option', { value: s.call, text: turn.names.shown(s.alias) }));
    a.replaceChildren(...options());
    b.replaceChildren(...options());
    const calls = seats.map((s) => s.call);
    if (advance || !bar.picked || !calls.includes(chosen[0]) || !calls.includes(chosen[1]) || chosen[0] === chosen[1]) {
      chosen = nextPair(turn, calls) || [calls[0], calls[1]];
      bar.picked = false;
    }
    [a.value, b.value] = chosen;
    pairNote(turn);
    const byCall = new Map(seats.map((s) => [s.call, s]));
    bar.querySelector('.pairs').replaceChildren(...[...turn.pairs.entries()].map(([key, pair]) => {
      const [better, worse] = [byCall.get(pair.better), byCall.get(pair.worse)];
      if (!better || !worse) return null;
      let [x, y] = [turn.names.shown(better.alias), turn.names.shown(worse.alias)];
      if (pair.outcome !== 'better' && x.localeCompare(y) > 0) [x, y] = [y, x]; // a tie: in the seats' order
      const text = pair.outcome === 'better' ? `${x} better than ${y}` : pair.outcome === 'tie' ? `${x} and ${y}: tie` : `${x} and ${y}: both bad`;
      return el('li', { 'data-pair-key': key, text: text + (pair.note ? ` — “${pair.note}”` : '') });
    }).filter(Boolean));
  }

  // The note box holds the note of the pair chosen, when it was judged, so changing
  // the pair's verdict keeps it (a seat's note box keeps its note so). Only when the
  // choice moves (a seat ending redraws the bar), and never over words typed since.
  function pairNote(turn) {
    const bar = turn.compare;
    const box = bar.querySelector('input.note');
    const key = pairKey(bar.querySelector('[data-side="a"]').value, bar.querySelector('[data-side="b"]').value);
    if (key === bar.shownPair) return;
    bar.shownPair = key;
    if (box.value && box.value !== bar.filled) return; // written by hand: kept for the pair chosen now
    box.value = bar.filled = turn.pairs.get(key)?.note || '';
  }

  function nextPair(turn, calls) {
    for (let i = 0; i < calls.length; i += 1) {
      for (let j = i + 1; j < calls.length; j += 1) {
        if (!turn.pairs.has(pairKey(calls[i], calls[j]))) return [calls[i], calls[j]];
      }
    }
    return null;
  }

  function remember(turn, pair) {
    turn.pairs.set(pairKey(pair.better, pair.worse), pair);
  }

  async function judgePair(turn, choice) {
    const bar = turn.compare;
    const a = bar.querySelector('[data-side="a"]').value;
    const b = bar.querySelector('[data-side="b"]').value;
    const state = bar.querySelector('.compare-state');
    if (!a || !b || a === b) { state.textContent = 'Pick two different answers as A and B.'; return; }
    const note = bar.querySelector('input.note').value.trim();
    const body = choice === 'a' ? { better: a, worse: b } : choice === 'b' ? { better: b, worse: a } : { [choice]: [a, b] };
    const result = await api('POST', '/ui/api/verdict', verdictBody(turn.names, { ...body, note }));
    if (!result.ok) { state.textContent = message(result); return; }
    for (const pair of result.data.recorded?.pairs || []) remember(turn, pair);
    bar.shownPair = null; // the next pair's note (or this one's, judged again) fills the box
    bar.filled = bar.querySelector('input.note').value; // the note just saved is the pair's, not typed
    state.textContent = 'Saved.';
    refreshCompare(turn, true);
    turn.judged(result.data);
  }

  // Enter in the pair's note: the pair chosen judged already, judged again as it was, with the note.
  function pairNoteSaved(bar) {
    const [a, b] = [bar.querySelector('[data-side="a"]').value, bar.querySelector('[data-side="b"]').value];
    const known = bar.turn.pairs.get(pairKey(a, b));
    if (known) {
      judgePair(bar.turn, known.outcome === 'better' ? (known.better === a ? 'a' : 'b') : known.outcome);
      return;
    }
    bar.focus();
    bar.querySelector('.compare-state').textContent = 'Now A, B, T or X saves the note with the pair.';
  }

  // ------------------------------------------------- mouse and keyboard

  document.addEventListener('click', (event) => {
    const card = event.target.closest('.seat-card');
    const bar = event.target.closest('section.compare');
    const button = event.target.closest('button');
    if (!button) return;
    if (card?.seat) {
      if (button.dataset.verdict) judgeSeat(card.seat, button.dataset.verdict === 'useful');
      else if (button.hasAttribute('data-best')) best(card.seat);
      else if (button.hasAttribute('data-copy-answer')) copyText(bw.reasoning(card.seat.text).answer, button); // its reasoning folded, not copied
    } else if (bar?.turn && button.dataset.pair) {
      judgePair(bar.turn, button.dataset.pair);
    }
  });

  // The keys (listed on the page): digits go to a seat, M to the merged
  // answer; U, N, E, P, C act on the seat in focus (U, N, E on the merged
  // answer); A, B, T, X judge the pair in the compare bar of the turn in
  // focus (else the latest), O writes its note (E too, the bar in focus).
  // A key typed into a field is the field's.
  const SEAT_KEYS = { u: 'useful', n: 'not_useful', e: 'note', p: 'best', c: 'copy' };
  const PAIR_KEYS = { a: 'a', b: 'b', t: 'tie', x: 'both_bad' };

  // The latest ask on the page: the Ask page's last turn, Recent asks' top one (drawn newest first).
  function latest() {
    return Turn.all.filter((t) => t.root.isConnected).reduce((found, t) => (!found || t.at >= found.at ? t : found), null);
  }

  document.addEventListener('keydown', (event) => {
    const target = event.target;
    const mergeCard = target.closest?.('.merged-card');
    const mergeBarOf = mergeCard?.querySelector('footer.judge');
    if (target.matches?.('input.note') && mergeBarOf) {
      if (event.key === 'Escape') { event.preventDefault(); mergeCard.focus(); }
      if (event.key === 'Enter') { event.preventDefault(); mergeBarOf.saveNote(); }
      return;
    }
    // The pair's note: Esc leaves it for the keys (A, B, T, X save it with the pair); Enter saves it
    // with the pair's verdict, or, the pair not judged yet, leaves it so too, saying so.
    const compare = target.closest?.('section.compare');
    if (target.matches?.('input.note') && compare) {
      if (event.key === 'Escape') { event.preventDefault(); compare.focus(); }
      if (event.key === 'Enter') { event.preventDefault(); pairNoteSaved(compare); }
      return;
    }
    if (target.matches?.('input.note') && target.closest('.seat-card')) {
      const seat = target.closest('.seat-card').seat;
      if (event.key === 'Escape') { event.preventDefault(); seat.card.focus(); }
      if (event.key === 'Enter') {
        event.preventDefault();
        const given = seat.verdict || seat.pending;
        if (given) judgeSeat(seat, given === 'useful');
        else { // the keys back to the answer, so the U or N it asks for is a verdict, not the note's
          seat.card.querySelector('.judge-state').textContent = 'Now Useful or Not useful saves the note with the verdict.';
          seat.card.focus();
        }
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || target.closest?.('input, textarea, select, [contenteditable]')) return;
    const key = event.key.toLowerCase();
    const turn = target.closest?.('section.turn')?.turn || latest();
    if (!turn) return;
    if (/^[1-9]$/.test(key)) { event.preventDefault(); turn.focusSeat(Number(key) - 1); return; }
    if (key === 'm') { // to the merged answer, judged as an answer is
      const merged = turn.mergedBox.querySelector('.merged-card');
      if (merged) { event.preventDefault(); merged.focus(); }
      return;
    }
    if (target === mergeCard && mergeBarOf && ['u', 'n', 'e'].includes(key)) {
      event.preventDefault();
      if (key === 'e') mergeBarOf.querySelector('input.note').focus();
      else mergeBarOf.give(key === 'u');
      return;
    }
    if ((key === 'o' || (key === 'e' && target === turn.compare)) && !turn.compare.hidden) {
      event.preventDefault();
      turn.compare.querySelector('input.note').focus();
      return;
    }
    const card = target.closest?.('.seat-card');
    if (card?.seat && JUDGEABLE.has(card.seat.status) && SEAT_KEYS[key]) {
      event.preventDefault();
      const action = SEAT_KEYS[key];
      if (action === 'useful' || action === 'not_useful') judgeSeat(card.seat, action === 'useful');
      else if (action === 'note') card.querySelector('input.note').focus();
      else if (action === 'best') { if (!turn.compare.hidden) best(card.seat); }
      else if (card.seat.text && !card.seat.cut) copyText(bw.reasoning(card.seat.text).answer, card.querySelector('[data-copy-answer]'));
      return;
    }
    if (PAIR_KEYS[key] && !turn.compare.hidden) { event.preventDefault(); judgePair(turn, PAIR_KEYS[key]); }
  });

  window.bw = Object.assign(window.bw || {}, { Turn, seatNames, copyText, costText });
})();
