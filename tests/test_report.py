"""The HTML report (tasks/report/, flows/report.py): the audit's findings, escaping of
untrusted text, no external reference, the charts, and the page in headless Chromium with
no console error."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from testprism.storage import SCHEMAS, Store, StoreError
from testprism.tasks.model.benchmark import load_benchmark
from testprism.tasks.score.coverage.probe import measure_coverage
from testprism.tasks.score.coverage.summary import coverage_summary
from testprism.tasks.replay.runs import execute_batch, finished_keys, pending_runs, plan, record_plan, unrunnable_rows
from testprism.tasks.execution.batch import ExecutionOptions
from testprism.tasks.report.charts import Point, bars_svg, radar_svg, scatter_svg
from testprism.tasks.report.data import audit_frame, load_report_data
from testprism.tasks.report.html import anchor, render_report, write_report
from testprism.tasks.score.scores import score_tables, write_scores
from tests.benchfixture import CHECKS, WEAK, make_benchmark


SOURCES = {"i1": "src-a", "i2": "src-b"}
HOSTILE = '</pre><script>alert("x")</script><img src="https://evil.example/x.png" onerror="alert(1)">'


# -- stores --------------------------------------------------------------------------------------------


def score(store: Store, replicates: int = 200) -> None:
    """The score flow's tables, without Prefect (flows/score.py does the same)."""
    write_scores(store, score_tables(store, replicates, seed=42))


def case(name: str, outcome: str, message: str = "") -> dict:
    return {"name": name, "outcome": outcome, "message": message}


def hand_made_store(root: Path) -> Store:
    """Two instances, three configurations: `strong` right everywhere, `biased` rejects the
    valid candidate `v1` of i1, `weak` accepts the invalid `x1` of i1; `weak` has no run
    for i2's x2 (missing: E/not_run). Messages and output carry hostile text."""
    store = Store(root)
    pools = {"i1": {"v1": "valid", "v2": "valid", "x1": "invalid"}, "i2": {"v3": "valid", "x2": "invalid"}}
    states = {iid: [("buggy", None, None), ("reference", None, None)]
              + [("candidate", cid, label) for cid, label in pool.items()] for iid, pool in pools.items()}
    panels, suites, runs = [], [], []
    for iid, rows in states.items():
        for kind, cid, label in rows:
            panels.append({"instance_id": iid, "source": SOURCES[iid], "state": kind,
                           "candidate_id": cid, "label": label, "state_hash": f"{iid}-{cid or kind}"})
    for conf in ("strong", "biased", "weak"):
        for iid, rows in states.items():
            suites.append({"configuration": conf, "instance_id": iid, "suite_hash": "h", "present": True})
            for kind, cid, label in rows:
                outcome = {"buggy": "F", "reference": "P", "valid": "P", "invalid": "F"}[label or kind]
                tests = [case("tmp.test_m::test_ok", "passed")]
                if conf == "biased" and cid == "v1":
                    outcome = "F"
                    message = "assert '_helper' in names\n" + HOSTILE
                    tests.append(case("tmp.test_m::test_uses_helper", "failed", message))
                if conf == "weak" and cid == "x1":
                    outcome = "P"
                if conf == "weak" and cid == "x2":
                    continue
                runs.append({
                    "run_key": f"{conf}-{iid}-{cid or kind}", "instance_id": iid, "source": SOURCES[iid],
                    "configuration": conf, "state": kind, "candidate_id": cid, "label": label, "outcome": outcome,
                    "reason": None, "exit_code": 0 if outcome == "P" else 1, "duration_s": 0.1, "attempts": 1,
                    "stdout_tail": "output " + HOSTILE, "started_at": datetime(2026, 1, 1, tzinfo=UTC),
                    "suite_hash": "h", "state_hash": "h", "environment_hash": "h", "policy_hash": "h",
                    "backend": "local", "isolation": "bubblewrap", "tests": tests,
                })
    # An older run of biased/i1/v1 that passed: the newest run is the one scored and audited.
    older = dict(runs[[r["run_key"] for r in runs].index("biased-i1-v1")])
    runs.append({**older, "run_key": "biased-i1-v1-old", "outcome": "P", "tests": [],
                 "started_at": datetime(2025, 1, 1, tzinfo=UTC)})
    for name, rows in (("panels", panels), ("suites", suites), ("runs", runs)):
        store.append(name, pa.Table.from_pylist(rows, schema=SCHEMAS[name]))
    score(store)
    return store


