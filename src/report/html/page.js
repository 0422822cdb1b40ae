(function () {
  // Hover tooltips: each chart carries its positions and preformatted values in data-tip.
  var NS = 'http://www.w3.org/2000/svg';
  var tip = document.createElement('div');
  tip.className = 'tip';
  document.body.appendChild(tip);
  function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;'); }
  Array.prototype.forEach.call(document.querySelectorAll('svg.chart[data-tip]'), function (svg) {
    var d;
    try { d = JSON.parse(svg.getAttribute('data-tip')); } catch (e) { return; }
    if (!d.px || !d.px.length) return;
    var guide = document.createElementNS(NS, 'line');
    guide.setAttribute('class', 'guide');
    guide.setAttribute('y1', d.y ? d.y[0] : 40);
    guide.setAttribute('y2', d.y ? d.y[1] : 258);
    guide.style.display = 'none';
    svg.appendChild(guide);
    svg.addEventListener('mousemove', function (e) {
      var m = svg.getScreenCTM();
      if (!m) return;
      var p = svg.createSVGPoint();
      p.x = e.clientX; p.y = e.clientY;
      var x = p.matrixTransform(m.inverse()).x;
      var best = 0;
      for (var i = 1; i < d.px.length; i++) {
        if (Math.abs(d.px[i] - x) < Math.abs(d.px[best] - x)) best = i;
      }
      guide.setAttribute('x1', d.px[best]);
      guide.setAttribute('x2', d.px[best]);
      guide.style.display = '';
      var h = '<b>' + esc(d.h[best]) + '</b>';
      if (d.l) {
        d.l[best].forEach(function (s) { h += '<br>' + esc(s); });
      } else {
        d.n.forEach(function (n, k) {
          h += '<br><i style="background:' + esc(d.c[k]) + '"></i>' + esc(n) + ': ' + esc(d.v[best][k]);
        });
      }
      tip.innerHTML = h;
      tip.style.display = 'block';
      var left = e.pageX + 14;
      if (left + tip.offsetWidth > window.scrollX + document.documentElement.clientWidth) left = e.pageX - 14 - tip.offsetWidth;
      tip.style.left = left + 'px';
      tip.style.top = (e.pageY + 14) + 'px';
    });
    svg.addEventListener('mouseleave', function () { tip.style.display = 'none'; guide.style.display = 'none'; });
  });
})();
