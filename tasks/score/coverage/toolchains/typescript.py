"""TypeScript: NODE_V8_COVERAGE as for JavaScript, and a preloaded hook that keeps the code
Vitest's vite-node compiles for each changed file; the collector maps V8's counts on it back
to the .ts lines through its inline source map (TypeScriptToolchain)."""

from __future__ import annotations

import re
from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_mapped_v8_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


_TS_RUNNER = runner_head("with V8 coverage from every Node process, mapped through vite-node's source maps") + '''\
case "$here" in *[[:space:]]*) echo "testprism coverage: NODE_OPTIONS cannot hold the path $here (a space)" >&2; exit 2;; esac
mkdir -p "$data/scripts"
(
  export NODE_V8_COVERAGE="$data/v8"
  export NODE_OPTIONS="--require $here/hook.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
  export TESTPRISM_COVERAGE_SCRIPTS="$data/scripts" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
node "$here/collect.cjs" "$report" "$data/v8" "$data/scripts" "$root" "$here/files"
hand_back
exit "$status"
'''

_TS_HOOK = '''\
'use strict';
// testprism coverage pass (tasks/score/coverage/toolchains.py): in every Node process of the run, the
// code that vite-node (Vitest) compiles for a changed file, kept to map V8's ranges back through
// its source map; and V8's coverage written on SIGTERM too (Vitest's pool ends its forks so).
const fs = require('fs');
const path = require('path');
const v8 = require('v8');
const vm = require('vm');

const scripts = process.env.TESTPRISM_COVERAGE_SCRIPTS;
if (scripts) {
  const roots = [path.resolve(process.env.TESTPRISM_COVERAGE_ROOT)];
  try { roots.push(fs.realpathSync(roots[0])); } catch (e) { /* the plain root is enough */ }
  const wanted = new Set(fs.readFileSync(process.env.TESTPRISM_COVERAGE_FILES, 'utf8').split('\\n').filter(Boolean));
  let seq = 0;
  const run = vm.runInThisContext;
  vm.runInThisContext = function runInThisContext(code, options) {
    const file = options && typeof options === 'object' ? options.filename : options;
    if (typeof code === 'string' && typeof file === 'string') {
      const rel = roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
      if (rel !== undefined) {
        seq += 1;
        fs.writeFileSync(path.join(scripts, `${process.pid}-${seq}.json`), JSON.stringify({
          file, rel, code, lineOffset: Number(options.lineOffset) || 0, columnOffset: Number(options.columnOffset) || 0,
        }));
      }
    }
    return run.apply(this, arguments);
  };
  const flush = () => {
    v8.takeCoverage();
    if (process.listenerCount('SIGTERM') === 1) {
      process.removeListener('SIGTERM', flush);
      process.kill(process.pid, 'SIGTERM');
    }
  };
  process.on('SIGTERM', flush);
}
'''

