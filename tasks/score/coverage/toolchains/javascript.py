"""JavaScript: `NODE_V8_COVERAGE` makes every Node process write V8's block coverage; a
small collector (`collect.cjs`: CommonJS whatever the package's `type`) keeps the changed
files' entries, and the harness turns V8's offsets into lines itself
(reports.parse_v8_report). Not c8: inside the sandbox it is not in the instance's
environment and the run has no network to fetch it; on the host it would open the source
files the run's own report names, as root, where the harness reads only the reference tree
it materialised. The harness checks that each script V8 saw has the file's length, so code
transformed on load (babel-jest, ts-node) is refused (`coverage_failed`), not mapped onto
wrong lines."""

from __future__ import annotations

import re
from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_v8_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


_JS_RUNNER = runner_head("with V8 coverage from every Node process") + '''\
(
  export NODE_V8_COVERAGE="$data/v8"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
node "$here/collect.cjs" "$report" "$data/v8" "$root" "$here/files"
hand_back
exit "$status"
'''

_JS_COLLECTOR = '''\
'use strict';
// testprism coverage pass: the changed files' V8 coverage, one list of functions per process.
const fs = require('fs');
const path = require('path');
const { fileURLToPath } = require('url');

const [report, data, root, list] = process.argv.slice(2);
const wanted = new Set(fs.readFileSync(list, 'utf8').split('\\n').filter(Boolean));
const roots = [path.resolve(root)];
try { roots.push(fs.realpathSync(root)); } catch (e) { /* the plain root is enough */ }
const out = { data_files: 0, files: {}, error: null };
try {
  const names = fs.existsSync(data) ? fs.readdirSync(data).filter((n) => n.endsWith('.json')).sort() : [];
  for (const name of names) {
    out.data_files += 1;
    const parsed = JSON.parse(fs.readFileSync(path.join(data, name), 'utf8'));
    for (const script of parsed.result || []) {
      if (typeof script.url !== 'string' || !script.url.startsWith('file:')) continue;
      const file = fileURLToPath(script.url);
      const rel = roots.map((base) => path.relative(base, file).split(path.sep).join('/')).find((r) => wanted.has(r));
      if (rel !== undefined) (out.files[rel] = out.files[rel] || []).push(script.functions);
    }
  }
} catch (e) {
  out.error = String(e);
}
fs.writeFileSync(report, JSON.stringify(out));
'''

_JS_FILES = re.compile(r"\.(js|mjs|cjs)$")


class JavaScriptToolchain(Toolchain):
    """V8 block coverage through NODE_V8_COVERAGE."""

    helpers_hash = digest("coverage-helpers-javascript", _JS_RUNNER, _JS_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .js/.mjs/.cjs files (what Node runs untransformed)."""
        return analyse_reference(tree, reference, lambda path: _JS_FILES.search(path) is not None)

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _JS_RUNNER,
            "entry.sh": suite.entry + "\n",
            "collect.cjs": _JS_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        sources = {c.path: (tree / c.path).read_bytes().decode("utf-8", errors="replace") for c in changes}
        return parse_v8_report(report, sources)
