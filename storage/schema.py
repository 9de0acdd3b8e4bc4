"""The store's schemas, defined once. Column names are a public contract (users read the
store with polars, duckdb or pandas): change them only together with SCHEMA_VERSION."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 8  # 2: runs.patch_method, runs.suite_patch_method, verifications.patch_method
# 3: candidates.provenance, panels.provenance, scores/leaderboard_by_provenance
# 4: runs.reused_from, runs.replayed, runs.confirmation; scores/flakes by confirmation policy
# 5: crossval_flags.execution_verdict, review, review_rationale, review_model (a table crossval
#    rewrites whole); the `reviews` dataset (crossval's semantic review)
# 6: verifications.restored, candidates.restored (the test infrastructure a candidate changed,
#    put back before its checks: tasks/execution/infrastructure.py)
# 7: the `gate` and `gate_files` datasets (`testprism check`'s verdicts and manifest)
# 8: the `stage_runs` dataset (what each stage ran with: tasks/execution/stage_record.py)

#: Columns a version added to datasets an older store already holds, with the value an
#: older row reads as (None: null). Additive only, so a store of the version before opens
#: as it is: its manifest is moved up and its parts are read unchanged, never rewritten
#: (storage/store.py). A version that renames or retypes a column is not listed here.
ADDED_COLUMNS: dict[int, dict[str, dict[str, str | None]]] = {
    3: {"candidates": {"provenance": "agent"}, "panels": {"provenance": None}},
    4: {"runs": {"reused_from": None, "replayed": None, "confirmation": "every failure"}},
    5: {},
    6: {"verifications": {"restored": None}, "candidates": {"restored": None}},
    7: {},
    8: {},
}

TEST_RESULT = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("outcome", pa.string()),  # passed | failed | error | skipped
        pa.field("message", pa.string()),
    ]
)

RUNS = pa.schema(
    [
        pa.field("run_key", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("state", pa.string(), nullable=False),  # buggy | reference | candidate
        pa.field("candidate_id", pa.string()),
        pa.field("label", pa.string()),  # valid | invalid | null
        pa.field("outcome", pa.string(), nullable=False),  # P | F | E
        pa.field("reason", pa.string()),  # set when outcome is E: tasks/model/outcome.py RUN_REASONS
        pa.field("exit_code", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("attempts", pa.int16()),
        pa.field("stdout_tail", pa.string()),
        pa.field("started_at", pa.timestamp("us", tz="UTC")),
        pa.field("suite_hash", pa.string()),
        pa.field("state_hash", pa.string()),
        pa.field("environment_hash", pa.string()),
        pa.field("policy_hash", pa.string()),
        pa.field("backend", pa.string()),
        pa.field("isolation", pa.string()),
        pa.field("tests", pa.list_(TEST_RESULT)),
        pa.field("patch_method", pa.string()),  # how the state's patch applied: git apply | patch --fuzz=N | none
        pa.field("suite_patch_method", pa.string()),  # how the suite's test patch applied; null without one
        # the run_key of the stored row whose verdict this one took without running: the same
        # suite, state, environment and policy under another configuration or an earlier
        # replay (tasks/replay/runs.py reuse_settled); null when it ran
        pa.field("reused_from", pa.string()),
        # a failure replayed to confirm it (true), one left unreplayed by the confirmation
        # policy (false), null without a failure; and that policy in words (Policy.confirmation)
        pa.field("replayed", pa.bool_()),
        pa.field("confirmation", pa.string()),
    ]
)

PANELS = pa.schema(
    [
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("state", pa.string(), nullable=False),
        pa.field("candidate_id", pa.string()),
        pa.field("label", pa.string()),
        pa.field("state_hash", pa.string(), nullable=False),
        pa.field("provenance", pa.string()),  # candidates: agent | mutant; null for buggy and reference
    ]
)

SUITES = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("suite_hash", pa.string(), nullable=False),
        pa.field("present", pa.bool_(), nullable=False),
    ]
)

INSTANCE_SCORES = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("f", pa.float64(), nullable=False),
        pa.field("a", pa.float64()),
        pa.field("r", pa.float64()),
        pa.field("s", pa.float64(), nullable=False),
        pa.field("d", pa.float64()),  # share of (valid, invalid) pairs separated; null without a pair
        pa.field("n_valid", pa.int32(), nullable=False),
        pa.field("n_invalid", pa.int32(), nullable=False),
    ]
)

METRICS = ("grr", "car", "wdr", "f1", "ct_car", "ct_wdr", "ct_f1", "jvr")

LEADERBOARD = pa.schema(
    [pa.field("configuration", pa.string(), nullable=False), pa.field("n_instances", pa.int64(), nullable=False)]
    + [pa.field(m, pa.float64()) for m in METRICS]
    + [pa.field(f"{m}_{end}", pa.float64()) for m in METRICS for end in ("lo", "hi")]
)

#: The leaderboard scored twice where panels hold mutants: `panel` is `with_mutants` (the
#: panels as released: the leaderboard's own numbers) or `without_mutants` (mutant
#: candidates left out of the runs and of the pool sizes). Empty when no panel holds one.
LEADERBOARD_BY_PROVENANCE = pa.schema([pa.field("panel", pa.string(), nullable=False)] + list(LEADERBOARD))

PER_SOURCE = pa.schema(
    [pa.field("source", pa.string(), nullable=False), pa.field("configuration", pa.string(), nullable=False),
     pa.field("n_instances", pa.int64(), nullable=False)]
    + [pa.field(m, pa.float64()) for m in METRICS]
    + [pa.field(f"{m}_{end}", pa.float64()) for m in METRICS for end in ("lo", "hi")]
)

PER_SOURCE_LEADERS = pa.schema(
    [pa.field("source", pa.string(), nullable=False), pa.field("n_instances", pa.int64(), nullable=False),
     pa.field("configuration", pa.string(), nullable=False)]
    + [pa.field(m, pa.float64()) for m in ("jvr", "jvr_lo", "jvr_hi", "grr", "car", "wdr")]
)

DISTINGUISHABILITY = pa.schema(
    [pa.field("configuration", pa.string(), nullable=False), pa.field("n_with_pairs", pa.int64(), nullable=False)]
    + [pa.field(c, pa.float64()) for c in ("distinguishability", "distinguishability_lo", "distinguishability_hi")]
)

COMPARISONS = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("leader", pa.string(), nullable=False),
        pa.field("delta_jvr", pa.float64()),
        pa.field("delta_jvr_lo", pa.float64()),
        pa.field("delta_jvr_hi", pa.float64()),
        pa.field("leader_only", pa.int64()),
        pa.field("other_only", pa.int64()),
        pa.field("mcnemar_p", pa.float64()),
        pa.field("mcnemar_p_holm", pa.float64()),
    ]
)

RANK_STABILITY = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("point_rank", pa.int64()),
        pa.field("rank_stability", pa.float64()),
        pa.field("first_place_probability", pa.float64()),
    ]
)

# -- collect (tasks/collect/candidate.py, tasks/collect/label.py, tasks/collect/panel.py; docs/collect.md) -----------

VERIFICATIONS = pa.schema(
    [
        pa.field("verification_key", pa.string(), nullable=False),  # state + checks + environment + policy + repeat
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("state", pa.string(), nullable=False),  # buggy | reference | candidate
        pa.field("candidate_id", pa.string()),  # the candidate that first needed this run
        pa.field("repeat", pa.int16(), nullable=False),
        pa.field("state_hash", pa.string(), nullable=False),
        pa.field("checks_hash", pa.string(), nullable=False),
        pa.field("environment_hash", pa.string(), nullable=False),
        pa.field("policy_hash", pa.string(), nullable=False),
        pa.field("outcome", pa.string(), nullable=False),  # P | F | E
        pa.field("reason", pa.string()),  # tasks/model/outcome.py VERIFICATION_REASONS
        pa.field("exit_code", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("attempts", pa.int16()),
        pa.field("stdout_tail", pa.string()),
        pa.field("started_at", pa.timestamp("us", tz="UTC")),
        pa.field("backend", pa.string()),
        pa.field("isolation", pa.string()),
        pa.field("tests", pa.list_(TEST_RESULT)),
        pa.field("patch_method", pa.string()),  # how the state's patch applied: git apply | patch --fuzz=N | none
        pa.field("restored", pa.list_(pa.string())),  # test infrastructure the state's patch changed, put back (6)
    ]
)

CANDIDATES = pa.schema(
    [
        pa.field("flow_run", pa.string(), nullable=False),  # the collect invocation (sortable: time first)
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("candidate_id", pa.string(), nullable=False),
        pa.field("origin", pa.string(), nullable=False),  # file:row or path
        pa.field("model", pa.string()),
        pa.field("official_label", pa.string()),  # valid | invalid | null, as the source said
        pa.field("label", pa.string()),  # valid | invalid | null, from our verification
        pa.field("reason", pa.string()),  # null: in the pool; else tasks/model/outcome.py CANDIDATE_REASONS
        pa.field("failed_checks", pa.list_(pa.string())),
        pa.field("norm_key", pa.string(), nullable=False),
        pa.field("duplicate_of", pa.string()),
        pa.field("state_hash", pa.string(), nullable=False),
        pa.field("in_panel", pa.bool_(), nullable=False),
        pa.field("patch", pa.string(), nullable=False),  # normalised
        pa.field("provenance", pa.string()),  # agent: submitted | mutant: made by collect --mutants (schema 3)
        pa.field("restored", pa.list_(pa.string())),  # test infrastructure it changed, put back before its checks (6)
    ]
)

EXCLUSION = pa.struct(
    [
        pa.field("item", pa.string()),  # instance id, candidate id or file:row
        pa.field("reason", pa.string()),
        pa.field("detail", pa.string()),
    ]
)

FUNNEL = pa.schema(
    [
        pa.field("flow", pa.string(), nullable=False),  # curate | collect
        pa.field("flow_run", pa.string(), nullable=False),
        pa.field("step", pa.int16(), nullable=False),  # order of the stages
        pa.field("stage", pa.string(), nullable=False),
        pa.field("unit", pa.string(), nullable=False),  # instance | candidate
        pa.field("retained", pa.int64(), nullable=False),
        pa.field("excluded", pa.int64(), nullable=False),
        pa.field("rate", pa.float64(), nullable=False),  # excluded / (retained + excluded)
        pa.field("exclusions", pa.list_(EXCLUSION)),
        pa.field("recorded_at", pa.timestamp("us", tz="UTC")),
    ]
)

# -- curate (tasks/curate/judge.py; docs/curate.md) --------------------------------------------------

AUDITS = pa.schema(
    [
        pa.field("audit_key", pa.string(), nullable=False),  # what the judge sees + its model + prompt version
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),  # the judge's model name
        pa.field("prompt_version", pa.string(), nullable=False),
        pa.field("threshold", pa.int16(), nullable=False),  # include at or above it, when this row was decided
        pa.field("score", pa.int16()),  # 0..100; null when the judge gave none (see reason)
        pa.field("decision", pa.string(), nullable=False),  # include | review | exclude
        pa.field("rationale", pa.string(), nullable=False),  # the judge's words (its raw answer when malformed)
        pa.field("reason", pa.string()),  # null: scored; else tasks/model/outcome.py AUDIT_REASONS
        pa.field("error", pa.string()),  # what went wrong, for a human; null when scored
        pa.field("attempts", pa.int16(), nullable=False),  # requests sent (retries included)
        pa.field("audited_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

# -- coverage (tasks/score/coverage/; docs/report.md) ------------------------------------------------

COVERAGE = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("delta_c", pa.float64()),  # ΔC: changed lines executed / changed lines
        pa.field("ec", pa.float64()),  # EC: changed functions entered / changed functions
        pa.field("changed_lines", pa.int32()),
        pa.field("covered_lines", pa.int32()),
        pa.field("changed_functions", pa.int32()),
        pa.field("entered_functions", pa.int32()),
        pa.field("missed_lines", pa.list_(pa.string())),  # path:line never executed
        pa.field("missed_functions", pa.list_(pa.string())),  # path:name never entered
        pa.field("reason", pa.string()),  # why unmeasured or 0 without a run: tasks/model/outcome.py COVERAGE_REASONS
        pa.field("exit_code", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("coverage_key", pa.string(), nullable=False),  # suite + reference + environment + limits
    ]
)

CANDIDATE_COVERAGE = pa.schema(  # tasks/score/coverage/candidates.py; docs/report.md, "Failure taxonomy"
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("candidate_id", pa.string(), nullable=False),  # an invalid candidate the suite accepted (P)
        pa.field("changed_lines", pa.int32()),  # code lines where the candidate differs from the reference
        pa.field("covered_lines", pa.int32()),  # of those, executed on the candidate's state
        pa.field("executed_lines", pa.list_(pa.string())),  # path:line (candidate numbering) executed
        pa.field("missed_lines", pa.list_(pa.string())),  # path:line never executed
        pa.field("reason", pa.string()),  # why unmeasured: tasks/model/outcome.py COVERAGE_REASONS
        pa.field("exit_code", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("coverage_key", pa.string(), nullable=False),  # suite + reference + candidate + environment + limits
    ]
)

COVERAGE_SUMMARY = pa.schema(
    [pa.field("configuration", pa.string(), nullable=False), pa.field("n_instances", pa.int64(), nullable=False)]
    + [pa.field(name, pa.float64()) for name in ("delta_c", "ec", "jvr")]
    + [
        pa.field(f"{metric}_{stat}", pa.float64())
        for metric in ("delta_c", "ec")
        for stat in ("spearman", "spearman_p", "pearson", "pearson_p")
    ]
)

FAILURE_TAXONOMY = pa.schema(  # tasks/score/taxonomy.py; docs/report.md, "Failure taxonomy"
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # execution_logic_error | coverage_gap | faulty_check | unresolved | unclassified
        pa.field("finding", pa.string()),  # the deciding run's disagreement (the audit's finding); null: none
        pa.field("state", pa.string()),  # buggy | reference | candidate: the run that decided it
        pa.field("candidate_id", pa.string()),
        pa.field("evidence", pa.string(), nullable=False),  # failing case and message, or the lines (not) executed
        pa.field("evidence_basis", pa.string(), nullable=False),  # junit | output | run_reason | reference_delta_c | candidate_coverage | reference_coverage | no_coverage | no_diff
    ]
)

FAILURE_TAXONOMY_SHARES = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
        pa.field("share", pa.float64()),  # of the configuration's S_i = 0 instances
    ]
)

FLAKES = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("confirmation", pa.string()),  # the confirmation policy of these runs (Policy.confirmation)
        pa.field("runs", pa.int64(), nullable=False),
        pa.field("unstable", pa.int64(), nullable=False),
        pa.field("replayed", pa.int64()),  # failures replayed to confirm them
        pa.field("unreplayed", pa.int64()),  # failures the policy let stand without a replay
        pa.field("rate", pa.float64()),  # unstable ÷ runs
        # unstable ÷ replayed failures, with its exact (Clopper-Pearson) 95% interval
        pa.field("flake_rate", pa.float64()),
        pa.field("flake_low", pa.float64()),
        pa.field("flake_high", pa.float64()),
        pa.field("early_stopped", pa.int64()),  # runs whose newest row is E/early_stopped (replay --early-stop)
    ]
)

GENERATIONS = pa.schema(
    [
        pa.field("generation_key", pa.string(), nullable=False),
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),  # plain | testprism
        pa.field("round", pa.int32(), nullable=False),  # 0; feedback rounds count up
        pa.field("command", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),  # the strategy, as JSON
        pa.field("strategy_hash", pa.string(), nullable=False),
        pa.field("reason", pa.string()),  # null: the suite is kept; else tasks/model/outcome.py GENERATION_REASONS
        pa.field("exit_code", pa.int32()),
        pa.field("duration_s", pa.float64()),
        pa.field("started_at", pa.timestamp("us", tz="UTC")),
        pa.field("requests", pa.int64()),  # measured by the model channel
        pa.field("prompt_tokens", pa.int64()),
        pa.field("completion_tokens", pa.int64()),
        pa.field("total_tokens", pa.int64()),
        pa.field("reported_steps", pa.int64()),  # the agent's own account (usage.json), when given
        pa.field("reported_tokens", pa.int64()),
        pa.field("suite_hash", pa.string()),
        pa.field("suite_files", pa.int32()),
        pa.field("repair_hash", pa.string()),  # the repair it wrote (heterogeneous synthesis)
        pa.field("log", pa.string()),  # the whole log, gzip, relative to the store
        pa.field("backend", pa.string()),
        pa.field("isolation", pa.string()),
    ]
)

CROSSVAL_MATRIX = pa.schema(  # every test on buggy, reference and every agent's repair, per round
    [
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("test", pa.string(), nullable=False),  # the agent (configuration) whose test ran
        pa.field("state", pa.string(), nullable=False),  # buggy | reference | the agent whose repair it ran on
        pa.field("outcome", pa.string(), nullable=False),
        pa.field("round", pa.int32(), nullable=False),
    ]
)

CROSSVAL_FLAGS = pa.schema(
    [
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("test", pa.string(), nullable=False),
        pa.field("round", pa.int32(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),  # validated | over_restrictive | weak: the rule's
        pa.field("evidence", pa.string()),  # the state it disagreed on
        pa.field("detail", pa.string()),
        pa.field("execution_verdict", pa.string()),  # what execution alone said
        pa.field("review", pa.string()),  # confirm | overturn; null: not reviewed or no usable answer
        pa.field("review_rationale", pa.string()),  # the reviewer's words (or why there is no review)
        pa.field("review_model", pa.string()),
    ]
)

REVIEWS = pa.schema(  # crossval's semantic review of a flagged test (tasks/generate/review.py)
    [
        pa.field("review_key", pa.string(), nullable=False),  # what the reviewer sees + its model + prompt version
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("test", pa.string(), nullable=False),
        pa.field("execution_verdict", pa.string(), nullable=False),  # over_restrictive | weak
        pa.field("evidence", pa.string()),  # the state it disagreed on
        pa.field("model", pa.string(), nullable=False),
        pa.field("prompt_version", pa.string(), nullable=False),
        pa.field("review", pa.string()),  # confirm | overturn; null: no usable answer (see reason)
        pa.field("rationale", pa.string(), nullable=False),
        pa.field("reason", pa.string()),  # null: answered; else tasks/model/outcome.py AUDIT_REASONS
        pa.field("error", pa.string()),
        pa.field("attempts", pa.int16(), nullable=False),
        pa.field("reviewed_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)

SEARCHES = pa.schema(
    [
        pa.field("search_id", pa.string(), nullable=False),  # digest of the space, command, mode, tools, benchmark
        pa.field("round", pa.int32(), nullable=False),  # from 1
        pa.field("configuration", pa.string(), nullable=False),  # the round's generated suites: rsi-<id>-<round>
        pa.field("proposer", pa.string(), nullable=False),  # start | tpe | llm | tpe-fallback
        pa.field("strategy", pa.string(), nullable=False),  # the round's strategy, as JSON
        pa.field("jsf", pa.float64()),  # mean joint indicator s over the instances; null when not run
        pa.field("instances", pa.int32(), nullable=False),
        pa.field("tokens", pa.int64(), nullable=False),  # channel-measured total_tokens the round spent
        pa.field("requests", pa.int64(), nullable=False),
        pa.field("cumulative_tokens", pa.int64(), nullable=False),  # this round and every earlier one
        pa.field("run_tokens_cap", pa.int64(), nullable=False),  # the round's per-run token cap (lowered when cut)
        pa.field("search_tokens_cap", pa.int64(), nullable=False),  # Caps.search_tokens: the whole search
        pa.field("proposer_tokens", pa.int64(), nullable=False),  # the LLM proposer's own, within cumulative_tokens
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # done | cut | stopped (tasks/generate/search.py)
        pa.field("note", pa.string()),  # why cut, stopped or fallen back
        pa.field("generation_keys", pa.list_(pa.string())),  # the round's runs (`generations`)
    ]
)

#: Panel-size curves (tasks/score/curves.py): JVR and panel diversity when only the first k
#: valid and k invalid candidates of each pool count, under three orders of addition.
PANEL_CURVES = pa.schema(
    [
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("schedule", pa.string(), nullable=False),  # random | diversity | hardest
        pa.field("k", pa.int32(), nullable=False),  # from 1; each side capped at its pool's size
        pa.field("jvr", pa.float64(), nullable=False),  # random: the mean over the seeds
        pa.field("valid_diversity", pa.float64()),  # mean pairwise AST distance of the k valid; null: unknown
        pa.field("invalid_diversity", pa.float64()),  # mean pairwise Jaccard of failed checks; lower: more diverse
        pa.field("n_instances", pa.int32(), nullable=False),
    ]
)

# -- the release gate (tasks/gate/; docs/gate.md) ---------------------------------------------------

GATE = pa.schema(
    [
        pa.field("gate_run", pa.string(), nullable=False),  # one `testprism check`
        pa.field("benchmark", pa.string(), nullable=False),  # the benchmark folder's resolved path
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # "?" when the row does not load
        pa.field("language", pa.string(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),  # ok | tasks/gate/verdict.py GateVerdict
        pa.field("detail", pa.string()),  # the failing ids, or why
        pa.field("manifest", pa.string(), nullable=False),  # digest of the run's `gate_files`
        pa.field("checked_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("backend", pa.string()),
    ]
)

GATE_FILES = pa.schema(  # the checksum manifest of the benchmark folder a gate run read
    [
        pa.field("gate_run", pa.string(), nullable=False),
        pa.field("benchmark", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),  # relative to the benchmark folder
        pa.field("sha256", pa.string(), nullable=False),
    ]
)

#: what each stage ran with, one row a stage run (tasks/execution/stage_record.py): JSON
#: columns, so that a new option is a new key, not a new schema version
STAGE_RUNS = pa.schema([
    pa.field("stage_run", pa.string(), nullable=False),
    pa.field("stage", pa.string(), nullable=False),
    pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("testprism_version", pa.string()),
    pa.field("python", pa.string()),
    pa.field("host", pa.string()),
    pa.field("backend", pa.string()),
    pa.field("policy_hash", pa.string()),
    pa.field("options", pa.string()),  # JSON: the execution options (backend, work area, limits, policy, ...)
    pa.field("placement", pa.string()),  # JSON: workers, cluster address or class
    pa.field("settings", pa.string()),  # JSON: the stage's own settings object, when it has one
    pa.field("run", pa.string()),  # JSON: where it runs (RunSettings: backend, workers, work area, ...)
    pa.field("environment", pa.string()),  # JSON: the TESTPRISM_* overrides set (credentials withheld)
])

SCHEMAS: dict[str, pa.Schema] = {
    "runs": RUNS,
    "stage_runs": STAGE_RUNS,
    "panels": PANELS,
    "suites": SUITES,
    "instance_scores": INSTANCE_SCORES,
    "leaderboard": LEADERBOARD,
    "leaderboard_by_provenance": LEADERBOARD_BY_PROVENANCE,
    "per_source": PER_SOURCE,
    "per_source_leaders": PER_SOURCE_LEADERS,
    "distinguishability": DISTINGUISHABILITY,
    "comparisons": COMPARISONS,
    "rank_stability": RANK_STABILITY,
    "verifications": VERIFICATIONS,
    "candidates": CANDIDATES,
    "funnel": FUNNEL,
    "audits": AUDITS,
    "coverage": COVERAGE,
    "candidate_coverage": CANDIDATE_COVERAGE,
    "coverage_summary": COVERAGE_SUMMARY,
    "flakes": FLAKES,
    "failure_taxonomy": FAILURE_TAXONOMY,
    "failure_taxonomy_shares": FAILURE_TAXONOMY_SHARES,
    "generations": GENERATIONS,
    "crossval_matrix": CROSSVAL_MATRIX,
    "crossval_flags": CROSSVAL_FLAGS,
    "reviews": REVIEWS,
    "searches": SEARCHES,
    "panel_curves": PANEL_CURVES,
    "gate": GATE,
    "gate_files": GATE_FILES,
}
