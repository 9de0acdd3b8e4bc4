"""Ruby: Ruby's own `Coverage` (lines) in every Ruby process, started by `RUBYOPT=-r<helper>`
before the suite's code loads; each writes the changed files' counts at exit (RubyToolchain)."""

from __future__ import annotations

from pathlib import Path

from testprism.tasks.model.benchmark import Suite
from testprism.tasks.model.changes import ChangedFile, analyse_reference
from testprism.tasks.model.hashing import digest
from testprism.tasks.model.workdir import WorkPaths
from testprism.tasks.score.coverage.instrument import runner_head, with_helpers
from testprism.tasks.score.coverage.reports import MeasuredFile, parse_ruby_report
from testprism.tasks.score.coverage.toolchains.base import Toolchain


_RUBY_RUNNER = runner_head("with Ruby's Coverage (lines) in every Ruby process") + """\
case "$here" in *[[:space:]]*) echo "testprism coverage: RUBYOPT cannot hold the path $here (a space)" >&2; exit 2;; esac
mkdir -p "$data/ruby"
(
  export RUBYOPT="-r$here/cover.rb${RUBYOPT:+ $RUBYOPT}"
  export TESTPRISM_COVERAGE_DATA="$data/ruby" TESTPRISM_COVERAGE_ROOT="$root" TESTPRISM_COVERAGE_FILES="$here/files"
  export TESTPRISM_JUNIT="$data/junit.xml"
  exec bash "$here/entry.sh"
)
status=$?
collecting
ruby --disable=gems "$here/collect.rb" "$report" "$data/ruby"
hand_back
exit "$status"
"""

# Loaded by RUBYOPT's -r before any of the suite's code: Coverage counts only what is loaded
# after it starts. at_exit handlers run last-registered first, so this one (the first) runs
# after RSpec's and minitest's own. A fork keeps the handler and writes its own file.
_RUBY_COVER = """\
# testprism coverage pass (tasks/score/coverage/toolchains.py): Ruby's Coverage in this process.
require "coverage"
Coverage.start(lines: true) unless Coverage.running?
at_exit do
  data = ENV["TESTPRISM_COVERAGE_DATA"]
  if data
    require "json"
    out = {}
    begin
      root = ENV.fetch("TESTPRISM_COVERAGE_ROOT")
      wanted = File.readlines(ENV.fetch("TESTPRISM_COVERAGE_FILES"), chomp: true).reject(&:empty?)
      roots = [File.expand_path(root)]
      roots << File.realpath(root) rescue nil
      Coverage.peek_result.each do |name, entry|
        rel = roots.map { |base| name.start_with?(base + "/") ? name[(base.size + 1)..] : nil }
                   .find { |r| r && wanted.include?(r) }
        (out[rel] ||= []) << (entry.is_a?(Hash) ? entry[:lines] : entry) if rel
      end
    rescue StandardError => e
      out = { "error" => "#{e.class}: #{e.message}" }
    end
    File.write(File.join(data, "#{Process.pid}.json"), JSON.generate(out))
  end
end
"""

_RUBY_COLLECTOR = """\
# testprism coverage pass (tasks/score/coverage/toolchains.py): every Ruby process's counts in one report.
require "json"
report, data = ARGV
out = { "data_files" => 0, "files" => {}, "error" => nil }
begin
  Dir.glob(File.join(data, "*.json")).sort.each do |name|
    out["data_files"] += 1
    parsed = JSON.parse(File.read(name))
    raise parsed["error"].to_s if parsed.key?("error")
    parsed.each { |rel, runs| (out["files"][rel] ||= []).concat(runs) }
  end
rescue StandardError => e
  out["error"] = "#{e.class}: #{e.message}"
end
File.write(report, JSON.generate(out))
"""


class RubyToolchain(Toolchain):
    """Ruby's own `Coverage` module (lines mode) in every Ruby process of the run, started by
    `RUBYOPT=-r<helper>` before the suite's code loads; each process writes the changed
    files' counts at exit, and the run gathers them into one report. A process that ends
    without running its at_exit handlers (`exit!`, a signal) writes none."""

    helpers_hash = digest("coverage-helpers-ruby", _RUBY_RUNNER, _RUBY_COVER, _RUBY_COLLECTOR)

    def analyse(self, tree: Path, reference: bytes) -> tuple[ChangedFile, ...]:
        """Changed .rb files."""
        return analyse_reference(tree, reference, lambda path: path.endswith(".rb"))

    def helpers(self, suite: Suite, changes: tuple[ChangedFile, ...], tree: Path, work: WorkPaths) -> Path:
        return with_helpers({
            "run.sh": _RUBY_RUNNER,
            "entry.sh": suite.entry + "\n",
            "cover.rb": _RUBY_COVER,
            "collect.rb": _RUBY_COLLECTOR,
            "files": "".join(f"{c.path}\n" for c in changes),
        }, work)

    def parse(self, report: bytes, tree: Path, changes: tuple[ChangedFile, ...]) -> dict[str, MeasuredFile]:
        if not report:
            raise ValueError("no Ruby coverage report: the suite's run left none")
        return parse_ruby_report(report)
