"""The page's own script and style (beside BokehJS, inlined by ``page``).

``HOOK`` runs first: it counts the page's errors (``window.onerror``, rejected promises and
``console.error``) into ``<body data-errors>`` and lists them in ``#jobsim-errors``, so a
test reads them back from the DOM. ``SCRIPT`` embeds a tab's figures when the tab is first
shown, then writes on its section ``data-executions`` (the rows of its executions' data
source), ``data-rendered`` (the bars its glyph drew from them) and ``data-backend`` (WebGL,
or the canvas where WebGL is drawn in software: there the canvas is the faster), hands the
tab to ``script_more``'s ``jobsimAfterEmbed`` (the other layers' counts, the cursor), and
tells a job's story when an execution is clicked.
"""

HOOK = r"""
(function () {
  var errors = [];
  function note(text) {
    errors.push(String(text));
    var put = function () {
      document.body.setAttribute('data-errors', String(errors.length));
      var box = document.getElementById('jobsim-errors');
      if (box) { box.textContent = errors.join('\n'); box.hidden = false; }
    };
    if (document.body) put(); else document.addEventListener('DOMContentLoaded', put);
  }
  window.addEventListener('error', function (e) { note(e.message || e); });
  window.addEventListener('unhandledrejection', function (e) { note('unhandled: ' + e.reason); });
  var original = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
})();
"""

