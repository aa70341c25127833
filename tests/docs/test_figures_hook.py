"""The figures hook: every registered figure draws, with alt text, from tested code."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from docs_harness import load_hook
from site_build import ROOT

figures_hook = load_hook("figures")
SVG = "{http://www.w3.org/2000/svg}"


def test_there_are_figures() -> None:
    assert "figures/01-scores.svg" in figures_hook.FIGURES


@pytest.mark.parametrize("path", sorted(figures_hook.FIGURES))
def test_each_figure_is_an_svg_with_a_title(path: str) -> None:
    root = ET.fromstring(figures_hook.FIGURES[path]())
    assert root.tag == f"{SVG}svg"
    assert root[0].tag == f"{SVG}title"
    assert root[0].text
    assert root[0].text.strip()


@pytest.mark.parametrize("path", sorted(figures_hook.FIGURES))
def test_each_figure_is_shown_on_a_page(path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    pages = [p for p in (ROOT / "docs").rglob("*.md") if name in p.read_text(encoding="utf-8")]
    assert pages, f"no page shows {path}"


def test_the_scores_figure_shows_the_episodes_scores() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/01-scores.svg"]())[0].text or ""
    assert "Row 0: 2, 0, 2. Row 1: 0, 8, 4. Row 2: 2, 4, 4." in title
    page = (ROOT / "docs" / "episodes" / "01-attention-is-four-operations.md").read_text(
        encoding="utf-8"
    )
    assert re.search(r"Row 0 reads 2, 0, 2; row 1 reads 0, 8, 4; row 2 reads 2, 4, 4", page)


def test_the_weights_figure_matches_the_page() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/01-weights.svg"]())[0].text or ""
    assert "Row 0: 0.42, 0.16, 0.42. Row 1: 0.02, 0.87, 0.12." in title


def test_the_weights_caption_adds_up_the_rounded_cells() -> None:
    # The cells show two decimals; the caption says what the rows then add up to.
    from opbyop.scratch import mat_mul, scale, softmax, transpose

    words = figures_hook.EPISODE_1_WORDS
    weights = softmax(scale(mat_mul(words, transpose(words)), vector_size=4))
    shown = [round(sum(round(w, 2) for w in row), 2) for row in weights]
    assert shown == [1.0, 1.01, 1.0]
    page = (ROOT / "docs" / "episodes" / "01-attention-is-four-operations.md").read_text(
        encoding="utf-8"
    )
    assert "row 1 shows 1.01 and rows 0 and 2 show 1.00" in " ".join(page.split())


def test_a_path_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="two figures"):
        figures_hook.figure("figures/01-scores.svg")(lambda: "<svg/>")


@pytest.mark.parametrize("name", ["04-causal-mask.svg", "04-padding-mask.svg"])
def test_episode_4_shows_each_mask_with_the_figures_own_description(name: str) -> None:
    title = ET.fromstring(figures_hook.FIGURES[f"figures/{name}"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "04-no-peeking.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/{name})" in page


def test_the_padding_figure_pads_each_sentence_to_the_longest() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/04-padding-mask.svg"]())[0].text or ""
    assert "'the dog barked', has 5 tokens and 3 [PAD]" in title
    assert "'hello', has 3 tokens and 5 [PAD]" in title


def test_the_heads_figure_draws_the_real_models_layer_0() -> None:
    text = figures_hook.FIGURES["figures/03-heads.svg"]()
    title = ET.fromstring(text)[0].text or ""
    tokens = "[CLS] the old man ate a green apple [SEP]"
    claim = "every token after [CLS] puts at least 0.99 of its weight on the token before it"
    assert tokens in title
    assert claim in title
    assert all(f">head {h}<" in text for h in range(12))  # one grid per head
    page = (ROOT / "docs" / "episodes" / "03-many-heads-at-once.md").read_text(encoding="utf-8")
    assert figures_hook.EPISODE_3_SENTENCE in page
    assert tokens in page
    assert claim in page


@pytest.mark.parametrize("name", ["06-block.svg", "06-gelu.svg"])
def test_episode_6_shows_each_figure_with_the_figures_own_description(name: str) -> None:
    title = ET.fromstring(figures_hook.FIGURES[f"figures/{name}"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "06-the-transformer-block.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/{name})" in page


def test_the_block_figure_draws_both_orders_as_the_page_names_them() -> None:
    post, pre = figures_hook.EPISODE_6_BLOCKS.values()
    assert post == [["attention", "+", "layer norm"], ["feed-forward", "+", "layer norm"]]
    assert pre == [["layer norm", "attention", "+"], ["layer norm", "feed-forward", "+"]]
    title = ET.fromstring(figures_hook.FIGURES["figures/06-block.svg"]())[0].text or ""
    assert "Left, norm after the add (BERT, all-MiniLM-L6-v2)" in title
    assert "Right, norm before (GPT-2)" in title


def test_the_positions_figure_matches_the_page() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/05-positions.svg"]())[0].text or ""
    assert "neighbouring positions average 0.87" in title
    assert "only 0.11 to 0.31" in title
    page = (ROOT / "docs" / "episodes" / "05-words-to-tokens.md").read_text(encoding="utf-8")
    page = " ".join(page.split())  # a phrase may break across lines
    assert "is 0.87 on average" in page
    assert "(cosine 0.11 to 0.31)" in page


def test_the_search_figure_matches_the_page() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/07-search.svg"]())[0].text or ""
    for row in [
        "'How do I reset my password?': brightest on login details (0.54)",
        "'Is it going to rain tomorrow?': brightest on showers forecast (0.55)",
        "'cheap tickets for a trip to Paris': brightest on budget airlines (0.54)",
        "'a pet that purrs': brightest on puppy (0.38), then cats (0.34)",
        "'Where can I borrow money?': brightest on savings account (0.33), then loan (0.30)",
        "'healthy habits for a long life': brightest on exercise (0.41)",
    ]:
        assert row in title
    page = (ROOT / "docs" / "episodes" / "07-the-whole-model.md").read_text(encoding="utf-8")
    assert "0.54, 0.55 and 0.54" in page
    assert "puppy sentence, 0.38, with cats at 0.34" in page
    assert "savings account, 0.33, with the loan at 0.30" in page
    assert "exercise, 0.41" in page


def test_the_search_figure_draws_sentences_the_reference_holds() -> None:
    # The page's proof compares every sentence of the reference file with
    # sentence-transformers; the figure must draw only sentences it covers.
    groups = json.loads((ROOT / "tests" / "data" / "minilm_sentences.json").read_text("utf-8"))
    assert groups["queries"] == figures_hook.EPISODE_7_QUERIES
    assert set(figures_hook.EPISODE_7_SENTENCES.values()) <= set(groups["corpus"])


def test_the_loss_ladder_figure_has_the_alt_text_the_page_gives_it() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/08-loss-ladder.svg"]())[0].text or ""
    assert "bigram 3.42" in title
    page = (ROOT / "docs" / "episodes" / "08-guess-the-next-token.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/08-loss-ladder.svg)" in page


def test_the_nudge_error_figure_has_the_alt_text_the_page_gives_it() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/09-nudge-error.svg"]())[0].text or ""
    assert "float64 falls from 2e-05 to its lowest, under 1e-10, at h = 1e-5" in title
    assert "float32 falls from 2e-05 to its lowest, over 1e-06, at h = 1e-2" in title
    assert "from h = 1e-8 on stays at 7e-02, the whole gradient" in title
    page = (ROOT / "docs" / "episodes" / "09-gradients-by-hand.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/09-nudge-error.svg)" in page
    prose = " ".join(page.split())
    assert "float64: best at h = 1e-5, under 1e-10: True" in prose
    assert "float32: best at h = 1e-2, over 1e-6: True" in prose
    assert "float32 from h = 1e-8: every slope 0: True" in prose


@pytest.mark.parametrize("name", ["10-five-minutes", "10-shipped", "10-schedule"])
def test_episode_10_shows_each_figure_with_the_figures_own_description(name: str) -> None:
    title = ET.fromstring(figures_hook.FIGURES[f"figures/{name}.svg"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "10-training-a-tiny-gpt.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/{name}.svg)" in page


def test_the_episode_10_curves_are_the_logs_own_numbers() -> None:
    steps, curves = figures_hook.episode_10_curves("five-minutes")
    assert (steps[0], steps[-1]) == (812, 7543)
    assert curves["validation sample"][-1] == 1.94
    title = ET.fromstring(figures_hook.FIGURES["figures/10-schedule.svg"]())[0].text or ""
    assert "from 3e-05 at step 0 to 3e-03 at step 100" in title
    prose = " ".join(
        (ROOT / "docs" / "episodes" / "10-training-a-tiny-gpt.md")
        .read_text(encoding="utf-8")
        .split()
    )
    assert "validation from 2.95 bits per byte at step 812 to 1.94" in prose
    assert "['2.97e-05', '3.00e-03', '1.65e-03', '3.00e-04']" in prose


@pytest.mark.parametrize("name", ["11-temperature", "11-cuts", "11-cache"])
def test_episode_11_shows_each_figure_with_the_figures_own_description(name: str) -> None:
    title = ET.fromstring(figures_hook.FIGURES[f"figures/{name}.svg"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "11-writing-one-token-at-a-time.md").read_text(
        encoding="utf-8"
    )
    assert f"![{title}](../figures/{name}.svg)" in page


def test_episode_11_figures_state_what_the_page_states() -> None:
    # The page prints and asserts these numbers; the pictures must show them.
    shown = figures_hook.episode_11_distributions()
    top = {name: round(value, 2) for name, value in shown["top"].items()}
    assert shown["best"] == "_"
    assert top == {
        "as the model gives it": 0.34,
        "temperature 0.5": 0.82,
        "temperature 1.5": 0.17,
        "top-k 5": 0.58,
        "top-p 0.9": 0.37,
        "min-p 0.1": 0.48,
    }
    assert shown["possible"] == {
        "as the model gives it": 256,
        "temperature 0.5": 256,
        "temperature 1.5": 256,
        "top-k 5": 5,
        "top-p 0.9": 17,
        "min-p 0.1": 8,
    }
    title = ET.fromstring(figures_hook.FIGURES["figures/11-cache.svg"]())[0].text or ""
    assert "between 1.1 and 1.3 ms at every length" in title
    assert "from 2.7 ms to 15.7 ms" in title


def test_episode_12_shows_the_figure_with_the_figures_own_description() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/12-equal-time.svg"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "12-byte-pairs.md").read_text(encoding="utf-8")
    assert f"![{title}](../figures/12-equal-time.svg)" in page


def test_episode_12_curves_are_the_recorded_runs_own_numbers() -> None:
    # Each curve's last point is the mean of its two seeds' last validation on
    # the sample, and every vocabulary's curve ends at the same 5 minutes.
    recorded = json.loads(figures_hook.EPISODE_12_RUNS.read_text(encoding="utf-8"))
    shown, curves = figures_hook.episode_12_curves()
    assert list(curves) == ["vocab_size 256", "vocab_size 512", "vocab_size 1,024"]
    assert abs(shown[-1] - 5) < 0.01
    for name, values in curves.items():
        size = name.split()[-1].replace(",", "")
        ends = [
            run["validation_curve"][-1][2]
            for run in recorded["runs"]
            if run["comparison"] == "vocabulary" and run["name"] == size
        ]
        assert len(ends) == 2
        assert values[-1] == round(sum(ends) / 2, 2)


def test_episode_13_shows_its_figure_with_the_figures_own_description() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/13-equal-time.svg"]())[0].text or ""
    page = (ROOT / "docs" / "episodes" / "13-what-changed-since-gpt-2.md").read_text(
        encoding="utf-8"
    )
    assert f"![{title}](../figures/13-equal-time.svg)" in page


def test_the_episode_13_figure_draws_every_recorded_run() -> None:
    # Two seeds of each variant, as benchmarks/equal_time.py recorded them.
    runs = figures_hook.episode_13_runs()
    assert list(runs) == ["GPT-2", "RMSNorm", "SwiGLU", "rotary", "all three"]
    recorded = json.loads(figures_hook.EPISODE_13_RESULTS.read_text(encoding="utf-8"))
    for name, values in runs.items():
        seeds = sorted(
            (run["seed"], run["validation_bits_per_byte"])
            for run in recorded["runs"]
            if run["comparison"] == "modern" and run["name"] == name
        )
        assert seeds == [(0, values[0]), (1, values[1])]
    title = ET.fromstring(figures_hook.FIGURES["figures/13-equal-time.svg"]())[0].text or ""
    first = runs["GPT-2"]
    assert f"GPT-2: {first[0]:.3f} and {first[1]:.3f}" in title


def test_episode_13_shows_the_silu_figure_with_its_description() -> None:
    title = ET.fromstring(figures_hook.FIGURES["figures/13-silu.svg"]())[0].text or ""
    assert "SiLU dips to -0.28 at x = -1.28 and is 0.73 at x = 1" in title
    assert "GELU dips to -0.17 at x = -0.75 and is 0.84 at x = 1" in title
    page = (ROOT / "docs" / "episodes" / "13-what-changed-since-gpt-2.md").read_text(
        encoding="utf-8"
    )
    assert f"![{title}](../figures/13-silu.svg)" in page
    prose = " ".join(page.split())
    minus = "\N{MINUS SIGN}"  # the prose's minus, as printed
    assert f"to {minus}0.28 at x = {minus}1.28 (GELU: {minus}0.17 at {minus}0.75)" in prose
    assert "0.73 at x = 1 against GELU's 0.84" in prose
