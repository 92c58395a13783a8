// taskq serve: live updates and small comforts. Every page works without
// this script; it only keeps a page current and adds buttons.
'use strict';
(function () {
  const body = document.body;
  if (!body || !body.dataset.live) { return; }
  const status = document.getElementById('live');
  const say = (text) => { if (status) { status.textContent = text; } };

  // Times: relative as the server wrote them; a switch shows them in UTC
  // or local time, remembered.
  const tz = document.getElementById('tz');
  const showTimes = () => {
    const mode = localStorage.getItem('taskq-times') || 'relative';
    if (tz) { tz.textContent = mode === 'relative' ? 'times: relative' : mode === 'utc' ? 'times: UTC' : 'times: local'; }
    document.querySelectorAll('time[datetime]').forEach((el) => {
      if (!el.dataset.rel) { el.dataset.rel = el.textContent; }
      const d = new Date(el.getAttribute('datetime'));
      if (mode === 'utc') { el.textContent = d.toISOString().replace('.000Z', 'Z'); }
      else if (mode === 'local') { el.textContent = d.toLocaleString(); }
      else { el.textContent = el.dataset.rel; }
      el.title = d.toISOString();
    });
  };
  if (tz) {
    tz.hidden = false;
    tz.addEventListener('click', () => {
      const order = ['relative', 'utc', 'local'];
      const now = localStorage.getItem('taskq-times') || 'relative';
      localStorage.setItem('taskq-times', order[(order.indexOf(now) + 1) % 3]);
      showTimes();
    });
  }

  // Copy buttons beside each action's CLI twin.
  const wireCopies = () => {
    document.querySelectorAll('button.copy[data-copy]').forEach((b) => {
      b.hidden = !navigator.clipboard;
      b.onclick = () => navigator.clipboard.writeText(b.dataset.copy).then(() => { b.textContent = 'Copied'; });
    });
  };

  // Fetch this page again and put its <main> in place, unless the reader
  // is using a form of it: typing in it, a box ticked, or a choice made
  // and left (a bulk action chosen, its button not yet pressed: a fresh
  // <main> would put the form back as it was, and the button would send
  // what the reader did not choose). Then the page stays as it is until
  // they leave it, and says so (data-held on <body>).
  let busy = false;
  let used = false;
  const mark = (e) => { if (e.target instanceof Element && e.target.closest('main')) { used = true; } };
  document.addEventListener('input', mark, true);
  document.addEventListener('change', mark, true);
  const reading = () => {
    const active = document.activeElement;
    return used
      || (active && active.closest('main') && /INPUT|SELECT|TEXTAREA/.test(active.tagName))
      || document.querySelector('main input[type=checkbox]:checked') !== null;
  };
  const hold = () => { body.dataset.held = 'yes'; say('live: held while you use this page'); };
  let again = false; // a change heard while a fetch was under way
  const refresh = async () => {
    if (busy) { again = true; return; }
    if (document.hidden) { return; }
    if (reading()) { hold(); return; }
    busy = true;
    try {
      const res = await fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin' });
      if (res.ok) {
        const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
        const fresh = doc.getElementById('main');
        const main = document.getElementById('main');
        // Asked again: the reader may have ticked or typed while it loaded.
        if (fresh && main && !reading()) { main.replaceWith(fresh); showTimes(); wireCopies(); } else if (fresh) { hold(); }
      }
    } catch (e) { /* the next change tries again */ }
    busy = false;
    if (again) { again = false; refresh(); }
  };

  // A running task's output, followed every 2 s while the tab is visible
  // (serve keeps each answer a second for every page that follows it).
  const follow = async () => {
    if (document.hidden) { return; }
    for (const pre of document.querySelectorAll('pre[data-follow]')) {
      try {
        const res = await fetch(pre.dataset.follow + '&after=' + pre.dataset.after,
          { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
        if (!res.ok) { delete pre.dataset.follow; continue; }
        const got = await res.json();
        if (got.data) { pre.append(got.data); }
        pre.dataset.after = got.after;
        if (!got.running) { delete pre.dataset.follow; }
      } catch (e) { /* the next turn tries again */ }
    }
  };
  setInterval(follow, 2000); // a no-op on a page that follows nothing

  // Live: Server-Sent Events while the tab is visible; polling when the
  // server has no room for another stream.
  let source = null;
  let poll = null;
  const start = () => {
    if (source || poll || document.hidden) { return; }
    source = new EventSource(body.dataset.live);
    source.addEventListener('change', () => { say('live'); refresh(); });
    source.onopen = () => say('live');
    source.onerror = () => {
      say('reconnecting');
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        poll = setInterval(refresh, 10000); // refused (429): poll instead
        say('polling');
      }
    };
  };
  const halt = () => {
    if (source) { source.close(); source = null; }
    if (poll) { clearInterval(poll); poll = null; }
    say('paused');
  };
  document.addEventListener('visibilitychange', () => (document.hidden ? halt() : (start(), refresh())));
  showTimes();
  wireCopies();
  start();
})();
