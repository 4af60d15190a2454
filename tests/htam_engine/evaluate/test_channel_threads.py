"""How many of a sandbox's threads ran a share of one call (channel.busy_threads), from the CPU
milliseconds the kernel counted for each thread during the call and the judge's wall time."""

from __future__ import annotations

from htam_engine.evaluate.channel import BUSY_THREAD_MS, busy_threads


def test_one_thread_doing_the_work_is_one():
    assert busy_threads([3.0, 0.01, 0.0], wall_ms=3.2) == 1


def test_a_helper_doing_half_the_product_counts_on_an_idle_host_and_on_a_loaded_one():
    # the main thread 25 ms (an interpreted kernel and half a product), the helper 1.4 ms
    ran = [25.0, 1.4]
    assert busy_threads(ran, wall_ms=26.0) == 2
    # the same call on a loaded host: the wall doubles while the CPU each thread used does not
    assert busy_threads(ran, wall_ms=60.0) == 2


def test_many_threads_each_doing_a_small_share_all_count():
    # 30 threads in parallel, each ~the call's wall: each is a small share of the total CPU
    assert busy_threads([2.0] * 30, wall_ms=2.2) == 30


def test_a_helper_that_woke_briefly_does_not_count():
    assert busy_threads([10.0, BUSY_THREAD_MS / 2], wall_ms=10.5) == 1


def test_threads_each_under_the_bar_count_together_as_the_cores_they_kept_busy():
    # 24 threads of 0.4 ms each beside a main thread of 10 ms: half a call's work on a second core
    assert busy_threads([10.0] + [0.4] * 24, wall_ms=10.5) == 2
    # the same share spread thinner still adds its core; a few stray wake-ups add none
    assert busy_threads([10.0] + [0.05] * 200, wall_ms=10.5) == 2
    assert busy_threads([10.0] + [0.05] * 5, wall_ms=10.5) == 1
