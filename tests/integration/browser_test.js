#!/usr/bin/env node
// The exports in a real browser (issue 11): ada's Chrome trace-event JSON
// and its folded stacks are loaded into speedscope (the npm package, which
// runs offline, served from 127.0.0.1) inside Debian's headless Chromium,
// driven by puppeteer-core; a screenshot of each is saved, and the names
// speedscope draws on its canvas must include the program's functions.
// Then ada's flame graph SVG: a click zooms into a frame, a search
// highlights the matching ones.
//
//   browser_test.js SPEEDSCOPE_DIR CHROMIUM OUT_DIR TRACE.json FOLDED.txt FLAME.svg FN...
//
// Exit 0 = pass, 1 = fail, 77 = skip: only when Chromium cannot start here
// (the reason is printed; tests/allowed_skips.txt decides where that is
// allowed). Screenshots: OUT_DIR/speedscope_chrome.png, speedscope_folded.png,
// flame_zoomed.png.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');

const [speedscopeDir, chromium, outDir, traceJson, folded, flameSvg, ...functions] =
    process.argv.slice(2);
const browserDir = path.join(__dirname, '..', '..', 'tools', 'browser');
let puppeteer;
try {
  puppeteer = require(path.join(browserDir, 'node_modules', 'puppeteer-core'));
} catch (e) {
  console.log(`FAIL: puppeteer-core is not installed in ${browserDir} (run tools/bootstrap.sh): ${e.message}`);
  process.exit(1);
}

const failures = [];
function check(cond, msg) {
  if (!cond) {
    failures.push(msg);
    console.log('FAIL: ' + msg);
  }
  return cond;
}

const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
               '.json': 'application/json', '.txt': 'text/plain', '.svg': 'image/svg+xml',
               '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2'};

// Serves speedscope's files at / and the test files at /data/NAME.
function serve() {
  const data = {'trace.json': traceJson, 'folded.txt': folded, 'flame.svg': flameSvg};
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
    let file = url.startsWith('/data/') ? data[url.slice(6)]
                                        : path.join(speedscopeDir, path.normalize(url === '/' ? '/index.html' : url));
    if (!file || (!url.startsWith('/data/') && !file.startsWith(speedscopeDir)) || !fs.existsSync(file)) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, {'Content-Type': types[path.extname(file)] || 'application/octet-stream'});
    fs.createReadStream(file).pipe(res);
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Records every string speedscope draws on a canvas.
function recordCanvasText() {
  window.__drawn = new Set();
  const orig = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
    window.__drawn.add(String(text));
    return orig.call(this, text, ...rest);
  };
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// Polls fn (in node) until it returns a true value or `tries` polls of
// 100 ms have passed: a run-away guard, not a timing assumption.
async function until(fn, tries = 600) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v)
      return v;
    await sleep(100);
  }
  return null;
}

// The text of speedscope's Sandwich table (DOM rows, virtualized: it is
// scrolled through to the end and every screenful collected).
async function sandwichText(page) {
  let text = '';
  for (let step = 0; step < 400; step++) {
    const r = await page.evaluate(() => {
      const boxes = Array.from(document.querySelectorAll('*')).filter(
          e => e.scrollHeight > e.clientHeight + 4 && /auto|scroll/.test(getComputedStyle(e).overflowY));
      const t = document.body.innerText;
      let done = true;
      for (const b of boxes) {
        if (b.scrollTop + b.clientHeight < b.scrollHeight - 1) {
          b.scrollTop += Math.max(20, b.clientHeight * 0.8);
          done = false;
        }
      }
      return {t, done};
    });
    text += '\n' + r.t;
    if (r.done)
      break;
    await sleep(30);
  }
  return text;
}

