"""opbyop.plot: heatmaps as SVG with alt text, behind the optional plot extra."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from opbyop.plot import Picture, attention_heatmap, picture, similarity_heatmap, svg

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
