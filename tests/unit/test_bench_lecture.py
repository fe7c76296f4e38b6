"""The lecture benchmark's options: --replicas N is the number of replicas (2 by default, --no-replicas
none), and followers are pinned over them by the balancer's sticky cookie."""

from __future__ import annotations

import pytest

from txviz.bench import lecture


def test_replicas_is_a_count():
    assert lecture.arguments([]).replicas == 2
    assert lecture.arguments(["--replicas", "4", "--followers", "200"]).replicas == 4
    assert lecture.arguments(["--no-replicas"]).replicas == 0
    assert lecture.arguments(["--replicas", "0"]).replicas == 0


@pytest.mark.parametrize("argv", [["--replicas", "-1"], ["--followers", "0"]])
def test_refused(argv):
    with pytest.raises(SystemExit):
        lecture.arguments(argv)


def test_followers_spread_over_every_replica():
    assert lecture.replica_cookies(0) == lecture.replica_cookies(1) == []  # one server: no balancer cookie
    assert lecture.replica_cookies(4) == [f"TXVIZ_REPLICA=replica{i}" for i in range(1, 5)]
