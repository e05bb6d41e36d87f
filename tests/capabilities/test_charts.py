"""charts: create_chart returns a chart spec; an empty axis, no series or a mis-sized series is a retry."""

from __future__ import annotations

from tests.capabilities.helpers import run, spec

CHARTS = spec({"id": "charts"})


def _chart(**overrides):
    args = {
        "chart_type": "line",
        "title": "Revenue",
        "x_values": ["Jan", "Feb", "Mar"],
        "series": [{"name": "2025", "values": [1, 2, 3]}, {"name": "2026", "values": [2, 3, 5.5]}],
    }
    args.update(overrides)
    return ("create_chart", args)


async def test_it_returns_a_chart_spec_the_web_ui_renders():
    outcome = await run(CHARTS, [_chart(y_label="EUR")])
    assert outcome.retries == []
    chart = outcome.returns[0]
    assert chart["kind"] == "chart" and chart["chart_type"] == "line"
    assert chart["x_values"] == ["Jan", "Feb", "Mar"]
    assert chart["series"][1] == {"name": "2026", "values": [2.0, 3.0, 5.5]}
    assert chart["y_label"] == "EUR"


async def test_an_empty_axis_is_a_retry_naming_x_values():
    outcome = await run(CHARTS, [_chart(x_values=[], series=[{"name": "a", "values": []}])])
    assert "x_values is empty" in outcome.retries[0]


async def test_a_chart_without_series_is_a_retry_naming_series():
    outcome = await run(CHARTS, [_chart(series=[])])
    assert "series is empty" in outcome.retries[0]


async def test_a_short_series_is_a_retry_naming_the_series_and_the_counts():
    outcome = await run(CHARTS, [_chart(series=[{"name": "Costs", "values": [1, 2]}])])
    assert (
        "series 'Costs' has 2 values but x_values has 3 points (fewer numbers than points)"
        in outcome.retries[0]
    )


async def test_a_long_series_is_a_retry_too():
    outcome = await run(CHARTS, [_chart(series=[{"name": "Costs", "values": [1, 2, 3, 4]}])])
    assert "more numbers than points" in outcome.retries[0]


async def test_a_second_bad_call_returns_the_problem_as_a_result_instead_of_ending_the_run():
    bad = _chart(series=[])
    outcome = await run(CHARTS, [bad, bad])
    assert len(outcome.retries) == 1
    assert "series is empty" in outcome.returns[0]
    assert outcome.output == "done"


async def test_the_model_can_correct_itself_after_a_retry():
    outcome = await run(CHARTS, [_chart(series=[]), _chart()])
    assert len(outcome.retries) == 1
    assert outcome.returns[0]["kind"] == "chart"


async def test_a_pie_chart_takes_one_series():
    outcome = await run(CHARTS, [_chart(chart_type="pie")])
    assert "exactly one series" in outcome.retries[0]
