/*
 * Draws `ada flame`'s SVG (flame_svg.h). Geometry: 1200 px wide, 16 px a
 * frame, the root at the bottom; each frame's horizontal place is given in
 * nanoseconds (data-x, data-w) so the script can re-lay it out when a
 * frame is clicked (zoom: that frame fills the width) or after a search
 * (matching frames turn magenta; the share of time they cover is shown).
 * The static positions are written too, so a viewer without scripts still
 * shows the whole graph. Names come from untrusted files: every byte that
 * is not printable ASCII becomes '?', and markup characters are escaped.
 */
#include <inttypes.h>
#include <string.h>

#include "flame_svg.h"

#define FS_WIDTH 1200
#define FS_PAD 10
#define FS_FH 16
#define FS_TOP 56 /* title, subtitle and the buttons */

/* The script: every frame is a <g class="f"> with data-x, data-w (ns),
 * data-d (depth) and data-n (the name). */
static const char flame_js[] =
    "\"use strict\";\n"
    "var svg = document.documentElement, fr = document.getElementsByClassName('f');\n"
    "var W = +svg.getAttribute('data-width'), T = +svg.getAttribute('data-total');\n"
    "var PAD = 10, zx = 0, zw = T, re = null;\n"
    "function pct(w) { return (100 * w / T).toFixed(2) + '%'; }\n"
    "function label(n, pw) { var c = Math.floor((pw - 6) / 7);\n"
    "  return c < 3 ? '' : n.length <= c ? n : n.slice(0, c - 2) + '..'; }\n"
    "function render() {\n"
    "  for (var i = 0; i < fr.length; i++) {\n"
    "    var g = fr[i], x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w');\n"
    "    var r = g.getElementsByTagName('rect')[0], t = g.getElementsByTagName('text')[0];\n"
    "    if (x + w <= zx || x >= zx + zw) { g.style.display = 'none'; continue; }\n"
    "    var a = Math.max(x, zx), b = Math.min(x + w, zx + zw);\n"
    "    var px = PAD + (a - zx) / zw * (W - 2 * PAD), pw = (b - a) / zw * (W - 2 * PAD);\n"
    "    g.style.display = '';\n"
    "    r.setAttribute('x', px.toFixed(2)); r.setAttribute('width', pw.toFixed(2));\n"
    "    t.setAttribute('x', (px + 3).toFixed(2));\n"
    "    t.textContent = label(g.getAttribute('data-n'), pw);\n"
    "    r.style.fill = re && re.test(g.getAttribute('data-n')) ? 'rgb(230,0,230)' : '';\n"
    "  }\n"
    "  document.getElementById('unzoom').style.opacity = zw < T ? 1 : 0.3;\n"
    "}\n"
    "function zoom(g) { zx = +g.getAttribute('data-x'); zw = Math.max(1, "
    "+g.getAttribute('data-w'));"
    " render(); }\n"
    "function unzoom() { zx = 0; zw = T; render(); }\n"
    "function matched() {\n"
    "  var iv = [];\n"
    "  for (var i = 0; i < fr.length; i++) if (re.test(fr[i].getAttribute('data-n')))\n"
    "    iv.push([+fr[i].getAttribute('data-x'), +fr[i].getAttribute('data-w')]);\n"
    "  iv.sort(function (p, q) { return p[0] - q[0]; });\n"
    "  var sum = 0, end = -1;\n"
    "  for (var k = 0; k < iv.length; k++) { var s = Math.max(iv[k][0], end), e = iv[k][0] + "
    "iv[k][1];\n"
    "    if (e > s) { sum += e - s; end = e; } }\n"
    "  return sum;\n"
    "}\n"
    "function search(term) {\n"
    "  if (term === undefined) term = prompt('Search (regular expression)', '');\n"
    "  var m = document.getElementById('matched');\n"
    "  if (!term) { re = null; m.textContent = ''; render(); return; }\n"
    "  try { re = new RegExp(term); } catch (e) { m.textContent = 'bad expression'; return; }\n"
    "  m.textContent = 'Matched: ' + pct(matched()); render();\n"
    "}\n"
    "svg.addEventListener('click', function (e) {\n"
    "  var g = e.target.closest ? e.target.closest('g.f') : null;\n"
    "  if (g) zoom(g);\n"
    "});\n"
    "document.getElementById('unzoom').addEventListener('click', function (e) {"
    " e.stopPropagation(); unzoom(); });\n"
    "document.getElementById('search').addEventListener('click', function (e) {"
    " e.stopPropagation(); search(); });\n"
    "window.addEventListener('keydown', function (e) {\n"
    "  if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
    "  if (e.key === 'Escape') { search(''); unzoom(); }\n"
    "});\n"
    "render();\n";