SCRIPT = r"""
(function () {
  var embedded = {};
  function meta(key) {
    return JSON.parse(document.getElementById('jobsim-meta-' + key).textContent);
  }
  function sec(t) { return t.toFixed(3) + ' s'; }
  function lower(col, v) {
    var lo = 0, hi = col.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (col[mid] < v) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function rows(col, v) { return [lower(col, v), lower(col, v + 1)]; }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  window.jobsimStory = function (key, ex, jobs, claims, retries, marks) {
    var i = ex.selected.indices[0];
    if (i === undefined) return;
    var m = meta(key), e = ex.data, job = Number(e.job[i]), lines = [];
    var j = jobs.data, r = lower(j.id, job);
    var created = j.created[r];
    var name = j.name[r] >= 0 ? ' "' + m.job_names[j.name[r]] + '"' : '';
    lines.push([created, 0, 'created' + name + ', handler ' + m.handlers[j.handler[r]]]);
    if (j.due[r] > 0) lines.push([created + j.due[r], 1, 'due']);
    var c = claims.data, span = rows(c.job, job);
    for (var k = span[0]; k < span[1]; k++)
      lines.push([c.time[k], 2, c.kind[k] === 2 ? 'unlocked by ' + m.nodes[c.node[k]] :
                  (c.kind[k] === 1 ? 'lock extended by ' : 'claimed by ') + m.nodes[c.node[k]] +
                  ' (lock until ' + sec(c.time[k] + c.until[k]) + ')']);
    var runs = rows(e.job, job), chosen = [];
    for (var k = runs[0]; k < runs[1]; k++) {
      chosen.push(k);
      lines.push([e.start[k], 3, 'run ' + e.attempt[k] + ' on ' + m.nodes[e.node[k]] +
                  ' thread ' + e.thread[k] + ', until ' + sec(e.end[k]) + ' (' +
                  sec(e.end[k] - e.start[k]) + '): <span class="swatch" style="background:' +
                  m.colors[e.cat[k]] + '"></span>' + esc(m.categories[e.cat[k]]) +
                  (e.eff[k] === 1 ? '; its side effect at its end' : '')]);
    }
    for (var q = 0; q < 4; q++) {  // the side effects not at a run's end, duplicates, refused
      var fx = ex.document && ex.document.get_model_by_name('effects-' + q + '-' + key);
      if (!fx) continue;
      for (var k = 0; k < fx.data.job.length; k++)
        if (Number(fx.data.job[k]) === job)
          lines.push([fx.data.time[k], 3.5, esc(m.effects[q]) + ' (run ' + fx.data.attempt[k] +
                      ' on ' + m.nodes[fx.data.node[k]] + ')']);
    }
    var t = retries.data, rs = rows(t.job, job);
    for (var k = rs[0]; k < rs[1]; k++)
      lines.push([t.time[k], 4, 'retry scheduled by ' + m.nodes[t.node[k]] + ', due again at ' +
                  sec(t.time[k] + t.until[k])]);
    var mk = marks.data;
    for (var k = 0; k < mk.kind.length; k++)
      if (mk.kind[k] === 2 && Number(mk.job[k]) === job)
        lines.push([mk.time[k], 5, 'the lock of ' + m.nodes[mk.node[k]] + ' expired']);
    var outcome = m.outcomes[j.outcome[r]];
    var end = created + j.end[r];
    var said = {done: 'done', dead_lettered: 'dead-lettered', pending: 'still pending at the end',
                lost: 'never finished (lost)'}[outcome] || outcome;
    if (isFinite(end)) lines.push([end, 6, said]);
    lines.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    var html = '<h3>job ' + job + name + '</h3><ol>';
    lines.forEach(function (l) { html += '<li><b>' + sec(l[0]) + '</b> ' + l[2] + '</li>'; });
    html += '</ol><p class="end">The end: ' + esc(said) + (isFinite(end) ? '' : ' (no end)') +
            ' · ' + (runs[1] - runs[0]) + ' run(s), ' + (rs[1] - rs[0]) + ' retr' +
            (rs[1] - rs[0] === 1 ? 'y' : 'ies') + '</p>';
    var box = document.getElementById('story-' + key);
    box.innerHTML = html;
    box.setAttribute('data-job', String(job));
    if (chosen.length > 1) ex.selected.indices = chosen;
  };

  function find(views, name) {
    return views.query_one(function (v) { return v.model != null && v.model.name === name; });
  }

  // WebGL where a GPU draws it; the canvas where WebGL is missing or drawn in software
  // (SwiftShader, llvmpipe: there the canvas, which skips what is off screen, is faster).
  // ?backend=webgl or ?backend=canvas in the address overrides the choice.
  function backend() {
    var asked = new URLSearchParams(location.search).get('backend');
    if (asked === 'webgl' || asked === 'canvas') return asked;
    try {
      var gl = document.createElement('canvas').getContext('webgl2');
      if (!gl) return 'canvas';
      var info = gl.getExtension('WEBGL_debug_renderer_info');
      var name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
      return /swiftshader|llvmpipe|softpipe|software|basic render/i.test(name) ? 'canvas'
                                                                             : 'webgl';
    } catch (e) { return 'canvas'; }
  }
  var chosen = null;
  function set_backend(x, to) {
    if (Array.isArray(x)) { x.forEach(function (v) { set_backend(v, to); }); return; }
    if (x === null || typeof x !== 'object') return;
    if (x.type === 'object' && x.name === 'Figure' && x.attributes) x.attributes.output_backend = to;
    for (var k in x) if (Object.prototype.hasOwnProperty.call(x, k)) set_backend(x[k], to);
  }

  async function embed(key) {
    if (embedded[key]) return;
    embedded[key] = true;
    var item = JSON.parse(document.getElementById('jobsim-item-' + key).textContent);
    chosen = chosen || backend();
    set_backend(item.doc.roots, chosen);
    var views = await Bokeh.embed.embed_item(item, 'plot-' + key);
    window.jobsimViews = window.jobsimViews || {};
    window.jobsimViews[key] = views;
    var section = document.getElementById('tab-' + key);
    var renderer = find(views, 'executions-renderer-' + key);
    var source = renderer.model.data_source;
    section.setAttribute('data-backend', chosen);
    section.setAttribute('data-executions', String(source.get_length()));
    section.setAttribute('data-rendered', String(renderer.glyph.data_size));
    if (window.jobsimAfterEmbed) window.jobsimAfterEmbed(key, renderer, views);
  }

  function show(key) {
    document.querySelectorAll('section.run').forEach(function (s) {
      s.hidden = s.getAttribute('data-key') !== key;
    });
    document.querySelectorAll('nav.tabs button').forEach(function (b) {
      b.classList.toggle('active', b.getAttribute('data-key') === key);
    });
    embed(key).catch(function (err) { console.error('jobsim view: ' + err); });
  }

  document.querySelectorAll('nav.tabs button').forEach(function (b) {
    b.addEventListener('click', function () {
      show(b.getAttribute('data-key'));
      var s = document.getElementById('tab-' + b.getAttribute('data-key'));
      if (s && s.getAttribute('data-variant')) {  // a link to this tab: page.html#variant
        history.replaceState(null, '', '#' + encodeURIComponent(s.getAttribute('data-variant')));
      }
    });
  });
  // the tab the address names (#variant or #tab-N), else the first
  var wanted = decodeURIComponent(location.hash.slice(1));
  var sections = Array.prototype.slice.call(document.querySelectorAll('section.run'));
  var first = sections.filter(function (s) {
    return wanted && (s.id === wanted || s.getAttribute('data-variant') === wanted);
  })[0] || sections[0];
  if (first) show(first.getAttribute('data-key'));
})();
"""

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
header { padding: 10px 18px 4px; border-bottom: 1px solid #ddd; }
header h1 { font-size: 18px; margin: 0 0 4px; }
header p { margin: 0; color: #555; }
nav.tabs { padding: 8px 18px 0; border-bottom: 1px solid #ccc; }
nav.tabs button { font: inherit; padding: 5px 14px; margin-right: 4px; border: 1px solid #ccc;
  border-bottom: none; background: #f2f2f2; border-radius: 5px 5px 0 0; cursor: pointer; }
nav.tabs button.active { background: #fff; font-weight: 600; position: relative; top: 1px; }
section.run { padding: 8px 18px; }
section.run h2 { font-size: 16px; margin: 4px 0; }
p.counts { margin: 2px 0 6px; color: #333; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0 8px; font-size: 13px; }
.legend span.item { white-space: nowrap; }
.swatch { display: inline-block; width: 14px; height: 10px; vertical-align: middle;
  margin-right: 4px; border: 1px solid rgba(0,0,0,.45); }
.glyph { display: inline-block; width: 16px; text-align: center; font-weight: 700; }
.body { display: flex; gap: 14px; align-items: flex-start; }
.plot { flex: 1 1 auto; min-width: 0; }
aside.story { flex: 0 0 340px; max-height: 760px; overflow: auto; border: 1px solid #ddd;
  border-radius: 6px; padding: 8px 12px; background: #fafafa; font-size: 13px; }
aside.story h3 { margin: 2px 0 6px; font-size: 15px; }
aside.story ol { padding-left: 18px; margin: 0; }
aside.story li { margin: 2px 0; }
aside.story p.end { margin: 8px 0 0; font-weight: 600; }
#jobsim-errors { white-space: pre-wrap; color: #a00; padding: 6px 18px; }
"""
