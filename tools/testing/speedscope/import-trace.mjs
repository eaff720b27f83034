// SPDX-License-Identifier: GPL-2.0
//
// Import a Chrome trace-event JSON file (ipttool decode --perfetto) with
// speedscope's own importer, as the speedscope web app does, and report
// what it made of it, for userspace/tests/test_decode.c.
//
//   node import-trace.mjs FILE.json
//   node import-trace.mjs --folded FILE   (ipttool decode --folded)
//
// speedscope's npm package (1.25.0) ships only the web app's browser bundle
// (dist/release/speedscope-*.js, one minified IIFE that exports nothing),
// so its importer cannot be imported as a module.  This script runs that
// bundle in a node vm context with a direct-eval hook added at the start of
// the IIFE, which reaches the bundle's own functions by their minified
// names; it finds those names from strings of speedscope's source
// (src/import/index.ts logs "Importing as Trace Event Format profile" before
// calling importTraceEvents of src/import/trace-event.ts) and runs the
// module initialiser that esbuild emitted after importTraceEvents.  The
// web app's own start-up stops at its first use of `window`, after every
// module definition has run.  If a speedscope release changes that shape,
// this fails loudly (exit 1), never silently.
//
// Where speedscope is: $SPEEDSCOPE_DIR, else ~/.cache/ipt/speedscope/
// node_modules/speedscope (scripts/setup installs it there), else the
// global npm root.  Not found: exit 77 with the reason on stdout.
//
// With --folded, the file goes through speedscope's importer of Brendan
// Gregg's collapsed stacks (src/import/bg-flamegraph.ts,
// importFromBGFlameGraph, found by the "Importing as collapsed stack
// format" log line before its call), as the web app imports a
// *.collapsedstack.txt file, and the output is one JSON object: version,
// nwarnings, warnings, calls (frames its call tree opens), weight (its
// profile's total weight), frames (distinct frames it made), and the same
// counted from the file by this script: file_lines, file_weight,
// file_frames (a line is "STACK COUNT", frames split at ';').
//
// Output: one JSON object on stdout:
//   version    speedscope's version
//   warnings   what the importer console.warn()ed (the first 20), nwarnings
//              the count: speedscope warns for every "E" it ignores or that
//              does not match the frame on top of its stack
//              (trace-event.ts tryToLeaveFrame) and for every frame still
//              open at the end
//   profiles   per (pid, tid), in speedscope's order: name (what speedscope
//              shows: process and thread names), calls (frames its call tree
//              has, in order), expected (spans of positive duration the file
//              itself has on that track, matching each "E" to the last open
//              "B"), first_mismatch (index of the first frame whose name
//              differs from the file's span, or -1)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import {execFileSync} from 'node:child_process';

function skip(why) {
  process.stdout.write(JSON.stringify({skip: why}) + '\n');
  process.exit(77);
}

function fail(why) {
  process.stdout.write(JSON.stringify({error: why}) + '\n');
  process.exit(1);
}