def hand_made_benchmark(root: Path) -> Path:
    """Instance folders holding the diffs and notes of the hand-made store's candidates."""
    for iid, candidates in {"i1": ("v1", "v2", "x1"), "i2": ("v3", "x2")}.items():
        folder = root / "instances" / iid
        (folder / "program").mkdir(parents=True)
        (folder / "program" / "m.py").write_text("x = 1\n")
        (folder / "instruction.md").write_text("fix it\n")
        patch = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # {}\n"
        (folder / "reference.diff").write_text(patch.format("reference"))
        (folder / "checks.diff").write_text(patch.format("checks"))
        toml = f'id = "{iid}"\nsource = "s"\n[checks]\ncommand = "true"\nfail_to_pass = ["t"]\n'
        for cid in candidates:
            (folder / f"{cid}.diff").write_text(patch.format(f"{cid} {HOSTILE}"))
            label = "valid" if cid.startswith("v") else "invalid"
            toml += (f'[[candidates]]\nid = "{cid}"\nlabel = "{label}"\npatch = "{cid}.diff"\n'
                     f'note = "note of {cid}: <b>breaks</b> nothing"\n')
        (folder / "instance.toml").write_text(toml)
    return root


# -- audit, escaping, charts ------------------------------------------------------------------------


def test_audit_finds_rejected_valid_accepted_invalid_and_missing_runs(tmp_path):
    audit = audit_frame(hand_made_store(tmp_path / "store"))
    found = {(r["configuration"], r["instance_id"], r["candidate_id"]): (r["finding"], r["outcome"], r["reason"])
             for r in audit.iter_rows(named=True)}
    assert found == {
        ("biased", "i1", "v1"): ("valid_rejected", "F", None),
        ("weak", "i1", "x1"): ("invalid_accepted", "P", None),
        ("weak", "i2", "x2"): ("unresolved", "E", "not_run"),
    }
    rejected = audit.filter(pl.col("finding") == "valid_rejected").row(0, named=True)
    assert [t["name"] for t in rejected["tests"] if t["outcome"] == "failed"] == ["tmp.test_m::test_uses_helper"]


def test_audit_agrees_with_the_instance_scores(tmp_path):
    """The audit judges the same runs as the leaderboard: its counts give back a and r."""
    store = hand_made_store(tmp_path / "store")
    audit = audit_frame(store)
    for row in store.read_table("instance_scores").iter_rows(named=True):
        mine = audit.filter(pl.col("configuration") == row["configuration"],
                            pl.col("instance_id") == row["instance_id"])
        # Every finding on a candidate is a candidate the suite did not judge right.
        not_accepted = mine.filter(pl.col("label") == "valid").height
        not_rejected = mine.filter(pl.col("label") == "invalid").height
        assert row["a"] == pytest.approx(1 - not_accepted / row["n_valid"])
        assert row["r"] == pytest.approx(1 - not_rejected / row["n_invalid"])


def audit_of(html: str, configuration: str) -> str:
    """The audit section of one configuration."""
    start = html.index(f'<section class="audit-configuration" id="{anchor("audit", configuration)}"')
    end = html.find('<section class="audit-configuration"', start + 1)
    return html[start:end if end > 0 else html.index('id="patches"')]


