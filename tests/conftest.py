"""Shared fixtures: every test gets its own WORKBENCH_HOME so stores and caches never mix."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Strict events: the reducer refuses an event whose type is not declared in
# workbench/events.py or that lacks a required key (production tolerates both). Set in the
# environment so that the CLI, worker and Streamlit processes the tests start are strict too.
os.environ.setdefault("WORKBENCH_STRICT_EVENTS", "1")

# Fast real-model tests use the smallest bundled model; a few end-to-end tests per method
# family run the default model (the ``default_model_llm`` fixture).
FAST_MODEL = "smollm2-135m"


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory):
    """Content-addressed caches (embeddings of the demo corpus take ~25 s) shared by the session."""
    return tmp_path_factory.mktemp("wbcache")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch, shared_cache):
    home = tmp_path / "wbhome"
    monkeypatch.setenv("WORKBENCH_HOME", str(home))
    monkeypatch.setenv("WORKBENCH_CACHE", str(shared_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield home


def _isolated(name: str, **kw):
    from workbench.llm.base import LLMError
    from workbench.llm.isolated import IsolatedBackend
    from workbench.llm.registry import resolve
    try:
        return IsolatedBackend(resolve(name), name=name, **kw)
    except LLMError as e:
        pytest.skip(f"the bundled model {name} is not installed: {e}")


@pytest.fixture(scope="session")
def default_llm():
    """SmolLM2-135M-Instruct (fast), loaded once per test session in a worker process, so a
    native crash fails a test instead of ending the test run."""
    be = _isolated(FAST_MODEL, n_ctx=4096)
    yield be
    be.close()


@pytest.fixture(scope="session")
def default_model_llm():
    """The workbench's default model (what users get), once per test session."""
    from workbench.llm.registry import DEFAULT_MODEL
    be = _isolated(DEFAULT_MODEL, n_ctx=4096)
    yield be
    be.close()


# ----------------------------------------------------------------------------- markers
# `pytest -m "not real_model and not browser and not slow"` is the fast suite (README). The
# markers are set here rather than on each test so that a new test that takes a model fixture
# is marked without anyone remembering to.

