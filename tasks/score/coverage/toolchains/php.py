"""PHP: PCOV in every PHP process, started by a file PHP prepends to each script (an ini file
added through `PHP_INI_SCAN_DIR`); each writes the changed files' lines at shutdown
(PhpToolchain)."""

from __future__ import annotations

from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_pcov_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


_PHP_RUNNER = runner_head("with PCOV in every PHP process") + """\
case "$here" in *[[:space:]:]*) echo "testprism coverage: PHP_INI_SCAN_DIR cannot hold the path $here" >&2; exit 2;; esac
mkdir -p "$data/php"
(
  export PHP_INI_SCAN_DIR="${PHP_INI_SCAN_DIR:-}:$here/php"
  export TESTPRISM_COVERAGE_DATA="$data/php" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_COVERAGE_PREPEND="$here/prepend.php"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
php -n "$here/collect.php" "$report" "$data/php"
hand_back
exit "$status"
"""

# PHP_INI_SCAN_DIR's empty first entry keeps the scan of PHP's own folder (where php-pcov's
# ini loads the extension); this one adds PCOV's settings and the prepended file, ${...}
# being read from the environment by PHP's ini parser.
_PHP_INI = """\
; testprism coverage pass (tasks/score/coverage/toolchains.py): PCOV over the program, started in every script
pcov.enabled = 1
pcov.directory = "${TESTPRISM_COVERAGE_ROOT}"
auto_prepend_file = "${TESTPRISM_COVERAGE_PREPEND}"
"""

# Runs before each script's own code. PCOV reports the executable lines of the files it
# instrumented: 1 ran, -1 did not. The collection is itself a shutdown function registered
# from one, so it runs after every other (PHPUnit's, destructors' code included).
_PHP_PREPEND = """\
<?php
// testprism coverage pass (tasks/score/coverage/toolchains.py): PCOV in this process, the changed files' lines at exit.
(static function (): void {
    $data = getenv('TESTPRISM_COVERAGE_DATA');
    if ($data === false) {
        return;
    }
    $out = $data . '/' . getmypid() . '.json';
    if (!extension_loaded('pcov')) {
        file_put_contents($out, json_encode(['error' => 'PCOV is not loaded in this PHP (Debian: php-pcov)']));
        return;
    }
    \\pcov\\start();
    register_shutdown_function(static function () use ($out): void {
        register_shutdown_function(static function () use ($out): void {
            \\pcov\\stop();
            $root = (string) getenv('TESTPRISM_COVERAGE_ROOT');
            $wanted = file((string) getenv('TESTPRISM_COVERAGE_FILES'), FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [];
            $files = [];
            foreach (array_unique([rtrim($root, '/'), rtrim((string) realpath($root), '/')]) as $base) {
                foreach ($wanted as $rel) {
                    $files[$base . '/' . $rel] = $rel;
                }
            }
            $found = [];
            foreach (\\pcov\\collect(\\pcov\\all) as $name => $lines) {
                if (isset($files[$name])) {
                    $found[$files[$name]][] = (object) $lines;
                }
            }
            file_put_contents($out, json_encode((object) $found));
        });
    });
})();
"""

_PHP_COLLECTOR = """\
<?php
// testprism coverage pass (tasks/score/coverage/toolchains.py): every PHP process's lines in one report.
[, $report, $data] = $argv;
$out = ['data_files' => 0, 'files' => new stdClass(), 'error' => null];
try {
    $names = glob($data . '/*.json') ?: [];
    sort($names);
    foreach ($names as $name) {
        $out['data_files'] += 1;
        $parsed = json_decode((string) file_get_contents($name), true, 64, JSON_THROW_ON_ERROR);
        if (isset($parsed['error'])) {
            throw new RuntimeException((string) $parsed['error']);
        }
        foreach ($parsed as $rel => $runs) {
            $out['files']->$rel = array_merge($out['files']->$rel ?? [], array_map(fn ($lines) => (object) $lines, $runs));
        }
    }
} catch (Throwable $e) {
    $out['error'] = get_class($e) . ': ' . $e->getMessage();
}
file_put_contents($report, json_encode($out));
"""


class PhpToolchain(Toolchain):
    """PCOV (Debian's php-pcov, in the PHP environment and .ci/setup) in every PHP process of
    the run: `PHP_INI_SCAN_DIR` adds an ini file that points PCOV at the program and
    prepends a helper to every script, which starts PCOV and, at shutdown, writes the
    changed files' executable lines and whether each ran. A process that ends without its
    shutdown functions (killed, a fatal error in PCOV's absence) writes none; an
    environment without PCOV is `coverage_failed`."""

    helpers_hash = digest("coverage-helpers-php", _PHP_RUNNER, _PHP_INI, _PHP_PREPEND, _PHP_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .php files."""
        return analyse_reference(tree, reference, lambda path: path.endswith(".php"))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _PHP_RUNNER,
            "entry.sh": suite.entry + "\n",
            "php/zz-testprism-coverage.ini": _PHP_INI,
            "prepend.php": _PHP_PREPEND,
            "collect.php": _PHP_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no PCOV report: the suite's run left none")
        return parse_pcov_report(report)
