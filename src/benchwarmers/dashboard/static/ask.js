// The Ask page: a question to a collection's panel, its answers streamed
// into each seat as they are written (`/ui/api/ask` sends NDJSON: started,
// seat_text deltas, seat, merged, done), a Stop that aborts the stream (the
// server then cancels the seats still writing), and follow-up turns to the
// same seats or one chosen seat, with the conversation so far (one carried
// answer a turn, or each seat its own answers: `threads`). Judging is
// `judge.js`'s, in place under each answer.
(() => {
  'use strict';

  const { csrf, clearErrors, showError, el } = window.bw;
  const form = document.getElementById('ask-form');
  if (!form) return;
  const follow = document.getElementById('follow-up');
  const state = document.getElementById('ask-state');
  const stop = document.getElementById('ask-stop');
  const conversationBox = document.getElementById('conversation');
  const blindBox = document.getElementById('f-blind');
  const collectionSelect = form.elements.collection;

  // The conversation on the page: its collection, the seats' names, and each
  // turn (question, the Turn drawing it, who was asked).
  let conversation = null;
  let running = null; // the AbortController of the stream in flight

  // Blind and Merged answer start as the collection says (its `blind`, its reply `merged`), changed
  // here for one ask; a collection that replies merged merges every ask, so its box cannot be unticked.
  function collectionDefaults() {
    const chosen = collectionSelect.selectedOptions[0]?.dataset || {};
    blindBox.checked = chosen.blind === '1';
    form.elements.merged.checked = chosen.merged === '1';
    form.elements.merged.disabled = chosen.merged === '1';
  }
  collectionSelect.addEventListener('change', collectionDefaults);
  collectionDefaults();

  // A reload (or a page left) while the panel answered stopped it: the question comes back in its box,
  // saying so, rather than a blank page (the answers already in are in Recent asks, kept or not).
  const ASKING = 'bw-asking';
  const unfinished = JSON.parse(sessionStorage.getItem(ASKING) || 'null');
  sessionStorage.removeItem(ASKING);
  if (unfinished && !form.elements.prompt.value && [...collectionSelect.options].some((o) => o.value === unfinished.collection)) {
    collectionSelect.value = unfinished.collection;
    collectionDefaults();
    form.elements.prompt.value = unfinished.question;
    state.textContent = 'The page was left while the panel answered, which stopped it: its question is back here to ask again (what had answered is in Recent asks).';
  }

  form.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  follow.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) follow.requestSubmit();
  });

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const merged = form.elements.merged.checked;
    // Blind, the server names the seats by handles until judged (`dashboard/blind.py`).
    conversation = { collection: collectionSelect.value, names: bw.seatNames(blindBox.checked, { handles: true }), merged, turns: [] };
    conversationBox.replaceChildren();
    const question = form.elements.prompt.value;
    ask(form, { collection: conversation.collection, prompt: question, merged, blind: blindBox.checked }, question);
  });

  follow.addEventListener('submit', (event) => {
    event.preventDefault();
    const question = follow.elements.prompt.value;
    if (!question.trim()) { // said as the first question's is, not as the server's "last turn must be the user's"
      clearErrors(follow);
      showError(follow, { status: 400, data: { error: { field: 'prompt', message: 'the question is required' } } });
      return;
    }
    const to = offered.get(follow.elements.to.value) || '';
    const seats = to ? [to] : follow.elements.to.value === PANEL ? panelSeats() : lastSeats();
    // Each seat its own answers: every seat its own thread; `messages` stays the turn's pick's history.
    const each = !to && follow.elements.carry.value === EACH;
    ask(follow, {
      collection: conversation.collection,
      prompt: question,
      messages: history(to || (each ? '' : offered.get(follow.elements.carry.value)) || ''),
      seats,
      ...(each ? { threads: Object.fromEntries(seats.map((alias) => [alias, thread(alias)])) } : {}),
      merged: conversation.merged && !to, // the same panel merges again; one seat's answer is its own
      blind: conversation.names.blind,
    }, question);
  });

  // The carry choices for the merged answers and for each seat's own: no alias (they have no space)
  // nor seat label ("Seat A") is either.
  const MERGED = 'the merged answer';
  const EACH = 'each seat its own';
  // The send-to choice of every seat the conversation asked, after a turn that asked fewer (one chosen seat).
  const PANEL = 'the whole panel';

  // The seats of the latest turn that seated any (one stopped before its seats were named seated none).
  function lastSeats() {
    return conversation.turns.findLast((turn) => turn.aliases.length)?.aliases || [];
  }

  // Every seat the conversation asked, in any turn, by its seat letter.
  function panelSeats() {
    return conversation.names.order([...new Set(conversation.turns.flatMap((turn) => turn.aliases))]);
  }

  // Earlier questions, each followed by the answer carried forward: the
  // chosen model's (or the merge's, MERGED) where that turn had it, else the turn's pick.
  function history(alias) {
    return historyBy((view) => carried(view, alias));
  }

  // A seat's own thread: its own answer each turn it answered, else (it was not asked,
  // or failed) the turn's pick, so its turns still alternate question and answer.
  function thread(alias) {
    return historyBy((view) => view.judgeable().find((s) => s.alias === alias && s.text) || carried(view, ''));
  }

  function historyBy(answerOf) {
    const messages = [];
    for (const turn of conversation.turns) {
      messages.push({ role: 'user', content: turn.question });
      const answer = answerOf(turn.view);
      if (answer) messages.push({ role: 'assistant', content: bw.reasoning(answer.text).answer }); // its reasoning not sent back
    }
    return messages;
  }

  function carried(view, alias) {
    if (alias === MERGED && mergedAnswer(view)) return mergedAnswer(view);
    const seats = view.judgeable();
    return seats.find((s) => s.alias === alias)
      || seats.find((s) => s.call === view.best)
      || seats.find((s) => s.verdict === 'useful')
      || seats.find((s) => s.text);
  }

  function mergedAnswer(view) {
    const merge = view.mergedJson;
    return merge?.status === 'ok' && merge.content ? { text: merge.content } : null;
  }

  // A choice's value names its seat ("Seat B"), not its model, while a blind
  // panel's names are hidden: an option's value is in the page for anyone
  // (or any test) to read. `offered` maps each value back to its model.
  let offered = new Map();
  function seatValue(names, alias) { return names.revealed ? alias : names.label(alias); }

  // The follow-up form's choices: the same seats, or one of them; whose answer the history carries.
  function offerFollowUp() {
    const view = conversation.turns.at(-1).view;
    const seats = view.judgeable();
    // One chosen seat: any seat that answered a turn, not only the last turn's (back from one seat to another).
    // A turn with no answer (stopped, or every seat failed) ends no conversation that had one before it.
    const answered = panelSeats().filter((alias) => conversation.turns.some((turn) => turn.view.judgeable().some((s) => s.alias === alias)));
    follow.hidden = !answered.length;
    if (!answered.length) return;
    const names = conversation.names;
    offered = new Map(answered.map((alias) => [seatValue(names, alias), alias]));
    offered.set(MERGED, MERGED);
    const last = lastSeats();
    const panel = panelSeats();
    const labels = (aliases) => names.order(aliases).map((a) => names.label(a)).join(', ');
    follow.elements.to.replaceChildren(
      el('option', { value: '', text: `the same seats (${labels(last)})` }),
      ...(panel.length > new Set(last).size ? [el('option', { value: PANEL, text: `the whole panel again (${labels(panel)})` })] : []),
      ...answered.map((alias) => el('option', { value: seatValue(names, alias), text: `only ${names.shown(alias)}` })));
    // A merged turn carries its merge, unless an answer was picked best of the panel.
    const merge = mergedAnswer(view) !== null && !view.best;
    // The pick (else the first seat's) is chosen: "each seat its own answers", first, is asked for.
    const pick = merge ? null : carried(view, '') || seats[0];
    // Each seat its own thread: a panel that never merged (a merge reads one history).
    const threads = !conversation.merged && !conversation.turns.some((turn) => mergedAnswer(turn.view));
    follow.elements.carry.replaceChildren(
      ...(threads ? [el('option', { value: EACH, text: 'each seat its own answers' })] : []),
      ...(mergedAnswer(view) ? [el('option', { value: MERGED, text: 'the merged answers', selected: merge })] : []),
      ...(seats.length ? seats.map((s) => s.alias) : answered).map((alias) => el('option', { value: seatValue(names, alias), text: `${names.shown(alias)}'s answers`, selected: alias === pick?.alias })));
    follow.elements.carry.dataset.chosen = follow.elements.carry.value;
    sentTo();
  }

  // Each seat its own answers is a choice for the same seats: one chosen seat carries its own already.
  function sentTo() {
    const carry = follow.elements.carry;
    const each = carry.querySelector(`option[value="${EACH}"]`);
    if (!each) return;
    each.disabled = Boolean(offered.get(follow.elements.to.value));
    if (each.disabled && each.selected) carry.value = carry.dataset.chosen;
  }
  follow.elements.to.addEventListener('change', sentTo);

  // The carry choice names models: redraw it when a blind panel is revealed.
  function judged() {
    if (conversation && !running) offerFollowUp();
    if (conversation) leftOff(conversation.turns.at(-1));
    if (conversation && !running && conversation.turns.at(-1)?.finished) doneState(conversation.turns.at(-1));
  }

  // The turn's end, and what it cost. Blind, the cost waits for the names as each seat's does: a
  // price tells a model, and a turn to one chosen seat costs that seat's price.
  function doneState(turn) {
    const names = conversation.names;
    const known = turn.cost || (turn.view.askCost ? costLine(turn.view.askCost) : '');
    const cost = names.revealed ? (known ? ` ${known}` : '') : names.blind ? ' Its cost shows with the names.' : '';
    state.textContent = `Done. Judge the answers where they stand: their verdicts decide the next panel.${cost}`;
  }

  // The members left off the latest turn, and why. Blind, one that sat an earlier turn is its
  // seat ("Seat C left off: retired", not its model: a follow-up would name it so), one that
  // never sat "a member", until the names show.
  function leftOff(turn) {
    const names = conversation.names;
    const who = (alias) => (names.revealed && alias ? names.realName(alias) : alias && names.label(alias) !== alias ? names.label(alias) : 'a member');
    document.getElementById('left-off').replaceChildren(...(turn?.leftOff || []).map((x) => el('li', { class: 'hint', text: `${who(x.alias)} left off: ${names.hide(x.reason)}` })));
  }

  async function ask(source, body, question) {
    clearErrors(source);
    const button = source.querySelector('button[type="submit"]');
    button.disabled = true;
    follow.hidden = true;
    state.textContent = 'Asking…';
    document.getElementById('left-off').replaceChildren();
    const view = new bw.Turn(conversationBox, { collection: body.collection, names: conversation.names, question, onJudged: judged });
    const turn = { question, view, aliases: [] };
    // Sent (Ctrl+Enter leaves the focus in the question): the keys are the answers' now (1-9, U, N, A...),
    // not more letters of a question already asked; a refusal gives the box back.
    const typing = source.contains(document.activeElement) && document.activeElement.matches('textarea') ? document.activeElement : null;
    if (typing) {
      view.root.tabIndex = -1;
      view.root.focus({ preventScroll: true });
    }
    running = new AbortController();
    if (source === form) sessionStorage.setItem(ASKING, JSON.stringify({ collection: body.collection, question }));
    stop.hidden = false;
    let stopped = false;
    running.signal.addEventListener('abort', () => { stopped = true; });
    try {
      const response = await fetch('/ui/api/ask', {
        method: 'POST', credentials: 'same-origin', signal: running.signal,
        headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
        body: JSON.stringify(body),
      });
      if (!response.ok) {
        let data = null;
        try { data = await response.json(); } catch (e) { data = null; }
        // A follow-up refused may name a seat's model ("no model 'x' on the bench to seat"): blind, its seat.
        if (typeof data?.error?.message === 'string') data.error.message = conversation.names.hide(data.error.message);
        showError(source, { status: response.status, data });
        view.root.remove();
        state.textContent = '';
        return;
      }
      conversation.turns.push(turn);
      if (source === follow) follow.elements.prompt.value = ''; // asked: the box is for the next one
      await read(response, (event) => onEvent(event, turn));
      view.cut(); // a stream that closed before a seat's end: that seat was cut
      turn.finished = true;
      doneState(turn);
    } catch (error) {
      view.cut();
      state.textContent = stopped
        ? 'Stopped: the answers still being written were cancelled (they cost no verdict).'
        : `The stream broke: ${error.message}`;
    } finally {
      sessionStorage.removeItem(ASKING);
      running = null;
      stop.hidden = true;
      button.disabled = false;
      if (conversation.turns.includes(turn)) {
        // Blind, no answer to judge (every seat failed or was stopped) and nothing unjudged before it:
        // named now, so the failures' messages can be read.
        if (!view.judgeable().length) view.revealIfJudged();
        offerFollowUp();
        leftOff(turn);
      } else {
        if (source === follow) follow.hidden = false; // refused: the form stays, its error and question in it, to send again
        if (!document.activeElement || document.activeElement === document.body) typing?.focus(); // unless moved since
      }
    }
  }

  async function read(response, onLine) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (line.trim()) onLine(JSON.parse(line));
      }
    }
  }

  function onEvent(event, turn) {
    const view = turn.view;
    if (event.event === 'started') {
      turn.aliases = event.seats.map((s) => s.alias);
      turn.ask = event.ask || '';
      view.askId = turn.ask; // the names, once judged, bring its cost
      state.textContent = `${event.seats.length} seat(s) on ${event.collection}, shape ${event.shape}` + (event.merged ? ', then a merge' : '') + '…';
      view.start(event.seats, event.merged);
      turn.leftOff = event.left_off;
      leftOff(turn);
    } else if (event.event === 'seat_text') {
      view.text(event.seat, event.text);
    } else if (event.event === 'seat') {
      view.done(event.seat);
    } else if (event.event === 'merge_text') {
      view.mergeText(event.text, event.call);
    } else if (event.event === 'merged') {
      view.merged(event.merged);
    } else if (event.event === 'done' && event.costUsd !== undefined) {
      turn.cost = costLine(event); // blind, the stream leaves it out: the names bring it (`askCost`)
    }
  }

  // The ask's cost: the known prices' sum, and whether some call's price was unknown.
  function costLine({ costUsd, costComplete }) {
    return `This ask cost ${bw.costText(costUsd)}` + (costComplete ? '.' : ' (and some calls whose price is unknown).');
  }

  stop.addEventListener('click', () => running?.abort());
  // Out of view (the answers read further down), Stop floats at the window's foot: in reach by touch too.
  new IntersectionObserver(([row]) => stop.classList.toggle('floating', !row.isIntersecting)).observe(stop.parentElement);

  // The asks on the page, looked at again every few seconds (Recent asks' first page, with its
  // ETag: a 304 while nothing changed): a verdict or a pair given elsewhere (the API, the CLI,
  // another tab) shows on its card, so nobody judges against what they cannot see. Its kept text
  // is not needed here (the cards have it): read cut to a character (`head`), megabytes never sent.
  let asksTag = '';
  let seen = new Map(); // the asks as last read, by ask id: a card that waited is synced from it later
  async function lookAgain() {
    const turns = (conversation?.turns || []).filter((turn) => turn.ask);
    if (turns.length && !running && !document.hidden) {
      const result = await bw.api('GET', '/ui/api/asks?head=1', null, asksTag ? { 'if-none-match': asksTag } : {});
      if (result.ok) {
        asksTag = result.headers.get('etag') || '';
        seen = new Map(result.data.asks.map((ask) => [ask.ask, ask]));
      }
      // A card whose field is in use waits (`Turn.sync`), and is synced here at a later look.
      for (const turn of turns) if (seen.has(turn.ask)) turn.view.sync(seen.get(turn.ask));
    }
    setTimeout(lookAgain, 3000);
  }
  setTimeout(lookAgain, 3000);

  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented) return;
    if (event.key === 'Escape' && running) { event.preventDefault(); running.abort(); return; }
    if (event.key.toLowerCase() === 'f' && !event.ctrlKey && !event.metaKey && !event.altKey
      && !event.target.closest?.('input, textarea, select') && !follow.hidden) {
      event.preventDefault();
      follow.elements.prompt.focus();
    }
  });
})();
