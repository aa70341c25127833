"""opbyop.plot: heatmaps as SVG with alt text, behind the optional plot extra."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb
from matplotlib.patches import Rectangle

from opbyop.plot import (
    BOX_COLOURS,
    HIDDEN_COLOUR,
    KEPT_COLOUR,
    LINE_STYLES,
    Picture,
    attention_heads,
    attention_heatmap,
    bar_chart,
    block_diagram,
    line_chart,
    mask_grid,
    picture,
    similarity_heatmap,
    spread_chart,
    svg,
)

SVG = "{http://www.w3.org/2000/svg}"
WEIGHTS = [[0.9, 0.1, 0.0], [0.2, 0.5, 0.3]]


def test_import_opbyop_does_not_import_matplotlib() -> None:
    code = "import sys, opbyop; print('matplotlib' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_the_svg_is_titled_with_its_alt_text() -> None:
    text = svg(attention_heatmap(WEIGHTS, ["q0", "q1"], ["k0", "k1", "k2"]), "Two <rows>.")
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label") == "Two <rows>."
    first = root[0]
    assert first.tag == f"{SVG}title"
    assert first.text == "Two <rows>."


def test_axes_are_labelled_and_every_cell_shows_its_value() -> None:
    figure = attention_heatmap(WEIGHTS, ["q0", "q1"], ["k0", "k1", "k2"], title="T")
    axes = figure.axes[0]
    assert axes.get_title() == "T"
    assert axes.get_xlabel() == "key (the word looked at)"
    assert axes.get_ylabel() == "query (the word looking)"
    assert [t.get_text() for t in axes.get_xticklabels()] == ["k0", "k1", "k2"]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["q0", "q1"]
    cells = sorted(t.get_text() for t in axes.texts)
    assert cells == sorted(f"{w:.2f}" for row in WEIGHTS for w in row)


def test_text_on_a_cell_contrasts_with_it() -> None:
    # viridis runs from dark purple (0) to light yellow (1).
    figure = attention_heatmap([[0.0, 1.0]], ["q"], ["dark", "light"])
    colours = [t.get_color() for t in figure.axes[0].texts]
    assert colours == ["white", "black"]


def test_the_background_is_white_in_both_themes() -> None:
    text = svg(attention_heatmap(WEIGHTS[:1], ["q"], ["a", "b", "c"]), "A row.")
    first_patch = re.search(r"<g id=\"patch_1\">\s*<path d=\"[^\"]*\"\s*style=\"([^\"]*)\"", text)
    assert first_patch is not None
    assert "fill: #ffffff" in first_patch.group(1)


def test_value_range_none_spans_the_matrix() -> None:
    figure = attention_heatmap([[2.0, 8.0]], ["q"], ["a", "b"], value_range=None, decimals=0)
    image = figure.axes[0].images[0]
    assert image.get_clim() == (2.0, 8.0)
    assert [t.get_text() for t in figure.axes[0].texts] == ["2", "8"]


def test_the_same_figure_gives_the_same_svg() -> None:
    def draw() -> str:
        return svg(attention_heatmap(np.eye(3), ["a", "b", "c"]), "The identity.")

    assert draw() == draw()


def test_a_notebook_shows_a_picture_as_an_img_with_alt_text() -> None:
    shown = picture(attention_heatmap([[1.0]], ["w"]), 'A "quoted" word.')
    assert isinstance(shown, Picture)
    html = shown._repr_html_()
    assert html.startswith('<img src="data:image/svg+xml;base64,')
    assert 'alt="A &quot;quoted&quot; word."' in html


@pytest.mark.parametrize(
    ("weights", "rows", "columns", "message"),
    [
        ([1.0, 2.0], ["a"], None, r"must be 2-D, got shape \(2,\)"),
        ([[1.0, 2.0]], ["a", "b"], None, r"shape \(1, 2\), but there are 2 row labels"),
        ([[1.0, 2.0]], ["a"], ["x"], r"1 row labels and 1 column labels"),
    ],
)
def test_labels_that_do_not_fit_are_refused(
    weights: object, rows: list[str], columns: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        attention_heatmap(weights, rows, columns)  # type: ignore[arg-type]


def test_an_empty_alt_text_is_refused() -> None:
    with pytest.raises(ValueError, match="alt must describe"):
        svg(attention_heatmap([[1.0]], ["w"]), "  ")


def test_a_mask_grid_is_light_where_true_and_names_both_in_a_legend() -> None:
    mask = [[True, False, False], [True, True, False]]
    figure = mask_grid(mask, ["q0", "q1"], ["k0", "k1", "k2"], kept="sees", hidden="not")
    axes = figure.axes[0]
    image = axes.images[0]
    colours = image.cmap(image.norm(np.asarray(image.get_array())))  # RGBA per cell
    light = np.all(np.isclose(colours[..., :3], to_rgb(KEPT_COLOUR)), axis=-1)
    dark = np.all(np.isclose(colours[..., :3], to_rgb(HIDDEN_COLOUR)), axis=-1)
    assert light.tolist() == mask
    assert dark.tolist() == [[not m for m in row] for row in mask]
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["sees", "not"]
    assert [t.get_text() for t in axes.get_xticklabels()] == ["k0", "k1", "k2"]
    assert len(axes.texts) == 0  # no cell text unless asked for


def test_a_mask_grid_writes_each_cell_in_a_contrasting_colour() -> None:
    figure = mask_grid([[True, False]], ["s"], ["0", "1"], cells=[["word", "[PAD]"]])
    texts = figure.axes[0].texts
    assert [t.get_text() for t in texts] == ["word", "[PAD]"]
    assert [t.get_color() for t in texts] == ["black", "white"]


@pytest.mark.parametrize(
    ("mask", "cells", "message"),
    [
        ([[1.0, 0.0]], None, r"2-D True/False, got shape \(1, 2\), dtype float64"),
        ([True, False], None, r"2-D True/False, got shape \(2,\)"),
        ([[True], [False]], None, r"shape \(2, 1\), but there are 1 row labels"),
        ([[True, False]], [["a"]], r"cells must have the shape of mask \(1, 2\)"),
    ],
)
def test_a_mask_grid_refuses_what_does_not_fit(
    mask: object, cells: list[list[str]] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        mask_grid(mask, ["q"], ["a", "b"], cells=cells)  # type: ignore[arg-type]


HEADS = np.stack([np.eye(3), np.full((3, 3), 1 / 3), np.eye(3)[::-1], np.eye(3)])  # 4 heads


def test_heads_get_one_grid_each_with_its_title_and_one_scale() -> None:
    figure = attention_heads(HEADS, ["a", "b", "c"], columns=3)
    grids = [axes for axes in figure.axes if axes.images]
    assert [axes.get_title() for axes in grids] == ["head 0", "head 1", "head 2", "head 3"]
    for axes, weights in zip(grids, HEADS, strict=True):
        image = axes.images[0]
        assert image.get_clim() == (0.0, 1.0)  # one colour scale for every head
        np.testing.assert_array_equal(image.get_array(), weights)
    # 4 heads in rows of 3: a second row with one grid and two empty slots
    assert len(figure.axes) == 6 + 1  # six slots and the colour bar
    assert sum(not axes.axison for axes in figure.axes) == 2


def test_tokens_label_the_outer_grids_only() -> None:
    figure = attention_heads(HEADS, ["a", "b", "c"], columns=2)
    grids = [axes for axes in figure.axes if axes.images]

    def labels(ticks: list[Any]) -> list[str]:
        return [t.get_text() for t in ticks]

    assert labels(grids[0].get_yticklabels()) == ["a", "b", "c"]  # left column
    assert labels(grids[1].get_yticklabels()) == ["", "", ""]
    assert labels(grids[0].get_xticklabels()) == ["", "", ""]  # top row
    assert labels(grids[2].get_xticklabels()) == ["a", "b", "c"]  # bottom row
    assert figure.get_supylabel() == "query (the token looking)"
    assert figure.get_supxlabel() == "key (the token looked at)"


def test_heads_titles_can_be_given() -> None:
    figure = attention_heads(HEADS[:2], ["a", "b", "c"], titles=["right", "wrong"])
    assert [axes.get_title() for axes in figure.axes if axes.images] == ["right", "wrong"]


def test_heads_draw_as_an_svg_with_alt_text() -> None:
    text = svg(attention_heads(HEADS, ["a", "b", "c"]), "Four heads.")
    assert ET.fromstring(text)[0].text == "Four heads."


@pytest.mark.parametrize(
    ("weights", "tokens", "kwargs", "message"),
    [
        (np.eye(3), ["a", "b", "c"], {}, r"shape \(n_heads, n, n\), got \(3, 3\)"),
        (np.ones((2, 3, 4)), ["a", "b", "c"], {}, r"got \(2, 3, 4\)"),
        (HEADS, ["a", "b"], {}, r"there are 2 tokens and 4 titles"),
        (HEADS, ["a", "b", "c"], {"titles": ["x"]}, r"3 tokens and 1 titles"),
        (HEADS, ["a", "b", "c"], {"columns": 0}, r"columns must be a positive integer, got 0"),
    ],
)
def test_heads_that_do_not_fit_are_refused(
    weights: Any, tokens: list[str], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        attention_heads(weights, tokens, **kwargs)


# ------------------------------------------------------------ block_diagram

POST_NORM = {"post": [["attention", "+", "norm"], ["feed-forward", "+", "norm"]]}


def test_a_block_diagram_draws_each_step_in_order_and_an_add_per_half() -> None:
    figure = block_diagram(POST_NORM, input_label="in", output_label="out")
    axes = figure.axes[0]
    texts = [t.get_text() for t in axes.texts if t.get_text()]  # not the arrows
    first = ["attention", "+", "shortcut", "norm"]
    second = ["feed-forward", "+", "shortcut", "norm"]
    assert texts == ["post", "in", *first, *second, "out"]
    circles = [p for p in axes.patches if type(p).__name__ == "Circle"]
    assert len(circles) == 2  # one addition per half


def test_a_block_diagram_runs_each_shortcut_from_its_halfs_input_to_its_add() -> None:
    axes = block_diagram(POST_NORM).axes[0]
    height = {t.get_text(): float(t.get_position()[1]) for t in axes.texts if t.get_text()}
    adds = [float(t.get_position()[1]) for t in axes.texts if t.get_text() == "+"]
    shortcuts = [
        [float(y) for y in np.asarray(line.get_ydata())]
        for line in axes.lines
        if np.size(line.get_ydata()) == 3
    ]
    assert len(shortcuts) == 2
    # half 0 leaves between the input and attention; half 1 after the first norm
    (first_start, _, first_end), (second_start, _, second_end) = shortcuts
    assert height["attention"] < first_start < height["input"]
    assert first_end == adds[0]
    assert second_end == adds[1]
    assert height["feed-forward"] < second_start < adds[0]


def test_a_block_diagram_colours_a_kind_of_box_the_same_in_every_column() -> None:
    columns = {"a": [["norm", "attention", "+"]], "b": [["attention", "+", "norm"]]}
    boxes = [p for p in block_diagram(columns).axes[0].patches if type(p).__name__ != "Circle"]
    fills = [to_hex(box.get_facecolor()) for box in boxes]
    assert fills == [BOX_COLOURS[0], BOX_COLOURS[1], BOX_COLOURS[1], BOX_COLOURS[0]]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({}, "at least one block"),
        ({"a": []}, "block 'a' has no half"),
        ({"a": [["attention"]]}, r"half 0 of block 'a' must hold '\+' once"),
        ({"a": [["+", "x", "+"]]}, r"must hold '\+' once, got \['\+', 'x', '\+'\]"),
    ],
)
def test_a_block_diagram_refuses_a_half_without_one_add(
    columns: dict[str, list[list[str]]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        block_diagram(columns)


# --------------------------------------------------------------- line_chart


def test_a_line_chart_draws_each_curve_with_its_own_dashes_and_a_legend() -> None:
    x = np.linspace(-1, 1, 5)
    figure = line_chart(x, {"a": x, "b": x**2}, title="T", x_label="x", y_label="y")
    axes = figure.axes[0]
    curves = [line for line in axes.lines if line.get_label() in ("a", "b")]
    assert [line.get_label() for line in curves] == ["a", "b"]
    np.testing.assert_array_equal(curves[1].get_ydata(), x**2)
    assert [line.get_linestyle() for line in curves] == ["-", "--"]
    legend = axes.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["a", "b"]
    assert (axes.get_title(), axes.get_xlabel(), axes.get_ylabel()) == ("T", "x", "y")


def test_a_line_chart_in_powers_of_ten() -> None:
    h = [1e-1, 1e-2, 1e-3, 1e-4]
    figure = line_chart(h, {"error": [1e-2, 1e-4, 1e-6, 1e-5]}, log_scale=True)
    axes = figure.axes[0]
    assert (axes.get_xscale(), axes.get_yscale()) == ("log", "log")
    assert [line.get_label() for line in axes.lines] == ["error"]  # no line at 0
    svg(figure, "A V in powers of ten.")  # draws with no warning
    plain = line_chart(h, {"error": [1e-2, 1e-4, 1e-6, 1e-5]})
    assert plain.axes[0].get_yscale() == "linear"
    with pytest.raises(ValueError, match=r"with log_scale, 'error' must be positive, got 0\.0"):
        line_chart(h, {"error": [1e-2, 0.0, 1e-6, 1e-5]}, log_scale=True)
    with pytest.raises(ValueError, match="with log_scale, 'x' must be positive"):
        line_chart([0.0, 1.0], {"error": [1.0, 2.0]}, log_scale=True)


@pytest.mark.parametrize(
    ("x", "lines", "message"),
    [
        ([[0.0, 1.0]], {"a": [0.0, 1.0]}, r"x must be 1-D, got shape \(1, 2\)"),
        ([0.0, 1.0], {}, "1 to 4 curves, got 0"),
        ([0.0], {str(i): [0.0] for i in range(len(LINE_STYLES) + 1)}, "got 5"),
        ([0.0, 1.0], {"a": [1.0]}, r"curve 'a' has shape \(1,\), x has shape \(2,\)"),
    ],
)
def test_a_line_chart_refuses_curves_that_do_not_fit(
    x: object, lines: dict[str, list[float]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        line_chart(x, lines)  # type: ignore[arg-type]


# ---------------------------------------------------------------- bar_chart


def test_a_bar_chart_draws_each_value_top_down_with_its_number() -> None:
    figure = bar_chart({"first": 8.0, "second": 3.42}, title="T", value_label="bits")
    axes = figure.axes[0]
    widths = [bar.get_width() for bar in axes.patches if isinstance(bar, Rectangle)]
    assert widths == [8.0, 3.42]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["first", "second"]
    assert axes.yaxis_inverted()  # the first value on top
    assert [t.get_text().strip() for t in axes.texts] == ["8.00", "3.42"]
    assert (axes.get_title(), axes.get_xlabel()) == ("T", "bits")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "at least one bar"),
        ({"a": -1.0}, "finite and >= 0"),
        ({"a": float("inf")}, "finite and >= 0"),
    ],
)
def test_a_bar_chart_refuses_values_it_cannot_draw(values: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bar_chart(values)


# ---------------------------------------------------------------- spread_chart


def test_a_spread_chart_draws_a_dot_per_run_a_line_per_row_and_the_mean() -> None:
    figure = spread_chart(
        {"first": [2.0, 2.2], "second": [1.9, 1.96, 1.93]}, title="T", value_label="bits"
    )
    axes = figure.axes[0]
    dots = [line for line in axes.lines if line.get_marker() == "o"]
    spans = [line for line in axes.lines if line.get_marker() != "o"]
    xs = [np.asarray(d.get_xdata()).tolist() for d in dots]
    ys = [np.asarray(d.get_ydata()).tolist() for d in dots]
    assert xs == [[2.0, 2.2], [1.9, 1.96, 1.93]]
    assert ys == [[0.0, 0.0], [1.0, 1.0, 1.0]]
    lines = [np.asarray(s.get_xdata()).tolist() for s in spans]
    assert lines == [[2.0, 2.2], [1.9, 1.96]]  # lowest to highest
    assert [t.get_text().strip() for t in axes.texts] == ["mean 2.100", "mean 1.930"]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["first", "second"]
    assert axes.yaxis_inverted()  # the first row on top
    low, high = axes.get_xlim()
    assert 1.0 < low < 1.9  # the axis spans the values, not 0
    assert high > 2.2
    assert (axes.get_title(), axes.get_xlabel()) == ("T", "bits")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "at least one row"),
        ({"a": []}, "at least one finite value"),
        ({"a": [1.0, float("nan")]}, "at least one finite value"),
    ],
)
def test_a_spread_chart_refuses_values_it_cannot_draw(
    values: dict[str, list[float]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        spread_chart(values)


# ---------------------------------------------------------- similarity_heatmap


def test_a_similarity_heatmap_writes_no_values_and_ticks_every_step() -> None:
    figure = similarity_heatmap(np.eye(33), title="T", tick_step=8)
    axes = figure.axes[0]
    assert len(axes.texts) == 0  # too many cells to write each value in
    ticks = ["0", "8", "16", "24", "32"]
    assert [t.get_text() for t in axes.get_xticklabels()] == ticks
    assert [t.get_text() for t in axes.get_yticklabels()] == ticks
    assert axes.get_xlabel() == axes.get_ylabel() == "position"
    assert axes.get_title() == "T"
    assert axes.images[0].get_clim() == (-1.0, 1.0)  # every cosine similarity


def test_a_similarity_heatmap_can_span_its_own_values() -> None:
    figure = similarity_heatmap([[1.0, -0.25], [-0.25, 1.0]], value_range=None)
    assert figure.axes[0].images[0].get_clim() == (-0.25, 1.0)
    text = svg(figure, "Two items.")
    assert text == svg(
        similarity_heatmap([[1.0, -0.25], [-0.25, 1.0]], value_range=None), "Two items."
    )


@pytest.mark.parametrize(
    ("values", "tick_step", "message"),
    [
        ([[1.0, 2.0]], 16, r"square 2-D matrix, got shape \(1, 2\)"),
        ([1.0, 2.0], 16, r"square 2-D matrix, got shape \(2,\)"),
        (np.eye(2), 0, "tick_step must be a positive integer, got 0"),
        (np.eye(2), 2.0, "tick_step must be a positive integer, got 2.0"),
    ],
)
def test_a_similarity_heatmap_refuses_what_it_cannot_draw(
    values: object, tick_step: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        similarity_heatmap(values, tick_step=tick_step)  # type: ignore[arg-type]