// Every profile speedscope made of the file (one per thread for a trace
// file; 'n' shows the next) in the Sandwich view, whose table names every
// function: each of the program's functions must be in one of them. The
// screenshots: the first profile's flame chart (Time Order) and Sandwich.
async function speedscope(browser, base, file, shot) {
  const page = await browser.newPage();
  await page.setViewport({width: 1400, height: 900});
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  await page.evaluateOnNewDocument(recordCanvasText);
  const url = `${base}/index.html#profileURL=${encodeURIComponent(base + '/data/' + file)}`;
  await page.goto(url, {waitUntil: 'load', timeout: 120000});
  // Loaded when the flame chart has drawn a name of the profile.
  const drawn = await until(() => page.evaluate(() => (window.__drawn || new Set()).size > 3));
  const body = await page.evaluate(() => document.body.innerText);
  check(drawn && !/Something went wrong|Unrecognized format|Failed to/i.test(body),
        `speedscope could not load ${file}: ${body.slice(0, 300)}`);
  await page.screenshot({path: path.join(outDir, shot.replace('.png', '_flamechart.png'))});
  const m = /\((\d+)\/(\d+)\)/.exec(body);
  const profiles = m ? +m[2] : 1;
  await page.keyboard.press('3'); // Sandwich
  await until(() => page.evaluate(() => /Symbol Name/.test(document.body.innerText)));
  await page.screenshot({path: path.join(outDir, shot)});
  let text = '';
  for (let i = 0; i < profiles && i < 64; i++) {
    if (i) {
      // The title says (k/N) before the table is redrawn: wait for the
      // next profile's title, then for the table to read the same twice
      // (a loaded machine redraws late; read early, it was the last
      // profile's rows again and a thread's functions went missing).
      await page.keyboard.press('n');
      const want = `(${i + 1}/${profiles})`;
      await until(() => page.evaluate(w => document.body.innerText.includes(w), want));
      let last = '';
      await until(async () => {
        const now = await page.evaluate(() => document.body.innerText);
        const same = now === last;
        last = now;
        return same;
      }, 50);
    }
    text += await sandwichText(page);
  }
  const names = new Set(text.split('\n').map(l => l.trim().replace(/ \{.*\}$/, '')));
  const missing = functions.filter(fn => !names.has(fn));
  check(missing.length === 0,
        `speedscope (${file}, ${profiles} profiles) does not list ${missing.join(', ')} ` +
        `(screenshot ${path.join(outDir, shot)})`);
  check(errors.length === 0, `speedscope (${file}) page errors: ${errors.join('; ')}`);
  await page.close();
}

// ada's own SVG: click a frame to zoom, search to highlight. The widest
// frame of the function is the one clicked.
async function flame(browser, base, fn) {
  const page = await browser.newPage();
  await page.setViewport({width: 1200, height: 800});
  await page.goto(`${base}/data/flame.svg`, {waitUntil: 'load', timeout: 60000});
  const width = () => page.evaluate(f => {
    let best = null;
    for (const g of document.querySelectorAll('g.f'))
      if (g.getAttribute('data-n') === f && (!best || +g.getAttribute('data-w') > +best.getAttribute('data-w')))
        best = g;
    if (best) best.id = 'picked';
    return best ? +best.querySelector('rect').getAttribute('width') : -1;
  }, fn);
  const before = await width();
  if (!check(before > 0, `flame: no frame for ${fn}`))
    return;
  await page.evaluate(() => document.querySelector('#picked rect')
                                .dispatchEvent(new MouseEvent('click', {bubbles: true})));
  const after = await width();
  const unzoom = await page.$eval('#unzoom', t => getComputedStyle(t).opacity);
  check(after > 1170 && after > before, `flame: clicking ${fn} did not zoom (${before} -> ${after} px)`);
  check(unzoom === '1', 'flame: "Reset zoom" is not active after a zoom');
  await page.screenshot({path: path.join(outDir, 'flame_zoomed.png')});
  await page.evaluate(f => search(f), fn);
  const matched = await page.$eval('#matched', t => t.textContent);
  const fill = await page.$eval('#picked rect', r => r.style.fill);
  check(/^Matched: [0-9.]+%$/.test(matched), `flame: search shows '${matched}'`);
  check(fill.replace(/ /g, '') === 'rgb(230,0,230)', `flame: search did not highlight ${fn} (${fill})`);
  await page.evaluate(() => document.getElementById('unzoom')
                                .dispatchEvent(new MouseEvent('click', {bubbles: true})));
  const reset = await width();
  check(Math.abs(reset - before) < 0.5, `flame: Reset zoom left ${fn} at ${reset} px, was ${before}`);
  await page.close();
}

(async () => {
  let browser;
  try {
    browser = await puppeteer.launch({
      executablePath: chromium, headless: true, timeout: 60000,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    });
  } catch (e) {
    console.log(`SKIP: Chromium cannot start here (${chromium}): ${e.message.split('\n')[0]}`);
    process.exit(77);
  }
  const server = await serve();
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    await speedscope(browser, base, 'trace.json', 'speedscope_chrome.png');
    await speedscope(browser, base, 'folded.txt', 'speedscope_folded.png');
    await flame(browser, base, functions[0]);
  } catch (e) {
    check(false, 'browser: ' + e.stack);
  } finally {
    await browser.close();
    server.close();
  }
  console.log(failures.length ? `${failures.length} browser check(s) failed` : 'ok');
  process.exit(failures.length ? 1 : 0);
})();
