"""The page's script for the time cursor, the colour switch and the search (beside
``script.SCRIPT``, which calls ``jobsimAfterEmbed`` once a tab's figures are embedded).

``jobsimAfterEmbed`` writes on the tab's section what its glyphs drew, for a test to read
back from the DOM: ``data-instants`` (zero-length executions' markers), ``data-claims`` and
``data-empty`` (acquisitions), ``data-effects`` (all side-effect markers: those at a run's end, drawn from the
executions' own ``eff`` column, and the others),
``data-effects-duplicate``, ``data-effects-refused``, ``data-services`` (service figures),
``data-outages`` (their down spans) and ``data-load`` (their load points); then it sets the
cursor where the address asks (``?at=SECONDS``), colours the executions as it asks
(``?colour=priority`` or ``handler``), finds the job it names (``?find=TEXT``) and tells
the story of the job it names (``?job=ID``).

``jobsimCursor(key, t)`` moves the dotted line on every figure to ``t`` and writes the
table at that instant (after its events) into ``#instant-<key>``: the acquisitions within
a quarter of a percent of the visible span (the nearest 20 first), and each row present (created, not yet gone) with its
state (running, locked, lock expired, due, waiting), owner, lock_until, due and retries so
far, at most ``CAP`` rows (by due time, a note says how many there are).
"""