function findSpeedscope() {
  const dirs = [];
  if (process.env.SPEEDSCOPE_DIR) dirs.push(process.env.SPEEDSCOPE_DIR);
  dirs.push(path.join(os.homedir(), '.cache/ipt/speedscope/node_modules/speedscope'));
  try {
    const root = execFileSync('npm', ['root', '-g'], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']});
    dirs.push(path.join(root.trim(), 'speedscope'));
  } catch (e) {
    // no npm: only the places above
  }
  for (const d of dirs)
    if (fs.existsSync(path.join(d, 'package.json'))) return d;
  skip('speedscope is not installed (run scripts/setup, or set SPEEDSCOPE_DIR); looked in ' + dirs.join(', '));
}

function loadImporter(dir, folded) {
  const version = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  const rel = path.join(dir, 'dist/release');
  const js = fs.existsSync(rel) && fs.readdirSync(rel).find(f => /^speedscope-[\w-]+\.js$/.test(f));
  if (!js) fail(`speedscope ${version}: no dist/release/speedscope-*.js bundle in ${dir}`);
  let src = fs.readFileSync(path.join(rel, js), 'utf8');

  const call = folded ?
    /return console\.log\("Importing as collapsed stack format"\),()()[\w$]+\(([\w$]+)\([\w$]+\)\)/.exec(src) :
    /if\(([\w$]+)\(([\w$]+)\)\)return console\.log\("Importing as Trace Event Format profile"\),([\w$]+)\(\2\)/.exec(src);
  const esm = /var ([\w$]+)=\(\w,\w\)=>\(\)=>\(\w&&\(\w=\w\(\w=0\)\),\w\)/.exec(src);
  const what = folded ? 'importFromBGFlameGraph' : 'importTraceEvents';
  if (!call || !esm) fail(`speedscope ${version}: cannot find ${what} in ${js}`);
  const importer = call[3];
  const at = src.indexOf('function ' + importer + '(');
  const init = new RegExp('([\\w$]+)=' + esm[1].replace(/\$/g, '\\$') + '\\(\\(\\)=>\\{').exec(src.slice(at));
  if (at < 0 || !init) fail(`speedscope ${version}: cannot find the initialiser of ${what} in ${js}`);

  const head = '"use strict";(()=>{';
  if (!src.startsWith(head)) fail(`speedscope ${version}: ${js} is not one strict IIFE`);
  src = head + 'globalThis.__iptEval=(s)=>eval(s);' + src.slice(head.length);

  const warnings = [];
  const quiet = () => {};
  const ctx = {console: {log: quiet, info: quiet, debug: quiet, error: quiet, time: quiet, timeEnd: quiet,
                         warn: (...a) => warnings.push(a.join(' '))}};
  ctx.globalThis = ctx;
  vm.createContext(ctx);
  try {
    vm.runInContext(src, ctx, {filename: js});
  } catch (e) {
    // the web app's start-up needs a browser; the modules are defined by then
  }
  if (typeof ctx.__iptEval !== 'function') fail(`speedscope ${version}: the bundle did not run`);
  ctx.__iptEval(init[1])();
  return {version, importTraceEvents: ctx.__iptEval(importer), warnings};
}

// The spans the file itself has, per "pid:tid": each "E" closes the last
// open "B" of its track; speedscope's frame key is the name, then the args
// as JSON (trace-event.ts getEventId).
function fileSpans(events) {
  const tracks = new Map();
  for (const ev of events) {
    if (ev.ph !== 'B' && ev.ph !== 'E') continue;
    const k = `${Number(ev.pid)}:${Number(ev.tid)}`;
    if (!tracks.has(k)) tracks.set(k, {stack: [], spans: []});
    const t = tracks.get(k);
    if (ev.ph === 'B') {
      const span = {key: (ev.name || '(unnamed)') + (ev.args ? ' ' + JSON.stringify(ev.args) : ''), ts: ev.ts, end: null};
      t.spans.push(span);
      t.stack.push(span);
    } else if (t.stack.length) {
      t.stack.pop().end = ev.ts;
    }
  }
  return tracks;
}

// --folded: speedscope's collapsed-stack importer on FILE, against the file's own counts.
function importFolded(file) {
  const dir = findSpeedscope();
  const {version, importTraceEvents: importFolded, warnings} = loadImporter(dir, true);
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  const names = new Set();
  let weight = 0;
  for (const l of lines) {
    const m = /^(.*) (\d+)$/.exec(l);
    if (!m) fail(`${file}: not a folded line: ${l.slice(0, 200)}`);
    weight += Number(m[2]);
    for (const f of m[1].split(';')) names.add(f);
  }
  let p;
  try {
    p = importFolded({splitLines: () => lines[Symbol.iterator](), firstChunk: () => text.slice(0, 4096)});
  } catch (e) {
    fail(`speedscope ${version} could not import ${file}: ${e}`);
  }
  if (!p) fail(`speedscope ${version} found no samples in ${file}`);
  let frames = 0, calls = 0;
  p.forEachFrame(() => frames++);
  p.forEachCall(() => calls++, () => {});
  process.stdout.write(JSON.stringify({version, nwarnings: warnings.length, warnings: warnings.slice(0, 20),
                                       calls, weight: p.getTotalWeight(), frames, file_lines: lines.length,
                                       file_weight: weight, file_frames: names.size}) + '\n');
  process.exit(0);
}

if (process.argv[2] === '--folded') importFolded(process.argv[3] || fail('usage: node import-trace.mjs --folded FILE'));
const file = process.argv[2];
if (!file) fail('usage: node import-trace.mjs FILE.json');
const dir = findSpeedscope();
const {version, importTraceEvents, warnings} = loadImporter(dir, false);
const text = fs.readFileSync(file, 'utf8');
const spans = fileSpans(JSON.parse(text).traceEvents || []);
let group;
try {
  group = importTraceEvents(JSON.parse(text));
} catch (e) {
  fail(`speedscope ${version} could not import ${file}: ${e}`);
}
const profiles = [];
for (const p of group.profiles || []) {
  const m = /\(pid (\d+), tid (\d+)\)$|\(pid (\d+)\), .*\(tid (\d+)\)$/.exec(p.getName());
  const key = m ? `${m[1] || m[3]}:${m[2] || m[4]}` : null;
  const want = key && spans.has(key) ? spans.get(key).spans.filter(s => s.end !== null && s.end > s.ts) : [];
  const got = [];
  p.forEachCall(node => got.push(node.frame.name), () => {});
  let first = -1;
  for (let i = 0; i < Math.max(got.length, want.length); i++)
    if (i >= got.length || i >= want.length || got[i] !== want[i].key) {
      first = i;
      break;
    }
  profiles.push({name: p.getName(), track: key, calls: got.length, expected: want.length,
                 first_mismatch: first, first_names: got.slice(0, 3)});
}
process.stdout.write(JSON.stringify({version, nwarnings: warnings.length, warnings: warnings.slice(0, 20), profiles}) + '\n');
