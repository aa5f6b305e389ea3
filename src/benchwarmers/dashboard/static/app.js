// The dashboard's script: our own, small, no library. Pages render on the
// server; this posts their forms as JSON to /ui/api/ (with the CSRF token),
// puts a refusal beside the field it names, and keeps the live parts live
// by polling small JSON routes (the onboarding chip and queue). Asking,
// judging and Recent asks have their own files (ask.js, judge.js,
// markdown.js, recent.js), on `window.bw`'s helpers from here.
(() => {
  'use strict';

  const csrf = document.querySelector('meta[name="csrf"]')?.content || '';
  const page = document.body.dataset.page;

  // ------------------------------------------------------------ requests

  // `headers`: more request headers (a poll's If-None-Match); the result's `headers` are the reply's.
  async function api(method, url, body, headers) {
    const init = { method, headers: { accept: 'application/json', ...headers }, credentials: 'same-origin' };
    if (method !== 'GET') {
      init.headers['content-type'] = 'application/json';
      init.headers['x-csrf-token'] = csrf;
      init.body = JSON.stringify(body || {});
    }
    const response = await fetch(url, init);
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (response.status === 401) { location.href = '/login?next=' + encodeURIComponent(location.pathname); }
    return { ok: response.ok, status: response.status, data, headers: response.headers };
  }

  // "2026-12-01T09:12:36.257+00:00" -> "2026-12-01 09:12:36 UTC" (as the pages' own times read).
  function readable(iso) {
    return iso.replace('T', ' ').replace(/\.\d+/, '').replace('+00:00', ' UTC');
  }

  // Any ISO 8601 moments inside a text (a step, an error) -> "2026-12-01 09:12 UTC".
  const ISO_MOMENT = /\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?/g;
  function humane(text) {
    return (text || '').replace(ISO_MOMENT, (iso) => {
      const moment = new Date(/Z|[+-]\d\d:\d\d$/.test(iso) ? iso : iso + 'Z');
      return Number.isNaN(moment.getTime()) ? iso : moment.toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
    });
  }

  function message(result) {
    return result.data?.error?.message || `the server answered ${result.status}`;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === false || value === null || value === undefined) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('data-') || key.startsWith('aria-') || key === 'type' || key === 'name' || key === 'value' || key === 'href' || key === 'id' || key === 'for' || key === 'title' || key === 'datetime') node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(child);
    return node;
  }

  // What the page's other scripts (markdown.js, judge.js, ask.js, leaderboard.js) share.
  window.bw = Object.assign(window.bw || {}, { api, el, csrf, page, message, readable, humane, clearErrors, showError });

  // --------------------------------------------------------------- forms

  function formBody(form, submitter) {
    const body = {};
    const lists = new Set();
    for (const input of form.querySelectorAll('input[name], select[name], textarea[name]')) {
      if (input.disabled) continue;
      const name = input.name;
      if (input.type === 'checkbox') {
        const group = form.querySelectorAll(`input[type="checkbox"][name="${name}"]`);
        if (group.length > 1 || input.hasAttribute('value')) {
          lists.add(name);
          body[name] = body[name] || [];
          if (input.checked) body[name].push(input.value);
        } else {
          body[name] = input.checked;
        }
      } else if (input.type === 'radio') {
        if (input.checked) body[name] = input.value;
      } else {
        body[name] = input.value;
      }
    }
    if (submitter && submitter.name) body[submitter.name] = submitter.value;
    return body;
  }

  function clearErrors(form) {
    for (const slot of form.querySelectorAll('[data-error-for]')) slot.textContent = '';
    for (const bad of form.querySelectorAll('[aria-invalid]')) bad.removeAttribute('aria-invalid');
  }

  function showError(form, result) {
    const field = result.data?.error?.field || '';
    let slot = field ? form.querySelector(`[data-error-for="${CSS.escape(field)}"]`) : null;
    if (!slot) slot = form.querySelector('[data-error-for=""]') || form.querySelector('[data-error-for]');
    if (slot) slot.textContent = message(result);
    const input = field ? form.querySelector(`[name="${CSS.escape(field)}"]`) : null;
    if (input) { input.setAttribute('aria-invalid', 'true'); input.focus(); }
  }

  const done = {
    reload: () => showChange(),
    queue: (form) => {
      for (const box of form.querySelectorAll('input[type="checkbox"]:checked')) box.checked = false;
      ticked.clear();
      refreshQueue();
      document.getElementById('queue')?.scrollIntoView({ block: 'start' });
    },
    secret: (form, data) => {
      sessionStorage.setItem('bw-new-secret', data.secret);
      location.reload();
    },
  };

  document.addEventListener('submit', async (event) => {
    const form = event.target.closest('form[data-api]');
    if (!form) return;
    event.preventDefault();
    clearErrors(form);
    const buttons = form.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const result = await api('POST', form.dataset.api, formBody(form, event.submitter));
      if (!result.ok) { showError(form, result); return; }
      const then = form.dataset.done || 'reload';
      if (then.startsWith('/')) {
        const extra = form.dataset.doneField ? encodeURIComponent(form.elements[form.dataset.doneField].value.trim()) : '';
        location.href = then + extra;
      } else {
        done[then](form, result.data);
      }
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  });

  for (const form of document.querySelectorAll('form[data-api]')) form.noValidate = true;
  document.querySelector('form[data-focus] input')?.focus();

  document.addEventListener('change', (event) => {
    const form = event.target.closest('form[data-submit-on-change]');
    if (form) form.requestSubmit();
  });

  // ------------------------------------------------------ live parts
  // A part of a page marked `data-live` (with an id) shows what changes
  // without the user doing anything here: models onboarded or resting (Bench),
  // an endpoint's model count, the quotas. The page is fetched again and each
  // part that changed is swapped in place, after an action here at once and
  // otherwise every LIVE_MS, never while the user is working inside it (focus
  // in it, a disclosure open, a test result showing).
  const LIVE_MS = 3000;
  function liveParts() { return [...document.querySelectorAll('[data-live][id]')]; }
  function busy(part) {
    const focused = document.activeElement;
    return (focused && focused !== document.body && part.contains(focused))
      || part.querySelector('details[open]') !== null
      || [...part.querySelectorAll('output')].some((o) => o.textContent.trim())
      || part.querySelector('.error[data-post-error]') !== null
      || [...part.querySelectorAll('input, select, textarea')].some(edited);
  }
  // A field the user changed and has not sent yet: its part is not redrawn under it.
  function edited(input) {
    if (input.type === 'hidden') return false;
    if (input.type === 'checkbox' || input.type === 'radio') return input.checked !== input.defaultChecked;
    if (input.tagName === 'SELECT') {
      const initial = Math.max([...input.options].findIndex((o) => o.defaultSelected), 0);
      return input.selectedIndex !== initial;
    }
    return input.value !== input.defaultValue;
  }
  // One load at a time, the last asked for wins: a newer one cancels the one on its way (a
  // stale page is never drawn over a newer choice), and is forced if any it replaced was.
  let liveTimer = null;
  let liveLoad = null; // { abort: AbortController, force }
  async function refreshLive(force) {
    clearTimeout(liveTimer);
    if (!liveParts().length) return false;
    const load = { abort: new AbortController(), force: Boolean(force || liveLoad?.force) };
    liveLoad?.abort.abort();
    liveLoad = load;
    try {
      if (load.force || !document.hidden) {
        const response = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin', signal: load.abort.signal });
        const html = await response.text();
        // A refusal (a collection removed since) is drawn when it was asked for, never by a poll.
        if (liveLoad === load && (response.ok || load.force) && !response.redirected) {
          const fresh = new DOMParser().parseFromString(html, 'text/html');
          for (const part of liveParts()) {
            const next = fresh.getElementById(part.id);
            if (!next || next.innerHTML === part.innerHTML || (!load.force && busy(part))) continue;
            const adopted = document.adoptNode(next);
            part.replaceWith(adopted);
            for (const form of adopted.querySelectorAll('form[data-api]')) form.noValidate = true;
          }
          document.dispatchEvent(new CustomEvent('bw:live-updated'));
        }
      }
    } catch (error) {
      if (error.name !== 'AbortError') throw error;
    } finally {
      if (liveLoad === load) {
        liveLoad = null;
        liveTimer = setTimeout(refreshLive, LIVE_MS);
      }
    }
    return true;
  }
  // After an action here: the live parts in place, else (a page without any) a reload.
  async function showChange() {
    if (!(await refreshLive(true))) location.reload();
  }
  if (liveParts().length) {
    liveTimer = setTimeout(refreshLive, LIVE_MS);
    document.addEventListener('bw:queue-changed', () => refreshLive());
    document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshLive(); });
  }

  // A GET form marked `data-live-query` (the Leaderboard's collection) shows a choice at once, in
  // place: the address becomes the choice's (Back and Forward go through the choices, the picker
  // following), its live parts are drawn for it, and the last choice wins over a load on its way.
  // Its submit button (Show) does the same.
  const queryForm = document.querySelector('form[data-live-query]');
  async function showQuery() {
    const url = new URL(queryForm.action, location.href);
    url.search = new URLSearchParams(new FormData(queryForm)).toString();
    if (url.href !== location.href) history.pushState(null, '', url.href);
    await showChange();
  }
  if (queryForm) {
    queryForm.addEventListener('submit', (event) => { event.preventDefault(); showQuery(); });
    queryForm.addEventListener('change', showQuery);
    window.addEventListener('popstate', () => {
      const asked = new URLSearchParams(location.search);
      for (const select of queryForm.querySelectorAll('select[name]')) {
        const wanted = (asked.get(select.name) || '').replace(/^bench\//, '');
        select.value = ([...select.options].find((o) => o.value === wanted) || select.options[0])?.value ?? '';
      }
      showChange();
    });
  }

  // A button that posts, then shows the change: retire, restore, remove, dismiss, revoke.
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-post]');
    if (!button) return;
    if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
    button.disabled = true;
    const result = await api('POST', button.dataset.post, button.dataset.body ? JSON.parse(button.dataset.body) : {});
    button.disabled = false;
    if (result.ok) { await showChange(); return; }
    const note = button.parentElement.querySelector('.error[data-post-error]') || el('small', { class: 'error', 'data-post-error': '1', role: 'alert' });
    note.textContent = message(result);
    button.after(note);
  });

  // "Use it" for a found local Ollama: fill the add form.
  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-fill]');
    if (!button) return;
    const form = document.getElementById(button.dataset.fillForm);
    for (const [name, value] of Object.entries(JSON.parse(button.dataset.fill))) {
      const input = form.elements[name];
      if (input.type === 'checkbox') input.checked = Boolean(value); else input.value = value;
    }
    form.elements.name.focus();
  });

  // Test a connection: what the endpoint lists now.
  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-test-endpoint]');
    if (!button) return;
    const name = button.dataset.testEndpoint;
    const out = document.querySelector(`[data-test-result="${CSS.escape(name)}"]`);
    out.textContent = 'testing…';
    const result = await api('GET', `/ui/api/endpoints/${encodeURIComponent(name)}/models`);
    if (!result.ok) { out.textContent = message(result); out.className = 'test-result bad'; return; }
    const data = result.data;
    out.className = 'test-result ' + (data.ok ? 'good' : 'bad');
    out.textContent = data.ok ? `connected: lists ${data.models.length} model(s)` : `failed: ${data.error}`;
  });

  // ------------------------------------------------- the onboarding chip

  // The queue, polled: the header chip counts what runs or is ready to run (an
  // item waiting for a rate limit to free is not "onboarding" and would keep
  // the chip up for hours); the Onboard page's table shows each item's outcome
  // in words and colour, its times readable, and Cancel on open items. When an
  // item changes, the lists whose tags it changes are drawn again.
  let queueTimer = null;
  let queueSeen = '';
  const queuedModels = new Set(); // "endpoint|served" of open items: not ticked twice
  async function refreshQueue() {
    clearTimeout(queueTimer);
    const result = await api('GET', '/ui/api/queue');
    if (!result.ok) return;
    const queue = result.data;
    const chip = document.getElementById('onboard-chip');
    const active = Boolean(queue.running) || queue.queued > 0;
    if (chip) {
      chip.hidden = !active;
      if (active) {
        const running = queue.running;
        const pct = running ? Math.round(running.progress * 100) : 0;
        chip.textContent = running
          ? `Onboarding ${running.alias || running.served}: ${running.step} ${pct}%` + (queue.queued ? ` · ${queue.queued} queued` : '')
          : `Onboarding: ${queue.queued} queued`;
      }
    }
    queuedModels.clear();
    for (const item of queue.items) if (item.state === 'queued' || item.state === 'running') queuedModels.add(`${item.endpoint}|${item.served}`);
    renderQueue(queue);
    const seen = queue.items.map((i) => `${i.id}:${i.state}:${i.alias}`).join(',');
    if (queueSeen && seen !== queueSeen) document.dispatchEvent(new CustomEvent('bw:queue-changed'));
    queueSeen = seen;
    queueTimer = setTimeout(refreshQueue, active || queue.waiting ? 1000 : 8000);
  }

  const OUTCOME_WORDS = { ok: 'done', unavailable: 'no answer', failed: 'failed', cancelled: 'cancelled', running: 'running', queued: 'queued', waiting: 'waiting' };

  function itemWhen(item) {
    if (item.outcome === 'waiting' && item.not_before) return `until ${humane(item.not_before)}`;
    if (item.finished_at) return humane(item.finished_at);
    if (item.started_at) return `since ${humane(item.started_at)}`;
    return humane(item.created_at);
  }

  function renderQueue(queue) {
    const body = document.querySelector('#queue-table tbody');
    if (!body) return;
    const rows = queue.items.slice().reverse().map((item) => {
      const open = item.state === 'queued' || item.state === 'running';
      // A failure's step is where it stopped; its error says why (a model that did not answer says it in its step).
      const detail = item.error && item.outcome === 'failed' ? `${item.step}: ${item.error}` : item.step;
      return el('tr', { 'data-item': item.id, 'data-state': item.state, 'data-outcome': item.outcome },
        el('th', { scope: 'row', text: item.alias || item.served }),
        el('td', { text: item.endpoint }),
        el('td', { text: item.mode }),
        el('td', {}, el('span', { class: `status q-${item.outcome}`, text: OUTCOME_WORDS[item.outcome] || item.outcome })),
        el('td', { class: 'prose-cell', text: humane(detail) }),
        el('td', {}, el('progress', { max: 1, value: item.progress, 'aria-label': `${Math.round(item.progress * 100)}%` })),
        el('td', { class: 'nowrap', text: itemWhen(item) }),
        el('td', {}, open ? el('button', { type: 'button', class: 'small danger', 'data-cancel-item': item.id, text: 'Cancel', 'aria-label': `Cancel onboarding ${item.alias || item.served}` }) : null),
      );
    });
    if (!rows.length) rows.push(el('tr', {}, el('td', { colSpan: 8, text: 'Nothing queued.' })));
    body.replaceChildren(...rows);
  }

  document.addEventListener('click', async (event) => {
    const button = event.target.closest('button[data-cancel-item]');
    if (!button) return;
    button.disabled = true;
    const result = await api('POST', `/ui/api/queue/${button.dataset.cancelItem}/cancel`, {});
    if (!result.ok) {
      button.disabled = false;
      button.after(el('small', { class: 'error', role: 'alert', text: message(result) }));
      return;
    }
    refreshQueue();
  });

  // The first read of the queue, awaited by lists whose tags it decides (drawn before it, an
  // item already queued would show a box that can be ticked again).
  const firstQueueRead = page !== 'login' ? refreshQueue() : Promise.resolve();

  // ---------------------------------------- Onboard: the endpoint's list

  // `again`: the queue changed, the list is drawn anew with its tags, the old one shown meanwhile.
  async function loadListed(select, again) {
    const list = document.getElementById(select.dataset.listsModels);
    const state = document.getElementById('listed-state');
    const keep = new Set([...list.querySelectorAll('input:checked')].map((box) => box.value));
    if (!again) {
      state.textContent = `Asking ${select.value} what it lists…`;
      list.replaceChildren();
    }
    const result = await api('GET', `/ui/api/endpoints/${encodeURIComponent(select.value)}/models`);
    if (!result.ok || !result.data.ok) {
      state.textContent = result.ok ? `Could not list: ${result.data.error}` : message(result);
      return;
    }
    const models = result.data.models;
    await firstQueueRead;
    state.textContent = models.length ? `${models.length} model(s). Tick the ones to onboard.` : 'The endpoint lists no models.';
    // Gathered in a fragment, not spread into one call: an endpoint listing 150,000 models
    // overflowed the stack, and the list stayed empty under "150000 model(s)".
    const rows = document.createDocumentFragment();
    for (const m of models) {
      const queued = queuedModels.has(`${select.value}|${m.served}`);
      rows.append(el('li', {},
        el('label', {},
          el('input', { type: 'checkbox', name: 'models', value: m.served, disabled: Boolean(m.alias) || queued, checked: keep.has(m.served) && !queued }),
          ' ' + m.served + ' ',
          m.alias ? el('span', { class: 'tag', text: `on the bench as ${m.alias}` }) : null,
          queued ? el('span', { class: 'tag', text: 'in the queue' }) : null)));
    }
    list.replaceChildren(rows);
  }

  const endpointSelect = document.querySelector('select[data-lists-models]');
  if (endpointSelect) {
    const wanted = new URLSearchParams(location.search).get('endpoint');
    if (wanted && [...endpointSelect.options].some((o) => o.value === wanted)) endpointSelect.value = wanted;
    endpointSelect.addEventListener('change', () => loadListed(endpointSelect));
    document.addEventListener('bw:queue-changed', () => loadListed(endpointSelect, true));
    loadListed(endpointSelect);
  }

  // ------------------------------------------------ Onboard: Discover

  // The list is long (all of models.dev): it is fetched once and drawn here,
  // the first DISCOVER_SHOWN matches of the search, ticked entries always kept.
  const DISCOVER_SHOWN = 30;
  let discovered = null; // until the list has come
  const ticked = new Set();

  function discoverRow(d) {
    const tags = [];
    if (d.free) tags.push(el('span', { class: 'tag good', text: 'free' }));
    else if (d.free_tier) tags.push(el('span', { class: 'tag good', text: 'free tier' }));
    if (d.reachable.length) tags.push(el('span', { class: 'tag', text: `via ${d.reachable.join(', ')}` }));
    if (d.on_bench) tags.push(el('span', { class: 'tag', text: `on the bench as ${d.on_bench}` }));
    const box = el('input', { type: 'checkbox', name: 'models', value: d.model, disabled: Boolean(d.on_bench), checked: ticked.has(d.model) });
    box.addEventListener('change', () => { if (box.checked) ticked.add(d.model); else ticked.delete(d.model); });
    return el('li', {},
      el('label', {}, box, ' ' + d.name + ' ', el('small', { text: d.id }), ...tags),
      el('button', { type: 'button', class: 'small', 'data-dismiss': d.id, text: 'Dismiss', 'aria-label': `Dismiss ${d.name}` }));
  }

  function drawDiscover() {
    const list = document.getElementById('discover-list');
    if (!list || !discovered) return;
    const words = document.getElementById('discover-search').value.toLowerCase().split(/\s+/).filter(Boolean);
    const freeOnly = document.getElementById('discover-free').checked;
    const matches = discovered.models.filter((d) => {
      const text = `${d.name} ${d.id}`.toLowerCase();
      return words.every((w) => text.includes(w)) && (!freeOnly || d.free || d.free_tier);
    });
    const shown = matches.slice(0, DISCOVER_SHOWN);
    const kept = discovered.models.filter((d) => ticked.has(d.model) && !shown.includes(d));
    list.replaceChildren(...kept.concat(shown).map(discoverRow));
    document.getElementById('discover-state').textContent = matches.length > shown.length
      ? `${matches.length} match; the first ${shown.length} are shown: search to narrow them.`
      : `${matches.length} match.`;
    const box = document.getElementById('dismissed-box');
    box.hidden = !discovered.dismissed.length;
    document.getElementById('dismissed-count').textContent = discovered.dismissed.length;
    document.getElementById('dismissed').replaceChildren(...discovered.dismissed.map((d) => el('li', {},
      d.name + ' ', el('small', { text: d.id }), ' ',
      el('button', { type: 'button', class: 'small', 'data-undismiss': d.id, text: 'Show again' }))));
  }

  async function loadDiscover() {
    const result = await api('GET', '/ui/api/discover');
    if (!result.ok) { document.getElementById('discover-state').textContent = message(result); return; }
    discovered = result.data;
    drawDiscover();
  }

  if (document.getElementById('discover-list')) {
    document.getElementById('discover-search').addEventListener('input', drawDiscover);
    document.getElementById('discover-free').addEventListener('change', drawDiscover);
    document.addEventListener('bw:queue-changed', loadDiscover);
    document.addEventListener('click', async (event) => {
      const button = event.target.closest('button[data-dismiss], button[data-undismiss]');
      if (!button) return;
      const undo = button.hasAttribute('data-undismiss');
      const id = undo ? button.dataset.undismiss : button.dataset.dismiss;
      const result = await api('POST', undo ? '/ui/api/discover/restore' : '/ui/api/discover/dismiss', { id });
      if (result.ok) await loadDiscover();
    });
    loadDiscover();
  }

  // ------------------------------------------------ a new key, shown once

  const secret = sessionStorage.getItem('bw-new-secret');
  if (secret && page === 'settings') {
    sessionStorage.removeItem('bw-new-secret');
    document.getElementById('new-secret-value').textContent = secret;
    document.getElementById('new-secret').hidden = false;
  }
  document.getElementById('copy-secret')?.addEventListener('click', async (event) => {
    await navigator.clipboard.writeText(document.getElementById('new-secret-value').textContent);
    event.target.textContent = 'Copied';
  });

  // The page's scripts are wired up (tests wait for this; it names the page as the navigation
  // does): set once every deferred script of the page (ask.js, judge.js...) has run.
  document.addEventListener('DOMContentLoaded', () => {
    document.body.dataset.ready = document.querySelector('nav a[aria-current="page"]')?.textContent || page;
  });
})();