MORE = r"""
(function () {
  var CAP = 200;
  var PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2',
                 '#7f7f7f', '#bcbd22', '#17becf', '#aec7e8', '#ffbb78', '#98df8a', '#ff9896',
                 '#c5b0d5', '#c49c94', '#f7b6d2', '#c7c7c7', '#dbdb8d', '#9edae5'];
  var docs = {}, drawn = {};
  function meta(key) {
    return JSON.parse(document.getElementById('jobsim-meta-' + key).textContent);
  }
  function model(key, name) { return docs[key].get_model_by_name(name + '-' + key); }
  function size(key, name) {  // the markers a renderer drew (its glyph's, after its filter)
    var v = drawn[key].query_one(function (v) {
      return v.model != null && v.model.name === name + '-' + key;
    });
    return v ? v.glyph.data_size : 0;
  }
  function lower(col, v) {
    var lo = 0, hi = col.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (col[mid] < v) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function sec(t) { return isFinite(t) ? t.toFixed(3) + ' s' : '–'; }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  window.jobsimAfterEmbed = function (key, renderer, views) {
    docs[key] = renderer.model.document;
    drawn[key] = views;
    var s = document.getElementById('tab-' + key);
    var effects = size(key, 'effects-end-renderer');
    for (var k = 0; k < 4; k++) effects += size(key, 'effects-' + k + '-renderer');
    var m = meta(key), outages = 0, load = 0;
    for (var i = 0; i < m.services.length; i++) {
      outages += size(key, 'service-' + i + '-down');
      load += size(key, 'service-' + i + '-load-calls');
    }
    var attrs = {instants: size(key, 'instants-renderer'),
                 empty: size(key, 'acquisitions-0-renderer'),
                 claims: size(key, 'acquisitions-1-renderer'), effects: effects,
                 'effects-duplicate': size(key, 'effects-2-renderer'),
                 'effects-refused': size(key, 'effects-3-renderer'),
                 services: m.services.length, outages: outages, load: load};
    for (var a in attrs) s.setAttribute('data-' + a, String(attrs[a]));
    var ask = new URLSearchParams(location.search), colour = ask.get('colour');
    if (colour === 'priority' || colour === 'handler') {
      document.querySelector('select.hue-mode[data-key="' + key + '"]').value = colour;
      recolour(key, colour);
    }
    if (ask.get('find')) {
      document.querySelector('input.find[data-key="' + key + '"]').value = ask.get('find');
      find(key, ask.get('find'));
    }
    var job = ask.get('job'), doc = docs[key];
    if (job !== null && /^\d+$/.test(job) && window.jobsimStory) {
      var ex = doc.get_model_by_name('executions-' + key), row = lower(ex.data.job, Number(job));
      if (row < ex.data.job.length && Number(ex.data.job[row]) === Number(job)) {
        ex.selected.indices = [row];
        window.jobsimStory(key, ex, doc.get_model_by_name('jobs-' + key),
                           doc.get_model_by_name('claims-' + key),
                           doc.get_model_by_name('retries-' + key),
                           doc.get_model_by_name('marks-' + key));
      }
    }
    var at = ask.get('at');
    if (at !== null && at !== '' && isFinite(Number(at))) window.jobsimCursor(key, Number(at));
  };

  window.jobsimCursor = function (key, t) {
    if (!docs[key]) return;
    docs[key].all_models.forEach(function (m) {
      if (m.name === 'cursor-' + key) m.location = t;
    });
    var input = document.querySelector('input.at[data-key="' + key + '"]');
    if (input && Number(input.value) !== t) input.value = String(t);
    var m = meta(key), lines = [];
    var x = model(key, 'executions-renderer').data_source.data;
    var xr = model(key, 'timeline').x_range, tol = (xr.end - xr.start) / 400;
    var acq = docs[key].get_model_by_name('acquisitions-' + key).data;
    var near = [];
    for (var i = lower(acq.time, t - tol); i < acq.time.length && acq.time[i] <= t + tol; i++)
      near.push(i);
    near.sort(function (a, b) { return Math.abs(acq.time[a] - t) - Math.abs(acq.time[b] - t) || a - b; });
    var html = '<h3>The table at ' + sec(t) + ' (after that instant\'s events)</h3>';
    if (near.length) {
      html += '<p class="acq">Acquisitions within ' + sec(tol) + ' of it, the nearest first:</p>' +
              '<ul class="acq">';
      near.slice(0, 20).forEach(function (i) {
        html += '<li>' + esc(m.nodes[acq.node[i]]) + ' at ' + sec(acq.time[i]) + ': ' +
                (acq.got[i] > 0 ? 'claimed ' + acq.got[i] + ' row' + (acq.got[i] === 1 ? '' : 's')
                 : 'empty acquisition: locked nothing') + ' (asked for ' + acq.asked[i] +
                ')</li>';
      });
      html += '</ul>' + (near.length > 20 ? '<p>… and ' + (near.length - 20) + ' more</p>' : '');
    }
    var j = docs[key].get_model_by_name('jobs-' + key).data;
    var c = docs[key].get_model_by_name('claims-' + key).data;
    var r = docs[key].get_model_by_name('retries-' + key).data;
    var rows = [];
    for (var q = 0; q < j.id.length; q++) {
      var created = j.created[q], end = created + j.end[q];
      if (created > t || (isFinite(end) && end <= t)) continue;
      rows.push(q);
    }
    var told = rows.map(function (q) {
      var job = Number(j.id[q]), due = j.created[q] + j.due[q], retries = 0, last = -Infinity;
      for (var k = lower(r.job, job); k < r.job.length && Number(r.job[k]) === job &&
           r.time[k] <= t; k++) { retries++; due = r.time[k] + r.until[k]; last = r.time[k]; }
      var owner = -1, until = NaN;
      for (var k = lower(c.job, job); k < c.job.length && Number(c.job[k]) === job &&
           c.time[k] <= t; k++) {
        if (c.kind[k] === 2 || c.time[k] <= last) { owner = -1; continue; }
        if (c.kind[k] === 0) owner = c.node[k];
        until = c.time[k] + c.until[k];
      }
      var running = false;
      for (var k = lower(x.job, job); k < x.job.length && Number(x.job[k]) === job; k++)
        if (x.start[k] <= t && t < x.end[k]) running = true;
      var state = running ? 'running' : owner >= 0 ? (until > t ? 'locked' : 'lock expired')
                  : due <= t ? 'due' : 'waiting';
      return [due, job, state, owner >= 0 ? m.nodes[owner] : '–', owner >= 0 ? until : NaN,
              retries, j.name[q]];
    });
    told.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    html += '<p>' + told.length + ' row' + (told.length === 1 ? '' : 's') + ' in the table' +
            (told.length > CAP ? ' (the first ' + CAP + ' by due time shown)' : '') + '</p>';
    if (told.length) {
      html += '<table><tr><th>job</th><th>state</th><th>owner</th><th>lock_until</th>' +
              '<th>due</th><th>retries</th></tr>';
      told.slice(0, CAP).forEach(function (w) {
        var name = w[6] >= 0 ? ' ' + esc(m.job_names[w[6]]) : '';
        html += '<tr><td>' + w[1] + name + '</td><td>' + w[2] + '</td><td>' + esc(w[3]) +
                '</td><td>' + sec(w[4]) + '</td><td>' + sec(w[0]) + '</td><td>' + w[5] +
                '</td></tr>';
      });
      html += '</table>';
    }
    var box = document.getElementById('instant-' + key);
    box.innerHTML = html;
    box.setAttribute('data-at', String(t));
    box.setAttribute('data-rows', String(told.length));
  };

  function recolour(key, mode) {
    if (!docs[key]) return;
    var m = meta(key), ex = model(key, 'executions-renderer').data_source;
    var inst = model(key, 'instants-renderer').data_source;
    var j = docs[key].get_model_by_name('jobs-' + key).data, e = ex.data, palette, names;
    var code = null;
    if (mode === 'priority') {
      var ps = Array.from(new Set(Array.from(j.priority))).sort(function (a, b) { return a - b; });
      code = function (q) { return ps.indexOf(j.priority[q]); };
      names = ps.map(function (p) { return 'priority ' + p; });
    } else if (mode === 'handler') {
      code = function (q) { return j.handler[q]; };
      names = m.handlers.map(function (h) { return 'handler ' + h; });
    }
    if (code === null) {
      palette = m.colors;
      for (var i = 0; i < e.hue.length; i++) e.hue[i] = e.cat[i];
    } else {
      palette = names.map(function (_, k) { return PALETTE[k % PALETTE.length]; });
      for (var i = 0; i < e.hue.length; i++)
        e.hue[i] = code(lower(j.id, e.job[i])) % PALETTE.length;
    }
    palette = palette.slice(0, Math.max(1, Math.min(palette.length, mode === 'outcome' ?
                                                     palette.length : PALETTE.length)));
    ['fill', 'line'].forEach(function (which) {
      var mapper = docs[key].get_model_by_name('hue-' + which + '-' + key);
      if (!mapper.outcome_palette) mapper.outcome_palette = mapper.palette;
      mapper.palette = mode === 'outcome' ? mapper.outcome_palette : which === 'fill' ? palette
                       : palette.map(function () { return '#333333'; });
      mapper.high = mapper.palette.length - 0.5;
    });
    for (var i = 0; i < inst.data.hue.length; i++) inst.data.hue[i] = e.hue[inst.data.row[i]];
    ex.change.emit(); inst.change.emit();
    var legend = document.querySelector('#tab-' + key + ' .legend .hue');
    if (mode === 'outcome') { legend.innerHTML = legend.getAttribute('data-outcome') || legend.innerHTML; return; }
    if (!legend.getAttribute('data-outcome')) legend.setAttribute('data-outcome', legend.innerHTML);
    legend.innerHTML = names.slice(0, 40).map(function (label, k) {
      return '<span class="item"><span class="swatch" style="background:' +
             PALETTE[k % PALETTE.length] + '"></span>' + esc(label) + '</span>';
    }).join('') + (names.length > 40 ? '<span class="item">… ' + names.length + ' in all</span>' : '');
  }

  function find(key, text) {
    if (!docs[key]) return;
    var ex = model(key, 'executions-renderer').data_source, e = ex.data, m = meta(key);
    var j = docs[key].get_model_by_name('jobs-' + key).data, box = document.getElementById('found-' + key);
    text = text.trim().toLowerCase();
    if (!text) { ex.selected.indices = []; box.textContent = ''; return; }
    var jobs = new Set();
    if (/^\d+$/.test(text)) jobs.add(Number(text));
    for (var q = 0; q < j.id.length; q++)
      if (j.name[q] >= 0 && m.job_names[j.name[q]].toLowerCase().indexOf(text) >= 0)
        jobs.add(Number(j.id[q]));
    var hit = [];
    for (var i = 0; i < e.job.length; i++) if (jobs.has(Number(e.job[i]))) hit.push(i);
    ex.selected.indices = hit;
    box.textContent = hit.length + ' execution' + (hit.length === 1 ? '' : 's') + ' found';
    box.setAttribute('data-found', String(hit.length));
  }

  document.addEventListener('change', function (ev) {
    var el = ev.target;
    if (el.classList.contains('hue-mode')) recolour(el.getAttribute('data-key'), el.value);
    if (el.classList.contains('at') && el.value !== '')
      window.jobsimCursor(el.getAttribute('data-key'), Number(el.value));
  });
  document.addEventListener('input', function (ev) {
    if (ev.target.classList.contains('find')) find(ev.target.getAttribute('data-key'), ev.target.value);
  });
})();
"""

MORE_STYLE = """
p.note { margin: 2px 0 6px; padding: 4px 8px; background: #fff8e1; border-left: 3px solid #e0a800; }
.controls { margin: 4px 0; font-size: 13px; }
.controls input[type=number] { width: 90px; }
.legend .hue { display: contents; }
div.instant { margin: 8px 0; font-size: 13px; }
div.instant table { border-collapse: collapse; }
div.instant td, div.instant th { border: 1px solid #ddd; padding: 1px 6px; text-align: left; }
div.instant ul.acq { margin: 2px 0 6px; }
"""