# Fixtures that load a bundled GGUF model, directly or in a worker process; a test whose
# fixture closure holds one of them (through another fixture too) is `real_model`.
REAL_MODEL_FIXTURES = {"default_llm", "default_model_llm"}
# Module fixtures that load a bundled model through the registry, per test file.
REAL_MODEL_MODULE_FIXTURES = {
    "test_eval_page.py": {"real_llm"},
    "test_llm_grammar_sampler.py": {"llm"},
    "test_llm_isolation.py": {"iso"},
    "test_llm_server.py": {"server"},
    "test_methods_text_real.py": {"env"},
    "test_node_scores.py": {"real_env"},
    "test_prefix_cache.py": {"backends"},
}
# Tests that load (or hash) a bundled model in their own body or in a child process.
REAL_MODEL_TESTS = {
    "test_call_replay.py::test_a_real_model_eval_reused_gives_the_same_tokens_and_scores",
    "test_cli_core.py::test_generate_prints_text_rate_and_perplexity",
    "test_eval_ray.py::test_ray_eval_survives_a_killed_worker_scripted_and_smollm2",
    "test_eval_runner.py::test_parallel_llama_workers_each_run_their_own_model_process",
    "test_eval_runner.py::test_items_together_on_the_real_model_share_llama_cpp_batches",
    "test_gpu_check.py::test_dry_run_goes_through_every_step",
    "test_llm_batched_real.py::test_a_model_loaded_without_batching_runs_generate_many_one_by_one",
    "test_llm_batched_real.py::test_statistics_beside_the_next_decode_change_nothing_but_the_time",
    "test_llm_isolation.py::test_smoke_generation_runs_in_a_child_and_succeeds",
    "test_llm_isolation.py::test_a_bundled_file_that_no_longer_matches_its_hash_is_refused",
    "test_llm_isolation.py::test_worker_exits_soon_after_its_parent_is_killed",
    "test_llm_llama_cpp.py::test_registry_lists_bundled_models_with_metadata_and_verified_hashes",
    "test_prefix_cache.py::test_least_recently_used_prompts_are_evicted_under_the_budget",
    "test_prefix_cache.py::test_the_same_holds_for_a_qwen_model_whose_output_an_uncut_prefix_changes",
    "test_prefix_budget.py::test_the_replay_serves_every_stored_call_what_the_backend_served_it",
}
# Tests without a real model or a browser that took 10 s or more in a run of the fast suite on
# 2 shared cores (`--durations`); a parametrised case is named with its [id], a name alone
# marks every case. The Ray worker test that does not take 10 s itself is here because it
# would start the module's Ray cluster (25 s) on its own.
SLOW_TESTS = {
    "test_call_replay.py::test_reuse_chains_through_an_eval_that_reused_calls",
    "test_call_replay.py::test_scorings_are_stored_and_replayed_by_context_and_continuation",
    "test_call_replay.py::test_the_evaluate_page_says_an_eval_reused_calls",
    "test_cli_core.py::test_models_lists_default",
    "test_datasets_api.py::test_dense_and_hybrid_from_dataset",
    "test_datasets_import.py::test_crag_real_sample",
    "test_eval_leakage.py::test_cli_eval_refuses_a_leaking_configuration",
    "test_eval_lease.py::test_a_second_resumer_stops_at_once_and_changes_nothing",
    "test_eval_lease.py::test_cli_killed_holder_then_two_resumers_at_once",
    "test_eval_page.py::test_page_launches_an_eval_and_shows_progress",
    "test_eval_page.py::test_page_renders_charts_of_a_stored_eval",
    "test_eval_page.py::test_page_warns_when_a_pair_searched_with_different_retrievers",
    "test_eval_page.py::test_page_warns_when_wall_times_were_taken_beside_other_work",
    "test_eval_ray.py::test_a_worker_that_cannot_start_names_the_cause",
    "test_eval_ray.py::test_cli_driver_killed_then_resume_gives_exactly_n",
    "test_eval_ray.py::test_items_of_a_worker_that_dies_every_try_are_failed_with_the_cause",
    "test_eval_runner.py::test_cli_killed_midway_resumes_without_duplicates",
    "test_eval_runner.py::test_cli_sigint_marks_interrupted",
    "test_items_together.py::test_eval_items_together_give_the_answers_of_one_by_one[2]",
    "test_metric_profiles.py::test_profile_is_stored_with_the_eval_and_shown",
    "test_sharing.py::test_settings_refuses_a_device_or_fifo_as_model",
    "test_sharing.py::test_the_admin_token_unlocks_host_settings_for_that_session_only",
    "test_sharing_pages.py::test_deleting_a_run_is_the_hosts",
    "test_sharing_pages.py::test_deleting_an_annotation_is_the_hosts_and_annotating_everyones",
    "test_sharing_pages.py::test_resuming_an_eval_is_the_hosts",
    "test_sharing_pages.py::test_starting_an_eval_is_the_hosts",
    "test_sharing_pages.py::test_the_pages_check_again_where_they_act",
    "test_store.py::test_two_threads_writing_lose_nothing",
    "test_triage_eval.py::test_benchmark_reports_a_stored_eval_with_json_last",
    "test_triage_eval.py::test_evaluate_page_draws_the_failure_class_chart_and_tables",
    "test_triage_ui.py::test_annotate_prefills_the_suggestion_and_stores_the_label_apart",
    "test_ui_pages.py::test_annotate_node_saves_and_shows_badge",
    "test_ui_pages.py::test_ask_whatif_slider_recolours_and_offers_rerun",
    "test_ui_pages.py::test_runs_filters_and_delete",
    "test_ui_pages.py::test_settings_model_change_reloads_with_readable_error",
    "test_ui_pages.py::test_untrusted_text_is_never_markup_in_pages",
    "test_ui_presets.py::test_evaluate_marks_rows_scored_on_what_they_saw",
    # every case: each drives a whole method through the Ask page (up to 167 s a case)
    "test_ui_methods.py::test_method_renders_in_the_ui",
    "test_eval_page.py::test_page_follows_a_running_eval_and_completes_when_it_ends",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        fname = item.path.name
        key = f"{fname}::{getattr(item, 'originalname', item.name)}"
        used = set(getattr(item, "fixturenames", ()))
        if (used & REAL_MODEL_FIXTURES or used & REAL_MODEL_MODULE_FIXTURES.get(fname, set())
                or key in REAL_MODEL_TESTS):
            item.add_marker(pytest.mark.real_model)
        if fname.startswith("test_browser_"):
            item.add_marker(pytest.mark.browser)
        if key in SLOW_TESTS or f"{fname}::{item.name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