_TS_COLLECTOR = '''\
'use strict';
// testprism coverage pass: the changed files' lines that ran, mapped from V8's ranges over the code
// vite-node compiled back to the .ts lines through that code's own source map (node:module's SourceMap).
const fs = require('fs');
const path = require('path');
const { SourceMap } = require('module');
const { fileURLToPath } = require('url');

const [report, data, scriptsDir, root, list] = process.argv.slice(2);
const wanted = new Set(fs.readFileSync(list, 'utf8').split('\\n').filter(Boolean));
const roots = [path.resolve(root)];
try { roots.push(fs.realpathSync(root)); } catch (e) { /* the plain root is enough */ }
const relOf = (file) => roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
const MAP = /\\/\\/# sourceMappingURL=data:application\\/json[^,]*;base64,([A-Za-z0-9+/=]+)\\s*$/;

// The lines of `rel` that a script's characters map to: every non-blank one a statement, a ran
// one (the innermost range holding it has a count) executed. Only a mapping segment on the
// character's own generated line counts (the wrapper, the tail and comments map to none).
function lines(captured, functions) {
  const { code, file } = captured;
  const found = code.split('\\n').map((line) => line.match(MAP)).filter(Boolean).pop();
  if (!found) throw new Error(`${captured.rel}: its compiled code has no inline source map`);
  const map = new SourceMap(JSON.parse(Buffer.from(found[1], 'base64').toString('utf8')));
  const counts = new Array(code.length).fill(0);
  const ranges = functions.flatMap((f) => f.ranges).sort((a, b) => a.startOffset - b.startOffset || b.endOffset - a.endOffset);
  for (const r of ranges) counts.fill(r.count, Math.max(0, r.startOffset), Math.min(code.length, r.endOffset));
  const statements = new Set();
  const executed = new Set();
  let line = 0;
  let column = 0;
  for (let i = 0; i < code.length; i += 1, column += 1) {
    const char = code[i];
    if (char === '\\n') { line += 1; column = -1; continue; }
    if (/\\s/.test(char)) continue;
    const at = line + captured.lineOffset;
    const entry = map.findEntry(at, line === 0 ? column + captured.columnOffset : column);
    if (!entry || entry.generatedLine !== at || entry.originalLine === undefined) continue;
    const source = String(entry.originalSource || '');
    const original = source.startsWith('file:') ? fileURLToPath(source) : path.resolve(path.dirname(file), source);
    if (relOf(original) !== captured.rel) continue;
    statements.add(entry.originalLine + 1);
    if (counts[i]) executed.add(entry.originalLine + 1);
  }
  return { statements: [...statements].sort((a, b) => a - b), executed: [...executed].sort((a, b) => a - b) };
}

const out = { data_files: 0, files: {}, error: null };
try {
  const captured = {};
  for (const name of fs.existsSync(scriptsDir) ? fs.readdirSync(scriptsDir).sort() : []) {
    const script = JSON.parse(fs.readFileSync(path.join(scriptsDir, name), 'utf8'));
    (captured[`${name.split('-')[0]} ${script.rel}`] = captured[`${name.split('-')[0]} ${script.rel}`] || []).push(script);
  }
  const names = fs.existsSync(data) ? fs.readdirSync(data).filter((n) => n.endsWith('.json')).sort() : [];
  for (const name of names) {
    out.data_files += 1;
    const pid = name.split('-')[1];
    for (const script of JSON.parse(fs.readFileSync(path.join(data, name), 'utf8')).result || []) {
      if (typeof script.url !== 'string' || !script.url.startsWith('file:')) continue;
      const rel = relOf(fileURLToPath(script.url));
      if (rel === undefined) continue;
      const extent = Math.max(...script.functions.flatMap((f) => f.ranges.map((r) => r.endOffset)));
      const same = (captured[`${pid} ${rel}`] || []).find((c) => c.code.length === extent);
      if (!same) throw new Error(`${rel}: V8 ran code of it that no vm.runInThisContext of vite-node compiled (another loader?): its lines cannot be mapped`);
      (out.files[rel] = out.files[rel] || []).push(lines(same, script.functions));
    }
  }
} catch (e) {
  out.error = String(e && e.stack || e).slice(0, 2000);
}
fs.writeFileSync(report, JSON.stringify(out));
'''

_TS_FILES = re.compile(r"(?<!\.d)\.(ts|mts|cts)$")


class TypeScriptToolchain(Toolchain):
    """V8 block coverage (NODE_V8_COVERAGE) of the code Vitest runs, mapped back to the .ts
    lines. Vitest's vite-node compiles each module (esbuild) and runs it through
    `vm.runInThisContext`, whose scripts Node's own source-map cache never records; so a
    preloaded hook (`NODE_OPTIONS=--require`) keeps the compiled code of each changed file,
    inline source map included, and the collector maps every non-blank character's count
    through that map with Node's own `module.SourceMap` (a character counts only through a
    mapping on its own generated line: the wrapper and comments map to none). The hook also
    writes V8's coverage on SIGTERM, which is how Vitest's pool ends its forks. A changed file
    that V8 ran in code the hook did not see (another loader: tsx, ts-node, Node's type
    stripping) cannot be mapped: `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-typescript", _TS_RUNNER, _TS_HOOK, _TS_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .ts/.mts/.cts files (not declaration files: no code runs from them)."""
        return analyse_reference(tree, reference, lambda path: _TS_FILES.search(path) is not None)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _TS_RUNNER,
            "entry.sh": suite.entry + "\n",
            "hook.cjs": _TS_HOOK,
            "collect.cjs": _TS_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no TypeScript coverage report: the suite's run left none")
        return parse_mapped_v8_report(report)
