/* global uPlot, document, fetch, setTimeout */
/*
 * The status page: polls status.json every few seconds and draws it. Every value from the data is
 * written with textContent (never as markup); the charts are uPlot's canvases.
 */
(function () {
  'use strict';

  var POLL_MS = 3000;
  var jsonUrl = document.body.getAttribute('data-json');
  var charts = {};
  var PALETTE = [
    '#2563eb',
    '#16a34a',
    '#dc2626',
    '#9333ea',
    '#ea580c',
    '#0891b2',
    '#ca8a04',
    '#db2777',
    '#4b5563',
    '#65a30d',
  ];

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function bytes(n) {
    if (n >= 1073741824) return (n / 1073741824).toFixed(1) + ' GiB';
    if (n >= 1048576) return (n / 1048576).toFixed(1) + ' MiB';
    if (n >= 1024) return (n / 1024).toFixed(1) + ' KiB';
    return n + ' B';
  }

  function duration(seconds) {
    if (seconds < 60) return Math.round(seconds) + ' s';
    if (seconds < 3600) return Math.floor(seconds / 60) + ' min ' + Math.round(seconds % 60) + ' s';
    if (seconds < 86400)
      return Math.floor(seconds / 3600) + ' h ' + Math.floor((seconds % 3600) / 60) + ' min';
    return Math.floor(seconds / 86400) + ' d ' + Math.floor((seconds % 86400) / 3600) + ' h';
  }

  function ago(epochMs, now) {
    if (epochMs === null || epochMs === undefined) return 'never';
    return duration(Math.max(0, (now - epochMs) / 1000)) + ' ago';
  }

  function facts(list, pairs) {
    clear(list);
    pairs.forEach(function (pair) {
      list.appendChild(el('dt', pair[0]));
      var dd = el('dd', pair[1], pair[2]);
      list.appendChild(dd);
    });
  }

  function renderProcess(data) {
    var p = data.process;
    var summary = document.getElementById('summary');
    summary.textContent =
      (p.ready ? 'serving' : 'not ready') + ' · ' + data.environments.length + ' environment(s)';
    summary.className = p.ready ? 'ok' : 'bad';
    document.getElementById('updated').textContent =
      'updated ' + new Date(data.generatedAt).toLocaleTimeString();
    facts(document.getElementById('process'), [
      ['version', p.version],
      ['contract', p.contract],
      ['base path', p.basePath === '' ? '(none)' : p.basePath],
      ['uptime', duration(p.uptimeSeconds)],
      [
        'workers',
        p.worker === null ? String(p.workers) : p.workers + ' (this page: worker ' + p.worker + ')',
      ],
      [
        'memory',
        'rss ' +
          bytes(p.memory.rss) +
          ' · heap ' +
          bytes(p.memory.heapUsed) +
          ' of ' +
          bytes(p.memory.heapTotal),
      ],
    ]);
    var body = document.querySelector('#memory tbody');
    clear(body);
    var m = p.memory;
    [
      [
        'answer cache',
        bytes(m.answerCache.used) + ' (' + m.answerCache.entries + ' answers)',
        bytes(m.answerCache.limit),
        m.answerCache.used / m.answerCache.limit,
      ],
      ['per-toggle memo', bytes(m.memo.used), bytes(m.memo.limit), m.memo.used / m.memo.limit],
      [
        'project views',
        String(m.projectViews.used),
        String(m.projectViews.limit),
        m.projectViews.used / m.projectViews.limit,
      ],
      [
        'change streams',
        String(m.changeStreams.used),
        String(m.changeStreams.limit),
        m.changeStreams.used / m.changeStreams.limit,
      ],
    ].forEach(function (row) {
      var tr = el('tr');
      tr.appendChild(el('td', row[0]));
      tr.appendChild(el('td', row[1]));
      tr.appendChild(el('td', row[2]));
      var cell = el('td');
      var bar = el('div', null, 'bar');
      var fill = el('span');
      fill.style.width = Math.min(100, Math.round((row[3] || 0) * 100)) + '%';
      bar.appendChild(fill);
      cell.appendChild(bar);
      tr.appendChild(cell);
      body.appendChild(tr);
    });
  }

  function renderTotals(data) {
    var body = document.querySelector('#totals tbody');
    clear(body);
    if (data.requests.length === 0) {
      var none = el('tr');
      none.appendChild(el('td', 'none yet', 'muted'));
      body.appendChild(none);
    }
    data.requests.forEach(function (total) {
      var tr = el('tr');
      tr.setAttribute('data-kind', total.kind);
      tr.setAttribute('data-status', total.status);
      tr.appendChild(el('td', total.kind));
      tr.appendChild(el('td', total.status));
      tr.appendChild(el('td', total.count, 'count'));
      body.appendChild(tr);
    });
  }

  var FETCH_STATES = {
    ok: ['answering', 'ok'],
    failing: ['lost', 'bad'],
    refused: ['token refused', 'bad'],
    waiting: ['not reached yet', 'warn'],
    offline: ['offline (file)', 'ok'],
  };

  function renderEnvironments(data) {
    var box = document.getElementById('environments');
    clear(box);
    var now = data.generatedAt;
    data.environments.forEach(function (env) {
      var card = el('article', null, 'environment');
      card.setAttribute('data-environment', env.name);
      card.appendChild(el('h3', env.name));
      var state = FETCH_STATES[env.fetch] || [env.fetch, 'warn'];
      var list = el('dl', null, 'facts');
      facts(list, [
        ['state', env.ready ? 'ready' : 'not ready', env.ready ? 'ok' : 'bad'],
        ['ready since', env.readySince === null ? 'not yet' : new Date(env.readySince).toLocaleString()],
        ['definitions', env.definitions + ' (revision ' + env.revision + ')'],
        ['changed', ago(env.lastUpdate, now)],
        ['last fetch', ago(env.lastFetch, now)],
        [
          'upstream',
          state[0] +
            (env.failingSince !== null ? ' since ' + new Date(env.failingSince).toLocaleTimeString() : ''),
          state[1],
        ],
        [
          'upstream errors',
          env.fetchErrors +
            ' failed fetches · ' +
            env.definitionsRefused +
            ' answers refused · ' +
            env.usageReportsRefused +
            ' usage reports refused',
        ],
        ['quarantined toggles', String(env.quarantined)],
        ['change streams', String(env.changeStreams)],
      ]);
      card.appendChild(list);
      if (env.tokens === null) {
        card.appendChild(el('p', 'tokens: not shown (the tokens endpoint is off)', 'muted'));
      } else {
        var tokens = el('ul', null, 'tokens');
        env.tokens.forEach(function (t) {
          tokens.appendChild(
            el('li', t.token + ' · ' + t.type + ' · ' + t.projects.join(',') + ' · ' + t.status),
          );
        });
        if (env.moreTokens > 0) tokens.appendChild(el('li', 'and ' + env.moreTokens + ' more'));
        card.appendChild(el('p', 'tokens served', 'muted'));
        card.appendChild(tokens);
      }
      box.appendChild(card);
    });
  }

  function chart(id, labels, data, scale) {
    var node = document.getElementById(id);
    var key = labels.join('\u0001');
    var existing = charts[id];
    if (existing && existing.key === key) {
      existing.plot.setData(data);
      return;
    }
    if (existing) existing.plot.destroy();
    clear(node);
    var series = [{}].concat(
      labels.map(function (label, i) {
        return { label: label, stroke: PALETTE[i % PALETTE.length], width: 1.5, spanGaps: false };
      }),
    );
    var options = {
      width: Math.max(300, node.clientWidth || 500),
      height: 220,
      series: series,
      scales: {
        y: scale || {
          range: function (_u, min, max) {
            return [0, Math.max(max, min + 1)];
          },
        },
      },
      axes: [{}, { size: 60 }],
      legend: { live: false },
    };
    charts[id] = { key: key, plot: new uPlot(options, data, node) };
  }

  function renderCharts(data) {
    var p = data.plots;
    document.getElementById('sampling').textContent = '(one sample every ' + p.intervalSeconds + ' s)';
    var requests =
      p.requests.length > 0
        ? p.requests
        : [
            {
              kind: 'requests',
              status: '',
              perSecond: p.t.map(function () {
                return null;
              }),
            },
          ];
    chart(
      'chart-requests',
      requests.map(function (s) {
        return s.kind + (s.status ? ' ' + s.status : '');
      }),
      [p.t].concat(
        requests.map(function (s) {
          return s.perSecond;
        }),
      ),
    );
    chart('chart-latency', ['p50', 'p99'], [p.t, p.p50, p.p99]);
    chart(
      'chart-304',
      ['answered 304'],
      [
        p.t,
        p.notModifiedShare.map(function (v) {
          return v === null ? null : v * 100;
        }),
      ],
      {
        range: [0, 100],
      },
    );
    chart(
      'chart-validation',
      ['waiting requests', 'queued tokens', 'refusals/s'],
      [p.t, p.validationWaiters, p.validationQueued, p.validationShedPerSecond],
    );
  }

  function showError(message) {
    var summary = document.getElementById('summary');
    summary.textContent = message;
    summary.className = 'bad';
  }

  function poll() {
    fetch(jsonUrl, { cache: 'no-store', credentials: 'same-origin' })
      .then(function (res) {
        if (!res.ok) throw new Error('status.json answered ' + res.status);
        return res.json();
      })
      .then(function (data) {
        renderProcess(data);
        renderTotals(data);
        renderEnvironments(data);
        renderCharts(data);
      })
      .catch(function (err) {
        showError('cannot read status.json: ' + err.message);
      })
      .then(function () {
        setTimeout(poll, POLL_MS);
      });
  }

  poll();
})();
