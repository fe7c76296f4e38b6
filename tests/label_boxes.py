"""Measure the labels a page draws in Chromium: overlapping, clipped or misplaced text, as boxes."""

from __future__ import annotations

DRAWN = ".js-plotly-plot .main-svg, [data-testid='stVegaLiteChart'] svg"  # a chart with its labels

# Runs in the page. Returns one line per problem in every plotly and vega-lite chart drawn now:
# two labels of one axis (or two titles) whose boxes overlap, a label outside its chart's svg, a
# title over a subplot's plot area.
MEASURE = r"""
() => {
  const TOL = 1;  // px: anti-aliasing lets neighbouring boxes touch
  const EDGE = 3;  // px: a text's box spans its font's whole line, a little past the glyphs
  const problems = [];
  const box = (el) => { const r = el.getBoundingClientRect(); return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const hits = (a, b) => a.l < b.r - TOL && b.l < a.r - TOL && a.t < b.b - TOL && b.t < a.b - TOL;
  const outside = (a, s) => a.l < s.l - EDGE || a.t < s.t - EDGE || a.r > s.r + EDGE || a.b > s.b + EDGE;
  const clipped = (el, stop) => {
    for (let a = el.parentElement; a && a !== stop; a = a.parentElement) if (a.getAttribute('clip-path')) return true;
    return false;
  };
  const drawn = (el) => el.textContent.trim() !== '' && el.getBoundingClientRect().width > 0
    && getComputedStyle(el).visibility !== 'hidden' && getComputedStyle(el).opacity !== '0';
  const say = (chart, what, a, b) => problems.push(
    `${chart}: ${what}: "${a.textContent}"` + (b ? ` and "${b.textContent}"` : ''));
  const apart = (chart, what, texts) => {
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (hits(box(texts[i]), box(texts[j]))) { say(chart, what, texts[i], texts[j]); return; }
  };
  document.querySelectorAll('[data-testid="stPlotlyChart"]').forEach((chart, n) => {
    const name = `plotly chart ${n + 1}`;
    const gd = chart.querySelector('.js-plotly-plot');
    const svg = chart.querySelector('svg.main-svg');
    if (!gd || !svg) return;
    const frame = box(gd);
    const all = [...gd.querySelectorAll('svg text')].filter(drawn);
    all.forEach((t) => { if (outside(box(t), frame)) say(name, 'label clipped by the chart', t); });
    gd.querySelectorAll('text.bartext').forEach((t) => {
      const cell = t.closest('.subplot')?.getAttribute('class').split(' ').pop();
      const area = cell && gd.querySelector(`.draglayer .${cell} .nsewdrag`);
      if (drawn(t) && area && clipped(t, gd) && outside(box(t), box(area))) say(name, 'bar label clipped by the plot area', t);
    });
    const axes = {};
    gd.querySelectorAll('.xtick text, .ytick text').forEach((t) => {
      if (!drawn(t)) return;
      const layer = t.closest('[class*="axislayer"]');
      const key = (t.closest('.subplot')?.getAttribute('class') || '') + (layer?.getAttribute('class') || '');
      (axes[key] = axes[key] || []).push(t);
    });
    Object.entries(axes).forEach(([key, texts]) => apart(name, `tick labels of ${key} overlap`, texts));
    const notes = (gd.layout.annotations || []);
    const titles = [...gd.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text, [class*="g-x"][class*="title"] text, [class*="g-y"][class*="title"] text')].filter(drawn);
    gd.querySelectorAll('.annotation').forEach((g) => {
      const note = notes[Number(g.getAttribute('data-index'))];
      const text = g.querySelector('text');
      if (note && note.xref === 'paper' && note.yref === 'paper' && text && drawn(text)) titles.push(text);
    });
    const unique = [...new Set(titles)];
    apart(name, 'titles overlap', unique);
    const ticks = Object.values(axes).flat();
    const areas = [...gd.querySelectorAll('.draglayer .nsewdrag')].map(box);
    unique.forEach((t) => {
      const b = box(t);
      if (areas.some((a) => hits(b, a))) say(name, 'title over a plot area', t);
      const under = ticks.find((k) => hits(b, box(k)));
      if (under) say(name, 'title over a tick label', t, under);
    });
  });
  document.querySelectorAll('[data-testid="stVegaLiteChart"]').forEach((chart, n) => {
    const name = `vega-lite chart ${n + 1}`;
    const svg = chart.querySelector('svg');
    if (!svg) return;
    const frame = box(svg);
    const texts = [...svg.querySelectorAll('text')].filter(drawn);
    texts.forEach((t) => { if (outside(box(t), frame)) say(name, 'label clipped by the chart', t); });
    svg.querySelectorAll('.role-axis, .role-legend').forEach((axis) => {
      const labels = [...axis.querySelectorAll('.role-axis-label text, .role-legend-label text')].filter(drawn);
      apart(name, 'labels of one axis overlap', labels);
    });
    const titles = [...svg.querySelectorAll('.role-title text, .role-axis-title text, .role-legend-title text')].filter(drawn);
    apart(name, 'titles overlap', titles);
  });
  return problems;
}
"""


def label_problems(page) -> list[str]:
    """Every overlapping, clipped or misplaced label of the charts drawn on the page now."""
    return page.evaluate(MEASURE)
