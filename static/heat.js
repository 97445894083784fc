/* Heat gutter: colours each IR line (#L{n}) and Python source row by the chosen profile metric,
 * from the #ir-heat data island; lines loaded later (scrolling) are painted as they arrive. */
(function () {
  'use strict';
  var island = document.getElementById('ir-heat');
  if (!island) return;
  var heat = JSON.parse(island.textContent);
  var max = heat.max || 1;
  function fmt(v) { return v >= 100 ? Math.round(v).toLocaleString() : String(Math.round(v * 100) / 100); }
  var share = function (v) {
    return heat.total ? ' (' + (100 * v / heat.total).toFixed(1) + '% of this compilation' +
      (heat.scope ? ' in scope ' + heat.scope : '') + ')' : '';
  };
  function paint(root) {
    Object.keys(heat.lines).forEach(function (n) {
      var line = (root || document).querySelector('#L' + n);
      if (!line || line.dataset.heat) return;
      var v = heat.lines[n];
      line.dataset.heat = v;
      line.style.setProperty('--heat', Math.max(0.08, v / max).toFixed(3));
      line.classList.add('hot');
      // the line's own value (a SASS instruction, a profiled TTGIR line), else its source line's
      // total, shown once here (on the source line's first IR line) and marked as the line's
      line.dataset.hv = heat.direct ? fmt(v) : 'source line: ' + fmt(v);
      if (!heat.direct) line.classList.add('hot-line-total');
      var nr = line.querySelector('.nr');
      if (nr) nr.title = heat.metric + ': ' + fmt(v) + (heat.unit ? ' ' + heat.unit : '') + share(v) +
        (heat.direct ? '' : '\nthe whole source line\'s total (all its IR lines together), not this op\'s') +
        (heat.detail && heat.detail[n] ? '\n' + heat.detail[n].split('; ').join('\n') : '');
    });
    Object.keys(heat.same || {}).forEach(function (n) {
      var line = (root || document).querySelector('#L' + n);
      if (!line || line.dataset.heatSame) return;
      line.dataset.heatSame = heat.same[n];
      line.classList.add('hot-same');
      var nr = line.querySelector('.nr');
      if (nr) nr.title = 'same source line as line ' + heat.same[n] + ', which holds its total';
    });
    var pmax = 0;
    Object.keys(heat.python).forEach(function (k) { pmax = Math.max(pmax, heat.python[k]); });
    document.querySelectorAll('.src-file').forEach(function (pane) {
      pane.querySelectorAll('.pl[data-l]').forEach(function (row) {
        var v = heat.python[pane.dataset.file + ':' + row.dataset.l];
        if (v === undefined || row.dataset.heat) return;
        row.dataset.heat = v;
        row.style.setProperty('--heat', Math.max(0.08, v / (pmax || 1)).toFixed(3));
        row.classList.add('hot');
        row.title = heat.metric + ': ' + fmt(v) + share(v);
      });
    });
  }
  paint(document);
  var ir = document.getElementById('ir');
  if (ir && window.MutationObserver) new MutationObserver(function () { paint(document); }).observe(ir, { childList: true, subtree: true });
})();