def test_report_shows_findings_with_tests_messages_and_diffs(tmp_path):
    store = hand_made_store(tmp_path / "store")
    bench = hand_made_benchmark(tmp_path / "bench")
    html = render_report(load_report_data(store.paths.root, bench))
    biased = audit_of(html, "biased")
    assert "valid candidate rejected" in biased and "tmp.test_m::test_uses_helper" in biased
    assert "assert &#x27;_helper&#x27; in names" in biased
    assert f'href="#{anchor("patch", "i1", "v1")}"' in biased and "note of v1: &lt;b&gt;breaks&lt;/b&gt;" in biased
    weak = audit_of(html, "weak")
    assert "invalid candidate accepted" in weak and "all 1 tests passed" in weak and "not_run" in weak
    assert f'id="{anchor("patch", "i1", "x1")}"' in html and f'id="{anchor("patch", "i1", "reference")}"' in html
    # The leaderboard links every configuration to its audit.
    board = html[html.index('id="leaderboard"'):html.index('id="charts"')]
    for name in ("strong", "biased", "weak"):
        assert f'href="#{anchor("audit", name)}"' in board
    assert "Coverage was not measured" in html
    # Which confirmation policy produced the numbers (rows from before it was recorded read
    # as the papers' rule), per configuration.
    start = html.index('id="confirmation"')
    confirmation = html[start:html.index("</section>", start)]
    for name in ("strong", "biased", "weak"):
        assert f"<td>{name}</td><td>every failure</td>" in confirmation


def test_report_shows_the_newest_funnel_of_each_flow(tmp_path):
    from testprism.tasks.curate.curation import record
    from testprism.tasks.model.funnel import Excluded, Funnel, Stage
    from testprism.tasks.model.outcome import Reason

    store = hand_made_store(tmp_path / "store")
    html = render_report(load_report_data(store.paths.root))
    assert 'id="funnel"' not in html  # a store without a funnel has no such section
    for run, kept in (("old-run", 1), ("new-run", 2)):
        funnel = Funnel("curate", run)
        funnel.add(Stage("bounds", "instance", kept, (Excluded("i9", Reason.TOO_FEW_TESTS, HOSTILE),
                                                       Excluded("i8", Reason.TOO_FEW_TESTS))))
        funnel.add(Stage("split", "instance", kept, (Excluded("i7", Reason.NOT_SAMPLED),)))
        record(store, funnel)
    html = render_report(load_report_data(store.paths.root))
    section = html[html.index('id="funnel"'):]
    section = section[:section.index("</section>")]
    assert "new-run" in section and "old-run" not in section
    assert "bounds" in section and "too_few_tests: 2" in section and "not_sampled: 1" in section
    assert "<script>" not in section


def section_of(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}"')
    return html[start:html.index("</section>", start)]


def test_report_shows_per_source_leaders_intervals_and_distinguishability(tmp_path):
    store = hand_made_store(tmp_path / "store")
    # By hand: src-a is i1, where only strong is jointly valid; src-b is i2, where strong
    # and biased both are (JVR 1) and the tie goes to the name first in order: biased.
    leaders = store.read_table("per_source_leaders")
    assert leaders.select("source", "n_instances", "configuration", "jvr").rows() == [
        ("src-a", 1, "strong", 1.0), ("src-b", 1, "biased", 1.0)]
    html = render_report(load_report_data(store.paths.root))
    per_source = section_of(html, "per-source")
    leader_rows = cells(per_source, "per-source-leaders")
    assert [r[:3] for r in leader_rows] == [["src-a", "1", "strong"], ["src-b", "1", "biased"]]
    assert leader_rows[0][3] == "1.000[1.000, 1.000]"  # one instance: the interval is the point
    metric_rows = cells(per_source, "per-source")
    assert len(metric_rows) == 6  # 2 sources × 3 configurations
    weak_a = next(r for r in metric_rows if r[:2] == ["src-a", "weak"])
    assert weak_a[3:6] == ["1.000[1.000, 1.000]", "1.000[1.000, 1.000]", "0.000[0.000, 0.000]"]  # GRR CAR WDR
    # Distinguishability, by hand: strong separates every pair (1); biased rejects v1 of
    # i1's (v1, v2) × (x1): 1/2, and all of i2's: 0.75; weak accepts x1 and has no run of
    # x2: 0.
    separated = {r["configuration"]: r["distinguishability"] for r in store.read_table("distinguishability").to_dicts()}
    assert separated == pytest.approx({"strong": 1.0, "biased": 0.75, "weak": 0.0})
    board = section_of(html, "leaderboard")
    assert "<th>Dist.</th>" in board
    dist = {r[0]: r[10] for r in cells(board, "leaderboard")}
    assert dist["biased"].startswith("0.750[") and dist["strong"].startswith("1.000[")


