"""The time left told from the pace so far, and a countdown's fractions and words (no clock asserted)."""

from txviz.core.countdown import Countdown, remaining


def test_time_left_from_the_pace_so_far():
    assert remaining(0, 10, 5.0) == "estimating the time left"
    assert remaining(2, 10, 4.0) == "about 16 s left"
    assert remaining(1, 100, 60.0) == "about 99 min left"
    assert remaining(10, 10, 30.0) == "about 0 s left"


def test_a_countdown_tells_each_step():
    told = []
    clock = Countdown(4, lambda f, text: told.append((f, text)), "Generating")
    for _ in range(4):
        clock.step()
    assert [f for f, _ in told] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert told[0][1] == "Generating: 0 of 4; estimating the time left"
    assert told[-1][1].startswith("Generating: 4 of 4; about ")
    Countdown(3, None, "quiet").step()  # no progress to tell: nothing fails


def test_a_part_that_costs_several_steps_advances_by_them():
    told = []
    clock = Countdown(10, lambda f, text: told.append(f), "Attributing")
    clock.advance(1)
    clock.advance(9)
    clock.advance(1)  # past the estimate: held at the end
    assert told == [0.0, 0.1, 1.0, 1.0]