/* Text for XML: markup escaped, anything but printable ASCII as '?'. */
static void fs_text(FILE *f, const char *s, size_t max)
{
	for (size_t k = 0; s[k] && k < max; k++) {
		unsigned char c = (unsigned char)s[k];
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else
			putc(c < 0x20 || c >= 0x7f ? '?' : c, f);
	}
}

/* The label that fits pw pixels (7 px a character), as the script's label(). */
static void fs_label(FILE *f, const char *name, double pw)
{
	double c = (pw - 6) / 7;
	size_t n = strlen(name);

	if (c < 3)
		return;
	if ((double)n <= c) {
		fs_text(f, name, n);
		return;
	}
	fs_text(f, name, (size_t)c - 2);
	fputs("..", f);
}

static uint32_t fs_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a: a stable colour per name */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static uint32_t fs_height(const struct flame_svg *s)
{
	return FS_TOP + (s->max_depth + 1) * FS_FH + FS_PAD * 2;
}

void flame_svg_begin(struct flame_svg *s)
{
	uint32_t h = fs_height(s);

	fprintf(s->f,
	        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	        "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	        "height=\"%" PRIu32 "\" viewBox=\"0 0 %d %" PRIu32 "\" data-width=\"%d\" "
	        "data-total=\"%" PRIu64 "\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
	        "<style>g.f:hover rect { stroke: black; stroke-width: 0.5; } g.f { cursor: "
	        "pointer; } .b { cursor: pointer; fill: #2050a0; }</style>\n"
	        "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
	        "<text x=\"%d\" y=\"22\" font-size=\"16\" text-anchor=\"middle\">",
	        FS_WIDTH, h, FS_WIDTH, h, FS_WIDTH, s->total, FS_WIDTH / 2);
	fs_text(s->f, s->title, 300);
	fprintf(s->f, "</text>\n<text x=\"%d\" y=\"40\" fill=\"#555\" text-anchor=\"middle\">",
	        FS_WIDTH / 2);
	fs_text(s->f, s->subtitle, 400);
	fprintf(s->f,
	        "</text>\n<text id=\"unzoom\" class=\"b\" x=\"%d\" y=\"22\" opacity=\"0.3\">Reset "
	        "zoom</text>\n<text id=\"search\" class=\"b\" x=\"%d\" y=\"22\" "
	        "text-anchor=\"end\">Search</text>\n<text id=\"matched\" x=\"%d\" y=\"%" PRIu32
	        "\" text-anchor=\"end\"></text>\n<g id=\"frames\">\n",
	        FS_PAD, FS_WIDTH - FS_PAD, FS_WIDTH - FS_PAD, h - 4);
}

void flame_svg_frame(struct flame_svg *s, const struct flame_frame *fr)
{
	double scale = s->total ? (double)(FS_WIDTH - 2 * FS_PAD) / (double)s->total : 0;
	double px = FS_PAD + (double)fr->x * scale, pw = (double)fr->w * scale;
	uint32_t y = fs_height(s) - FS_PAD - (fr->depth + 1) * FS_FH, h = fs_hash(fr->name);
	unsigned r = 200 + h % 55, gr = fr->kind ? 200 : 80 + (h >> 8) % 150,
	         b = fr->kind ? 220 : 55;
	double share = s->total ? 100.0 * (double)fr->w / (double)s->total : 0;

	fprintf(s->f,
	        "<g class=\"f\" data-x=\"%" PRIu64 "\" data-w=\"%" PRIu64 "\" data-d=\"%" PRIu32
	        "\" data-n=\"",
	        fr->x, fr->w, fr->depth);
	fs_text(s->f, fr->name, 4096);
	fputs("\"><title>", s->f);
	fs_text(s->f, fr->name, 4096);
	fprintf(s->f, " (%" PRIu64 " ns inclusive, %.2f%%; self %" PRIu64 " ns)</title>", fr->w,
	        share, fr->self);
	fprintf(s->f,
	        "<rect x=\"%.2f\" y=\"%" PRIu32 "\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
	        "fill=\"rgb(%u,%u,%u)\"/><text x=\"%.2f\" y=\"%" PRIu32 "\">",
	        px, y, pw, FS_FH - 1, r, gr, b, px + 3, y + FS_FH - 4);
	fs_label(s->f, fr->name, pw); /* what the script draws, for viewers without one */
	fputs("</text></g>\n", s->f);
}

void flame_svg_end(struct flame_svg *s)
{
	fprintf(s->f, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
	        flame_js);
}