def cells(html: str, css: str) -> list[list[str]]:
    """The body rows (cell texts) of the first table of class `css` in `html`."""
    parser = Cells(css)
    parser.feed(html)
    return [row for row in parser.rows if row]


class Cells(HTMLParser):
    """The text of every cell, row by row, of the first table with a given class."""

    def __init__(self, css: str) -> None:
        super().__init__()
        self.css, self.depth, self.rows, self.inside = css, 0, [], False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and dict(attrs).get("class") == self.css and not self.rows:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self.inside = False

    def handle_data(self, data: str) -> None:
        if self.inside and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


class Tags(HTMLParser):
    """Every start tag of a document with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_report_escapes_untrusted_text_and_references_nothing_outside(tmp_path):
    store = hand_made_store(tmp_path / "store")
    html = render_report(load_report_data(store.paths.root, hand_made_benchmark(tmp_path / "bench")))
    parser = Tags()
    parser.feed(html)
    names = {tag for tag, _ in parser.tags}
    assert not names & {"script", "img", "iframe", "object", "embed", "link", "base", "form"}
    attributes = [(name, value) for _, attrs in parser.tags for name, value in attrs.items()]
    assert not [name for name, _ in attributes if name.startswith("on") or name in ("src", "srcset", "action")]
    assert all(value.startswith("#") for name, value in attributes if name in ("href", "xlink:href"))
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert re.findall(r"[a-z][a-z0-9+.-]*://", html, re.IGNORECASE) == ["https://"] * html.count("https://evil.example")
    csp = [a for tag, a in parser.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and csp[0]["content"].startswith("default-src 'none'")


def test_diffs_come_from_the_store_when_collected_and_are_absent_otherwise(tmp_path):
    store = hand_made_store(tmp_path / "store")
    data = load_report_data(store.paths.root)
    assert data.patches == {} and "Pass <code>--benchmark DIR</code>" in render_report(data)
    store.append("candidates", pa.Table.from_pylist([{
        "flow_run": "2026-01-01", "instance_id": "i1", "candidate_id": "v1", "origin": "p.jsonl:1", "model": "m",
        "official_label": "valid", "label": "valid", "reason": None, "failed_checks": [], "norm_key": "k",
        "duplicate_of": None, "state_hash": "h", "in_panel": True, "patch": "--- a/m.py\n+++ b/m.py\n",
    }], schema=SCHEMAS["candidates"]))
    data = load_report_data(store.paths.root)
    assert set(data.patches) == {("i1", "v1")}
    assert f'id="{anchor("patch", "i1", "v1")}"' in render_report(data)


def test_anchors_are_readable_for_plain_names_and_safe_otherwise():
    assert anchor("audit", "biased") == "audit--biased"
    assert anchor("patch", "calkit__merge-touching", "tuple-sweep") == "patch--calkit__merge-touching--tuple-sweep"
    odd = anchor("audit", 'gpt "4" <o>')
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", odd) and odd != anchor("audit", 'gpt "4" <p>')


def test_charts_are_svg_and_tolerate_undefined_rates():
    radar = radar_svg("c", {"grr": 1.0, "car": None, "wdr": 0.5, "ct_car": 0.0, "ct_wdr": 0.25, "jvr": 0.1}, "#000")
    assert radar.startswith("<svg") and radar.count("<circle") == 6 and "CAR n/a" in radar
    colours = {"a": "#111111", "b": "#222222"}
    scatter = scatter_svg([Point("a", 0.5, 0.5, 0.4, 0.6, 0.3, 0.7), Point("b", None, 0.2)], "CAR", "WDR", colours)
    assert scatter.count("<circle") == 1 and scatter.count('class="whisker"') == 2
    bars = bars_svg([Point("a", 0.9, None, 0.8, 1.0), Point("b", None, None)], "JVR", colours)
    assert bars.count("<rect") == 2 and bars.count('class="ci"') == 3


def test_write_report_refuses_an_unscored_store(tmp_path):
    Store(tmp_path / "store")
    with pytest.raises(StoreError, match="testprism score"):
        write_report(tmp_path / "store", tmp_path / "r.html")


# -- headless Chromium -------------------------------------------------------------------------------


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
    no port, no websocket). Collects console messages, uncaught exceptions, browser log
    entries (CSP violations, failed loads) and every network request of the page."""

    def __init__(self, binary: str, profile: Path) -> None:
        profile.mkdir(parents=True, exist_ok=True)
        self._log_path = profile / "chromium.log"  # why it did not answer, when it does not
        self._log = self._log_path.open("wb")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # the protocol's fixed descriptors: 3 reads commands, 4 writes replies
            # each end first to a descriptor no one holds (F_DUPFD: the lowest free one from 5):
            # a fixed one could be the other end itself (the reply pipe's write end at fd 100,
            # after a long test had ~100 open, left Chromium writing nowhere, silent)
            high_r, high_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 5) for fd in (to_browser_r, from_browser_w))
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            preexec_fn=wire, close_fds=False,  # 3 and 4 must survive; pytest's other descriptors are CLOEXEC
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self.events: "queue.Queue[dict]" = queue.Queue()
        self._lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        # A first start on a fresh machine builds its font cache and profile, which on a busy
        # two-core host has taken over 30 s: wait for the first answer with room to spare.
        try:
            self.send("Browser.getVersion", timeout=180)
        except TimeoutError:
            self.close()
            raise

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_browser, 65536):
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        self._replies[message["id"]] = message
                        self._lock.notify_all()
                else:
                    self.events.put(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self._next_id += 1
        request = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self._to_browser, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._lock.wait_for(lambda: request["id"] in self._replies, timeout=1):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    state = "exited" if self.proc.poll() is not None else f"is silent after {timeout} s"
                    tail = self._log_path.read_bytes()[-2000:].decode(errors="replace")
                    raise TimeoutError(f"chromium did not answer {method}: it {state}; its log ends:\n{tail}")
            reply = self._replies.pop(request["id"])
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def load(self, url: str, timeout: float = 60) -> tuple[str, list[dict]]:
        """Open `url` in a new page; returns its session and every event until it loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        events, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=1)
            except queue.Empty:
                continue
            if event.get("sessionId") == session:
                events.append(event)
                if event["method"] == "Page.loadEventFired":
                    break
        else:
            raise TimeoutError(f"{url} did not load")
        time.sleep(0.5)  # late console messages and violations
        while not self.events.empty():
            event = self.events.get()
            if event.get("sessionId") == session:
                events.append(event)
        return session, events

    def evaluate(self, session: str, expression: str) -> object:
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (TimeoutError, RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        self._log.close()


def problems(events: list[dict], page: Path) -> list[str]:
    """Console errors and warnings, exceptions, log entries, and any request but the page."""
    found = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
            found.append(f"console.{params['type']}: {params['args']}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails']}")
        elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
            found.append(f"log: {params['entry']}")
        elif method == "Network.requestWillBeSent" and params["request"]["url"] != page.as_uri():
            found.append(f"request: {params['request']['url']}")
    return found


@pytest.fixture()
def chromium(chromium_path, tmp_path):
    browser = Chromium(chromium_path, tmp_path / "chromium-profile")
    yield browser
    browser.close()


#: run in a fresh interpreter, whose open descriptors are few and known: takes every one
#: below 96, then starts the browser and asks it one thing
_CROWDED = """
import os, sys
from pathlib import Path
from tests.test_report import Chromium
while (fd := os.open(os.devnull, os.O_RDONLY)) < 96:
    pass
os.close(fd)
browser = Chromium(sys.argv[1], Path(sys.argv[2]))  # its log file takes 96
try:
    assert browser._from_browser == 99, browser._from_browser  # the pipes: (97, 98) and (99, 100)
    print(browser.send("Browser.getVersion")["product"])
finally:
    browser.close()
"""


def test_the_browser_answers_whatever_descriptors_its_pipes_get(tmp_path, chromium_path):
    """The harness itself: with the descriptors below 96 taken (the demo's test had about
    that many open), the reply pipe's write end is fd 100, which a wiring through the fixed
    descriptors 100 and 101 overwrote: Chromium wrote its replies nowhere and the demo's test
    failed, silent after 180 s. Control: the script checks its setup put that end at 100."""
    done = subprocess.run([sys.executable, "-c", _CROWDED, chromium_path, str(tmp_path / "profile")],
                          cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()


def test_the_console_probe_catches_errors(tmp_path, chromium):
    """The harness itself: a page with an error, a CSP violation and a remote image is caught."""
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="img-src data:">'
                    '</head><body><script>console.error("boom"); undefined_call();</script>'
                    '<img src="http://127.0.0.1:9/x.png"></body></html>')
    _, events = chromium.load(page.as_uri())
    found = "\n".join(problems(events, page))
    assert "boom" in found and "undefined_call" in found and "127.0.0.1:9" in found


def test_report_renders_in_chromium_without_console_errors(tmp_path, chromium):
    store = hand_made_store(tmp_path / "store")
    page = write_report(store.paths.root, tmp_path / "report.html", hand_made_benchmark(tmp_path / "bench"))
    session, events = chromium.load(page.as_uri())
    assert problems(events, page) == []
    dom = chromium.evaluate(session, """({
        scripts: document.scripts.length,
        images: document.images.length,
        svgs: document.querySelectorAll('svg').length,
        rejected: [...document.querySelectorAll('#audit--biased li.finding.valid-rejected')]
            .map(e => e.dataset.candidate),
        accepted: [...document.querySelectorAll('#audit--weak li.finding.invalid-accepted')]
            .map(e => e.dataset.candidate),
        links: [...document.querySelectorAll('#leaderboard a')].map(a => a.getAttribute('href'))
            .every(h => h.startsWith('#') && document.getElementById(h.slice(1)) !== null),
        diffLinks: [...document.querySelectorAll('#audit a')]
            .every(a => document.getElementById(a.getAttribute('href').slice(1)) !== null),
        hostileText: document.body.textContent.includes('<script>alert("x")</script>'),
    })""")
    assert dom == {"scripts": 0, "images": 0, "svgs": 3 + 2 + 1 + 2, "rejected": ["v1"], "accepted": ["x1"],
                   "links": True, "diffLinks": True, "hostileText": True}
    # svgs: radars, scatter plots, bars, and the random and hardest-first panel-size curves
    # (the store has no patches nor failed checks: no diversity-first schedule)


# -- end to end on real replays ----------------------------------------------------------------------

BIASED = '''\
import inspect

import stats


def test_even_length():
    assert stats.median([4, 1, 3, 2]) == 2.5


def test_sorts_into_ordered():
    assert "ordered = sorted(values)" in inspect.getsource(stats.median)
'''


def replay(bench_root: Path, store_root: Path, work_root: Path) -> Store:
    """Replay with the tasks functions, as tests/test_replay.py does."""
    benchmark = load_benchmark(bench_root)
    store = Store(store_root)
    record_plan(benchmark, store)
    options = ExecutionOptions(backend="local", work_root=work_root, store_root=store_root, concurrency=2,
                               trusted=True)
    todo = pending_runs(plan(benchmark, options), finished_keys(store))
    assert not unrunnable_rows(todo, options)
    execute_batch([s for s in todo if s.runs_in_sandbox], options)
    return store


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_report_of_a_replayed_store_with_coverage(tmp_path, work_root, chromium):
    bench = make_benchmark(tmp_path / "bench", {"strong": {"test_m.py": CHECKS}, "weak": {"test_m.py": WEAK},
                                                "biased": {"test_m.py": BIASED}})
    store = replay(bench, tmp_path / "store", work_root)
    # what the stage driver stores as a stage starts (this replay ran without one)
    from testprism.tasks.execution.run_settings import RunSettings
    from testprism.tasks.execution.stage_record import record_stage
    from testprism.tasks.replay.settings import ReplaySettings

    record_stage("replay", ExecutionOptions(backend="local", work_root=work_root, store_root=store.paths.root),
                 {"workers": 2}, ReplaySettings(timeout_s=77), RunSettings(workers=2))
    score(store)
    coverage = measure_coverage(bench, store.paths.root, work_root, "local", concurrency=2)
    store.write_table("coverage_summary", coverage_summary(coverage, store.read_table("instance_scores")).to_arrow())
    page = write_report(store.paths.root, tmp_path / "report.html", bench)
    html = page.read_text()
    biased = audit_of(html, "biased")
    assert 'data-candidate="stdlib"' in biased and "test_sorts_into_ordered" in biased
    assert "ordered = sorted(values)" in biased  # the assertion message
    assert 'href="#patch--mini__median-even--stdlib"' in html and "+    return statistics.median(values)" in html
    weak = audit_of(html, "weak")
    assert 'data-candidate="sorts-in-place"' in weak and "invalid candidate accepted" in weak
    assert "Coverage was not measured" not in html and "mean ΔC" in html
    where = html[html.index('<section id="where">'):]
    where = where[:where.index("</section>")]
    assert "<td>replay</td>" in where and "&quot;workers&quot;: 2" in where and "timeout_s 300.0" in where
    session, events = chromium.load(page.as_uri())
    assert problems(events, page) == []
    assert chromium.evaluate(session, "document.querySelectorAll('#audit--biased li.finding').length") == 1


@pytest.mark.slow
@pytest.mark.requires("sandbox")
def test_audit_of_the_bundled_benchmark_shows_its_designed_disagreements(tmp_path, work_root):
    """One bundled instance replayed by `biased` and `weak`: the audit names the valid
    candidates the biased suite rejects (tuple results, no helper, not the upstream line) and the invalid ones the
    weak suite lets through, with the benchmark's notes and diffs."""
    from testprism.tasks.model.bundled import BUNDLED

    instance = "calkit__merge-touching"
    bench = tmp_path / "bench"
    shutil.copytree(BUNDLED / "instances" / instance, bench / "instances" / instance)
    for configuration in ("biased", "weak"):
        shutil.copytree(BUNDLED / "suites" / configuration / instance, bench / "suites" / configuration / instance)
    store = replay(bench, tmp_path / "store", work_root)
    score(store)
    data = load_report_data(store.paths.root, bench)
    found = data.audit.group_by("configuration", "finding").agg(pl.col("candidate_id").sort())
    found = {(r["configuration"], r["finding"]): r["candidate_id"] for r in found.iter_rows(named=True)}
    assert found == {
        ("biased", "valid_rejected"): ["event-sweep", "prefix-max-split", "reduce-fold", "tuple-sweep"],
        ("weak", "invalid_accepted"): ["drops-last", "no-empty-guard", "overwrites-end", "sorts-by-end",
                                       "sorts-in-place"],
    }
    html = render_report(data)
    assert "returns tuples, no empty-input special case, no helper" in html  # tuple-sweep's note
    assert 'id="patch--calkit__merge-touching--tuple-sweep"' in html


@pytest.mark.slow
def test_report_command_runs_the_flow_and_publishes_an_artifact(tmp_path, monkeypatch):
    """`report --open` also hands the report's file URL to the browser `$BROWSER` names (here
    a script that writes down what it was given)."""
    import webbrowser

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from typer.testing import CliRunner

    from testprism.flows.cli import app

    store = hand_made_store(tmp_path / "store")
    out = tmp_path / "out" / "report.html"
    browser, opened = tmp_path / "browser.sh", tmp_path / "opened.txt"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER", str(browser))
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # webbrowser reads $BROWSER when it first looks
    result = CliRunner().invoke(app, ["report", str(store.paths.root), "--out", str(out), "--open"])
    assert result.exit_code == 0, result.output
    assert out.is_file() and "Disagreement audit" in out.read_text()
    deadline = time.monotonic() + 30  # a $BROWSER command may run in the background
    while not opened.exists():
        assert time.monotonic() < deadline, "the browser was not given the report"
        time.sleep(0.1)
    assert opened.read_text() == out.resolve().as_uri()
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["report"])))
    assert any(out.resolve().as_uri() in (a.data or "") for a in artifacts)
