"""Draw the episodes' figures at build time, from the library's own numbers.

Each figure is a function below, registered with ``@figure("figures/NN-name.svg")``
under the path the pages link to (relative to ``docs/``). It computes what it
shows with `opbyop`, draws it with `opbyop.plot`, and returns the SVG text, with
the alt text in the SVG's ``<title>``. On every build, ``on_files`` runs each
function and adds its SVG to the site as a generated file: nothing is
committed, so no picture can go stale, and a page linking a figure that is not
registered fails ``mkdocs build --strict`` (a link to a missing file).

A page shows a figure with its own alt text, which may quote numbers the page
asserts::

    <figure markdown="span">
      ![Describe what the figure shows, with its numbers.](../figures/01-scores.svg)
      <figcaption>One or two sentences.</figcaption>
    </figure>

tests/docs/test_figures.py runs every function and checks what it returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

FigureFunction = Callable[[], str]
FIGURES: dict[str, FigureFunction] = {}


def figure(path: str) -> Callable[[FigureFunction], FigureFunction]:
    """Register a function that returns the SVG text of ``docs/<path>``."""

    def register(function: FigureFunction) -> FigureFunction:
        if path in FIGURES:
            raise ValueError(f"two figures are registered as {path}")
        FIGURES[path] = function
        return function

    return register


def on_files(files: Files, config: Any) -> Files:
    for path, draw in FIGURES.items():
        files.append(File.generated(config, path, content=draw()))
    return files


# ---------------------------------------------------------------- episode 1

# The made-up sentence the episode follows: 3 words, 4 numbers each.
EPISODE_1_WORDS = [
    [1.0, 0.0, 1.0, 0.0],
    [0.0, 2.0, 0.0, 2.0],
    [1.0, 1.0, 1.0, 1.0],
]
EPISODE_1_LABELS = ["word 0", "word 1", "word 2"]


@figure("figures/01-scores.svg")
def episode_1_scores() -> str:
    from opbyop.plot import attention_heatmap, svg
    from opbyop.scratch import mat_mul, transpose

    scores = mat_mul(EPISODE_1_WORDS, transpose(EPISODE_1_WORDS))
    drawing = attention_heatmap(
        scores,
        EPISODE_1_LABELS,
        title="Scores: Q times K transposed",
        value_range=None,
        value_label="score",
        row_axis="query",
        column_axis="key",
        decimals=0,
    )
    return svg(
        drawing,
        "A 3 by 3 grid of scores; rows are queries, columns are keys. "
        + " ".join(f"Row {i}: {', '.join(f'{s:g}' for s in row)}." for i, row in enumerate(scores)),
    )


@figure("figures/01-weights.svg")
def episode_1_weights() -> str:
    from opbyop.plot import attention_heatmap, svg
    from opbyop.scratch import mat_mul, scale, softmax, transpose

    scores = mat_mul(EPISODE_1_WORDS, transpose(EPISODE_1_WORDS))
    weights = softmax(scale(scores, vector_size=len(EPISODE_1_WORDS[0])))
    drawing = attention_heatmap(
        weights,
        EPISODE_1_LABELS,
        title="Weights: softmax of the scaled scores",
        row_axis="query",
        column_axis="key",
    )
    return svg(
        drawing,
        "A 3 by 3 grid of attention weights from 0 to 1; rows are queries, "
        "columns are keys; each row adds up to 1. "
        + " ".join(
            f"Row {i}: {', '.join(f'{w:.2f}' for w in row)}." for i, row in enumerate(weights)
        ),
    )


# ---------------------------------------------------------------- episode 2

# Layer 0, head 2 of all-MiniLM-L6-v2: the previous-token head the episode
# follows, on the sentences it shows.
EPISODE_2_HEAD = 2
EPISODE_2_SENTENCES = {
    "money": "the bank closed its doors and kept my money",
    "blood": "the blood bank needs more donors",
    "river": "we fished from the river bank",
    "old-man": "the old man ate a green apple",
}


def episode_2_head(name: str) -> str:
    """Head 2's weights on one sentence, as the library's model computes them."""
    from opbyop import minilm
    from opbyop.plot import attention_heatmap, svg

    sentence = EPISODE_2_SENTENCES[name]
    trace = minilm.load().trace(sentence)
    weights = trace.layers[0].attention_weights[EPISODE_2_HEAD]
    tokens = trace.tokens
    drawing = attention_heatmap(
        weights,
        tokens,
        title=f"Layer 0, head {EPISODE_2_HEAD}: {sentence}",
        row_axis="query (the token looking)",
        column_axis="key (the token looked at)",
    )
    looks = ", ".join(
        f"{tokens[i]} looks at {tokens[int(row.argmax())]} ({row.max():.2f})"
        for i, row in enumerate(weights)
    )
    return svg(
        drawing,
        f"Attention weights of layer 0, head {EPISODE_2_HEAD} of all-MiniLM-L6-v2 "
        f"on {sentence!r}, {len(tokens)} tokens; rows are queries, columns are keys. "
        f"Each row's largest weight: {looks}.",
    )


@figure("figures/02-head-2-money.svg")
def episode_2_money() -> str:
    return episode_2_head("money")


@figure("figures/02-head-2-blood.svg")
def episode_2_blood() -> str:
    return episode_2_head("blood")


@figure("figures/02-head-2-river.svg")
def episode_2_river() -> str:
    return episode_2_head("river")


@figure("figures/02-head-2-old-man.svg")
def episode_2_old_man() -> str:
    return episode_2_head("old-man")


# ---------------------------------------------------------------- episode 3

# The sentence the episode follows through layer 0 of all-MiniLM-L6-v2.
EPISODE_3_SENTENCE = "the old man ate a green apple"


@figure("figures/03-heads.svg")
def episode_3_heads() -> str:
    from opbyop import minilm
    from opbyop.plot import attention_heads, svg

    trace = minilm.load().trace(EPISODE_3_SENTENCE)
    weights = trace.layers[0].attention_weights  # [12 heads, n, n]
    n = len(trace.tokens)
    before = min(float(weights[2, i, i - 1]) for i in range(1, n))
    words = range(1, n - 1)  # the word rows: not [CLS], not [SEP]
    # all of each word's weight, averaged over the words (unlike the page's
    # table, which counts the first word's [CLS] as "before")
    head_8 = weights[8]
    on_cls = sum(float(head_8[i, 0]) for i in words) / len(words)
    on_itself = sum(float(head_8[i, i]) for i in words) / len(words)
    own_best = [f'"{trace.tokens[i]}"' for i in words if head_8[i].argmax() == i]
    # the weight a word gives [CLS] and [SEP] together, averaged over the words
    resting = [
        sum(float(weights[h, i, 0] + weights[h, i, n - 1]) for i in words) / len(words)
        for h in range(len(weights))
    ]
    others = [resting[h] for h in range(len(weights)) if h not in (2, 3)]
    old = trace.tokens.index("old")
    drawing = attention_heads(
        weights,
        trace.tokens,
        title="Layer 0 of all-MiniLM-L6-v2: its 12 heads on one sentence",
    )
    return svg(
        drawing,
        "Twelve small grids of attention weights, one for each head of layer 0 of "
        f"all-MiniLM-L6-v2, for the tokens {' '.join(trace.tokens)}. Head 2 is a "
        "bright line just below the diagonal: every token after [CLS] puts at least "
        f"{math.floor(100 * before) / 100:.2f} of its weight on the token before it. "
        "Head 8 is brighter in the [CLS] column than on the diagonal: a word gives "
        f"[CLS] {on_cls:.2f} of its weight on average and itself {on_itself:.2f}, "
        f"and only {', '.join(own_best)} gives itself the most. In the other heads "
        f"but heads 2 and 3, a word gives [CLS] and [SEP] together {min(others):.2f} to "
        f"{max(others):.2f} of its weight on average (head 3: {resting[3]:.2f}). A "
        'few single cells are bright too, such as "old" to "man" in head 4 '
        f'({weights[4, old, old + 1]:.2f}) and "old" to "the" in head 5 '
        f"({weights[5, old, old - 1]:.2f}).",
    )


# ---------------------------------------------------------------- episode 4

# The sentence of episode 4's causal mask, and its batch for the padding mask.
# Every word of these is one token of all-MiniLM-L6-v2 (the page asserts it),
# so [CLS], the words and [SEP] are the tokens the model reads.
EPISODE_4_SENTENCE = "we fished from the river bank"
EPISODE_4_BATCH = ["the dog barked", "we fished from the river bank", "hello"]


@figure("figures/04-causal-mask.svg")
def episode_4_causal_mask() -> str:
    from opbyop.plot import mask_grid, svg
    from opbyop.scratch import causal_mask

    words = EPISODE_4_SENTENCE.split()
    drawing = mask_grid(
        causal_mask(len(words)),
        words,
        title="Causal mask: word i sees words 0 to i",
        kept="may look (True)",
        hidden="hidden (False)",
    )
    return svg(
        drawing,
        f"A {len(words)} by {len(words)} grid for the sentence "
        f"'{EPISODE_4_SENTENCE}'; rows are the words looking, columns the "
        "words looked at. The diagonal and everything below it is light: "
        "each word may look at itself and the words before it. Everything "
        "above the diagonal is dark: no word sees a later word.",
    )


@figure("figures/04-padding-mask.svg")
def episode_4_padding_mask() -> str:
    from opbyop.plot import mask_grid, svg

    tokens = [["[CLS]", *s.split(), "[SEP]"] for s in EPISODE_4_BATCH]
    n = max(len(t) for t in tokens)  # the batch's length: the longest
    padded = [t + ["[PAD]"] * (n - len(t)) for t in tokens]
    drawing = mask_grid(
        [[token != "[PAD]" for token in row] for row in padded],
        [f"sentence {i}" for i in range(len(tokens))],
        [str(i) for i in range(n)],
        cells=padded,
        title="Padding mask: one row per sentence, shared by its queries",
        kept="real token (True)",
        hidden="[PAD] (False)",
        row_axis="sentence",
        column_axis="position (key)",
    )
    counts = "; ".join(
        f"sentence {i}, '{s}', has {len(t)} tokens and {n - len(t)} [PAD]"
        for i, (s, t) in enumerate(zip(EPISODE_4_BATCH, tokens, strict=True))
    )
    return svg(
        drawing,
        f"A grid with one row per sentence of a batch and one column per "
        f"position 0 to {n - 1}; each cell holds a token. Real tokens are "
        f"light, [PAD] cells dark, and the padding always comes last: "
        f"{counts}. Every query of a sentence, [PAD] included, uses its "
        "sentence's row.",
    )


# ---------------------------------------------------------------- episode 6

# The two orders of a transformer block, each as its halves, input to output.
EPISODE_6_BLOCKS = {
    "Norm after the add\n(BERT, all-MiniLM-L6-v2)": [
        ["attention", "+", "layer norm"],
        ["feed-forward", "+", "layer norm"],
    ],
    "Norm before\n(GPT-2)": [
        ["layer norm", "attention", "+"],
        ["layer norm", "feed-forward", "+"],
    ],
}


def _describe_half(half: list[str], source: str) -> str:
    """One half of a block in words: its steps, the addition with its shortcut."""
    steps = [f"a plus sign, where a shortcut adds {source}" if s == "+" else s for s in half]
    return ", then ".join(steps)


@figure("figures/06-block.svg")
def episode_6_block() -> str:
    from opbyop.plot import block_diagram, svg

    drawing = block_diagram(
        EPISODE_6_BLOCKS,
        title="One transformer block, two orders",
        input_label="x: one vector per token",
        output_label="output: one vector per token",
    )
    (post_title, post), (pre_title, pre) = EPISODE_6_BLOCKS.items()
    post_name, pre_name = (t[0].lower() + t[1:].replace("\n", " ") for t in (post_title, pre_title))
    return svg(
        drawing,
        "Two flow charts side by side, read from top to bottom. "
        f"Left, {post_name}: {_describe_half(post[0], 'x')}; "
        f"then {_describe_half(post[1], 'the output of that layer norm')}; then the output. "
        f"Right, {pre_name}: {_describe_half(pre[0], 'x')}; "
        f"then {_describe_half(pre[1], 'the first sum')}; then the output. "
        "Each feed-forward box widens a token's 384 numbers to 1536, applies GELU, "
        "and narrows them back to 384; each layer norm has its own learned weight and bias.",
    )


@figure("figures/06-gelu.svg")
def episode_6_gelu() -> str:
    import numpy as np

    from opbyop import gelu
    from opbyop.plot import line_chart, svg

    x = np.linspace(-4.0, 4.0, 801)  # steps of 0.01
    curves = {"GELU": gelu(x), "ReLU": np.maximum(x, 0.0)}
    drawing = line_chart(x, curves, title="GELU beside ReLU", x_label="input x", y_label="output")
    lowest = int(curves["GELU"].argmin())
    far = np.abs(curves["GELU"] - curves["ReLU"]) >= 0.01
    joins = x[np.flatnonzero(far).max() + 1]  # within 0.01 of ReLU from here on
    one = float(gelu(np.array([1.0]))[0])
    return svg(
        drawing,
        "Two curves for x from -4 to 4. ReLU, dashed, is 0 for every negative x "
        "and equals x for positive x, with a sharp corner at 0. GELU, solid, "
        "bends smoothly: it is near 0 far to the left, dips to "
        f"{curves['GELU'][lowest]:.2f} at x = {x[lowest]:.2f}, passes through 0 at 0, "
        f"runs below ReLU for positive x ({one:.2f} at x = 1), and is within 0.01 of "
        f"it from x = {joins:.1f} on.",
    )


# ---------------------------------------------------------------- episode 5


@figure("figures/05-positions.svg")
def episode_5_positions() -> str:
    import numpy as np

    from opbyop import minilm
    from opbyop.plot import similarity_heatmap, svg

    positions = minilm.load().embeddings.position[:128].astype(np.float64)
    unit = positions / np.linalg.norm(positions, axis=-1, keepdims=True)
    similarity = unit @ unit.T  # every pair's cosine
    neighbours = np.diagonal(similarity[1:, 1:], offset=1).mean()
    zero = similarity[0, 1:]
    drawing = similarity_heatmap(
        similarity,
        title="Position vectors 0 to 127: cosine similarity",
        value_range=None,  # from the lowest cosine to 1, for contrast
    )
    return svg(
        drawing,
        "A 128 by 128 grid: the cosine similarity of the position vectors 0 to "
        f"127 of all-MiniLM-L6-v2, from {similarity.min():.2f} to 1. A bright "
        "diagonal (each position with itself), and light and dark stripes "
        "parallel to it, all the way to the corners; neighbouring positions "
        f"average {neighbours:.2f}. Position 0, the first row and column, one "
        "cell wide, has no stripes: its cosine "
        f"with the others is only {zero.min():.2f} to {zero.max():.2f}.",
    )


# ---------------------------------------------------------------- episode 7

# The search figure: each query of the corpus (tests/data/minilm_sentences.json)
# against the sentence a person would pick for it, and the sentences the model
# put first instead or that share a word with the query. Short labels for the
# columns, full sentences here.
EPISODE_7_QUERIES = [
    "How do I reset my password?",
    "Is it going to rain tomorrow?",
    "cheap tickets for a trip to Paris",
    "a pet that purrs",
    "Where can I borrow money?",
    "healthy habits for a long life",
]
EPISODE_7_SENTENCES = {
    "login details": "Forgotten login details can be recovered from the account settings page.",
    "showers forecast": "The forecast says showers are expected later this week.",
    "tennis, rain": "The tennis final was postponed because of rain.",
    "budget airlines": "Budget airlines offer low fares to France in the spring.",
    "cats": "Cats make wonderful companions for people who live alone.",
    "puppy": "The puppy chewed through the garden hose.",
    "loan": "She took out a loan to buy her first house.",
    "savings account": "You can open a savings account online in a few minutes.",
    "exercise": "Regular exercise lowers the risk of heart disease.",
}
EPISODE_7_RANGE = (-0.2, 0.6)  # the colours' span: every cosine drawn fits


def episode_7_search_grid() -> Any:
    """Cosine of each query with each sentence: [6 queries, 9 sentences]."""
    from opbyop import minilm

    model = minilm.load()
    queries = model.encode(EPISODE_7_QUERIES)
    sentences = model.encode(list(EPISODE_7_SENTENCES.values()))
    return queries @ sentences.T


def _match_colour_bar(drawing: Any) -> None:
    """Give a wide grid's colour bar the grid's height, not the figure's."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    width, height = drawing.get_size_inches()
    drawing.set_size_inches(width, 0.75 * height)  # less empty space
    FigureCanvasAgg(drawing).draw()  # let the tight layout place both
    drawing.set_layout_engine("none")  # then keep what it placed
    grid_axes, bar_axes = drawing.axes
    grid_box, bar_box = grid_axes.get_position(), bar_axes.get_position()
    bar_axes.set_position([bar_box.x0, grid_box.y0, bar_box.width, grid_box.height])


@figure("figures/07-search.svg")
def episode_7_search() -> str:
    import numpy as np

    from opbyop.plot import attention_heatmap, svg

    grid = np.round(episode_7_search_grid(), 2) + 0.0  # no "-0.00" cell
    labels = list(EPISODE_7_SENTENCES)
    drawing = attention_heatmap(
        grid,
        EPISODE_7_QUERIES,
        labels,
        title="Search: cosine of each query with sentences of the corpus",
        value_range=EPISODE_7_RANGE,
        value_label="cosine similarity",
        row_axis="query",
        column_axis="sentence of the corpus",
    )
    _match_colour_bar(drawing)
    rows = []
    for query, row in zip(EPISODE_7_QUERIES, grid, strict=True):
        first, second = (int(j) for j in row.argsort()[::-1][:2])
        rows.append(
            f"{query!r}: brightest on {labels[first]} ({row[first]:.2f}), "
            f"then {labels[second]} ({row[second]:.2f})."
        )
    return svg(
        drawing,
        f"A grid of cosine similarities, {len(EPISODE_7_QUERIES)} queries by "
        f"{len(labels)} sentences of the corpus, colours from "
        f"{EPISODE_7_RANGE[0]} to {EPISODE_7_RANGE[1]}. " + " ".join(rows),
    )


# ---------------------------------------------------------------- episode 8

EPISODE_8_ROOT = Path(__file__).resolve().parents[1]  # the repository


def episode_8_ladder() -> dict[str, float]:
    """Bits per byte on the held-out text: counted here, or from the logs."""
    import json

    import numpy as np

    from opbyop import bigram, corpus, gpt

    train_text, held_out = corpus.load()
    byte_counts = np.bincount(np.frombuffer(train_text.encode(), np.uint8), minlength=256)
    unigram = np.tile((byte_counts + 1) / (byte_counts + 1).sum(), (256, 1))
    table = bigram.probabilities(bigram.counts(train_text))
    results = EPISODE_8_ROOT / "benchmarks" / "results" / "train_5min.json"
    five_minutes = json.loads(results.read_text(encoding="utf-8"))
    folder = gpt.load().folder
    assert folder is not None  # the shipped model always has its folder
    shipped = json.loads((folder / "log.json").read_text(encoding="utf-8"))
    return {
        "uniform": bigram.bits_per_byte(np.full((256, 256), 1 / 256), held_out),
        "unigram": bigram.bits_per_byte(unigram, held_out),
        "bigram": bigram.bits_per_byte(table, held_out),
        "GPT, 5 minutes": five_minutes["final"]["validation_bits_per_byte"],
        "GPT, shipped": shipped["final"]["validation_bits_per_byte"],
    }


def episode_8_ladder_alt(ladder: dict[str, float]) -> str:
    """The alt text: every rung, with its number (the page quotes it)."""
    rungs = ", ".join(f"{name} {bits:.2f}" for name, bits in ladder.items())
    return f"The loss ladder, in bits per byte on the held-out text: {rungs}."


@figure("figures/08-loss-ladder.svg")
def episode_8_loss_ladder() -> str:
    from opbyop.plot import bar_chart, svg

    ladder = episode_8_ladder()
    drawing = bar_chart(
        ladder,
        title="The loss ladder: bits per byte on the held-out files",
        value_label="bits per byte (lower is better)",
    )
    return svg(drawing, episode_8_ladder_alt(ladder))


# ---------------------------------------------------------------- episode 9

# The GPT the page checks by finite differences: 1,040 weights, made as the
# page makes them (the same seeds, in the same order).
EPISODE_9_EXPONENTS = list(range(1, 11))  # h = 1e-1 down to 1e-10


def episode_9_nudge_errors() -> dict[str, list[float]]:
    """The average error of a central difference, against the backward
    pass's gradient, for the final layer norm's 8 weights, at each h: in
    float64 and in float32."""
    import numpy as np

    from opbyop import cross_entropy, gpt

    config = gpt.Config(vocab_size=11, context=8, n_layers=1, n_heads=2, d_model=8)
    params = gpt.init(config, seed=0, dtype=np.float64)
    noise = np.random.default_rng(0)
    for array in _arrays(params):
        array += noise.normal(0, 0.3, array.shape)
    ids, targets = noise.integers(0, 11, (2, 2, 8))
    _, grads = gpt.loss_and_grads(params, ids, targets)
    exact = grads.final_norm.weight
    errors = {}
    for dtype in (np.float64, np.float32):
        tensors = {k: v.astype(dtype) for k, v in gpt.state_dict(params).items()}
        model = gpt.from_state_dict(tensors, config)
        weight = model.final_norm.weight
        curve = []
        for e in EPISODE_9_EXPONENTS:
            h = dtype(10.0**-e)
            slopes = []
            for i in range(weight.size):
                keep = weight[i]
                weight[i] = keep + h
                up = cross_entropy(gpt.forward(model, ids), targets)
                weight[i] = keep - h
                down = cross_entropy(gpt.forward(model, ids), targets)
                weight[i] = keep
                slopes.append((up - down) / (2 * float(h)))
            curve.append(float(np.abs(np.array(slopes) - exact).mean()))
        errors[np.dtype(dtype).name] = curve
    return errors


def _arrays(tree: Any) -> Any:
    """Every array of a gpt.Params, in order (as the page's ``arrays``)."""
    import numpy as np

    from opbyop import gpt

    if isinstance(tree, np.ndarray):
        yield tree
    elif not isinstance(tree, gpt.Config):
        for part in tree:
            yield from _arrays(part)


def episode_9_nudge_alt(errors: dict[str, list[float]]) -> str:
    """The alt text, from what every machine measures alike: where each
    curve starts and is lowest, which side of a bound its lowest lies, and
    float32's plateau (its slopes are 0 there: the whole gradient)."""
    parts = []
    for name, bound in [("float64", 1e-10), ("float32", 1e-6)]:
        curve = errors[name]
        best = min(range(len(curve)), key=curve.__getitem__)
        side = "under" if curve[best] < bound else "over"
        parts.append(
            f"{name} falls from {curve[0]:.0e} to its lowest, {side} {bound:.0e}, "
            f"at h = 1e-{EPISODE_9_EXPONENTS[best]}"
        )
    plateau = errors["float32"][-3:]
    if len(set(plateau)) == 1:
        parts[-1] += f", and from h = 1e-8 on stays at {plateau[0]:.0e}, the whole gradient"
    return (
        "Line chart, both axes in powers of ten: the average error of a central "
        "difference against the exact gradient, as h shrinks from 1e-1 to 1e-10. "
        + "; ".join(parts)
        + "."
    )


@figure("figures/09-nudge-error.svg")
def episode_9_nudge_error() -> str:
    from opbyop.plot import line_chart, svg

    errors = episode_9_nudge_errors()
    drawing = line_chart(
        [10.0**-e for e in EPISODE_9_EXPONENTS],
        errors,
        title="A central difference's error, as the nudge h shrinks",
        x_label="h, the nudge",
        y_label="average error against the exact gradient",
        log_scale=True,
    )
    drawing.axes[0].invert_xaxis()  # h shrinks from left to right
    drawing.axes[0].set_ylim(top=1.0)  # a tick, 1e0, above float32's plateau
    return svg(drawing, episode_9_nudge_alt(errors))


# ---------------------------------------------------------------- episode 10

EPISODE_10_LOGS = {
    "five-minutes": EPISODE_8_ROOT / "benchmarks" / "results" / "train_5min.json",
    "shipped": EPISODE_8_ROOT / "src" / "opbyop" / "data" / "model" / "log.json",
}


def episode_10_curves(name: str) -> tuple[list[int], dict[str, list[float]]]:
    """A run's curves in bits per byte, at its validation steps after step 0:
    the training loss (nats per byte, the mean logged nearest before each
    step, over ln 2) and the validation sample's bits per byte."""
    import json

    log = json.loads(EPISODE_10_LOGS[name].read_text(encoding="utf-8"))
    steps = [step for step, _, _ in log["validation"][1:]]
    trained = []
    for step in steps:
        logged = [loss for at, _, loss in log["train"] if at <= step]
        trained.append(round(logged[-1] / math.log(2), 2))
    checked = [round(bits, 2) for _, _, bits in log["validation"][1:]]
    return steps, {"training batches": trained, "validation sample": checked}


def episode_10_curves_alt(name: str, run: str) -> str:
    """The alt text: each curve's first and last point, with their steps."""
    steps, curves = episode_10_curves(name)
    ends = ", ".join(
        f"on the {curve} from {values[0]:.2f} to {values[-1]:.2f}"
        for curve, values in curves.items()
    )
    return (
        f"Line chart of bits per byte against steps for {run}, from step "
        f"{steps[0]:,} to step {steps[-1]:,}: {ends}."
    )


def _episode_10_curve_figure(name: str, run: str, title: str) -> str:
    from opbyop.plot import line_chart, svg

    steps, curves = episode_10_curves(name)
    drawing = line_chart(steps, curves, title=title, x_label="step", y_label="bits per byte")
    return svg(drawing, episode_10_curves_alt(name, run))


@figure("figures/10-five-minutes.svg")
def episode_10_five_minutes() -> str:
    return _episode_10_curve_figure(
        "five-minutes", "the recorded 5-minute run", "python -m opbyop.train --minutes 5"
    )


@figure("figures/10-shipped.svg")
def episode_10_shipped() -> str:
    return _episode_10_curve_figure(
        "shipped", "the shipped model's 10,000-step run", "The shipped model: 10,000 steps"
    )


EPISODE_10_SCHEDULE: dict[str, float] = {
    "max_lr": 3e-3,
    "min_lr": 3e-4,
    "warmup": 100,
    "total": 7543,
}


def episode_10_schedule_alt() -> str:
    from opbyop import optim

    s = EPISODE_10_SCHEDULE
    first, peak = optim.lr_schedule(0, **s), optim.lr_schedule(s["warmup"], **s)
    last = optim.lr_schedule(s["total"], **s)
    return (
        f"Line chart of fit's learning rate for a run of {s['total']:,} steps, "
        f"against the step: it rises from {first:.0e} at step 0 to {peak:.0e} at step "
        f"{s['warmup']}, then falls along half a cosine to {last:.0e} at step "
        f"{s['total']:,}."
    )


@figure("figures/10-schedule.svg")
def episode_10_schedule() -> str:
    from opbyop import optim
    from opbyop.plot import line_chart, svg

    steps = list(range(0, int(EPISODE_10_SCHEDULE["total"]) + 1, 10))
    rates = [optim.lr_schedule(step, **EPISODE_10_SCHEDULE) for step in steps]
    drawing = line_chart(
        steps,
        {"learning rate": rates},
        title="Warm-up, then cosine decay",
        x_label="step",
        y_label="learning rate",
    )
    return svg(drawing, episode_10_schedule_alt())


# ---------------------------------------------------------------- episode 11

EPISODE_11_RANKS = 16  # the likeliest bytes each distribution picture shows


def episode_11_distributions() -> dict[str, Any]:
    """The shipped model's guess after "def ", and after each knob: the
    probabilities of its likeliest bytes in the model's order, the share of
    the likeliest (``_``) and how many bytes stay possible."""
    import numpy as np

    from opbyop import gpt, sampling, softmax

    model = gpt.load()
    assert model.tokenizer is not None  # the shipped model has its tokenizer
    logits = gpt.forward(model.params, model.tokenizer.encode("def "))[-1]
    knobs = {
        "as the model gives it": logits,
        "temperature 0.5": sampling.temperature(logits, 0.5),
        "temperature 1.5": sampling.temperature(logits, 1.5),
        "top-k 5": sampling.top_k(logits, 5),
        "top-p 0.9": sampling.top_p(logits, 0.9),
        "min-p 0.1": sampling.min_p(logits, 0.1),
    }
    probabilities = {name: softmax(s.astype(np.float64)) for name, s in knobs.items()}
    order = np.argsort(-probabilities["as the model gives it"], kind="stable")
    return {
        "best": chr(int(order[0])),
        "curves": {name: p[order[:EPISODE_11_RANKS]].tolist() for name, p in probabilities.items()},
        "top": {name: float(p[order[0]]) for name, p in probabilities.items()},
        "possible": {name: int((p > 0).sum()) for name, p in probabilities.items()},
    }


def episode_11_alt(shown: dict[str, Any], names: list[str]) -> str:
    """The alt text: the likeliest byte's probability, and how many bytes
    stay possible, for each curve (the page states them)."""
    parts = [
        f"{name}: {shown['top'][name]:.2f}, {shown['possible'][name]} bytes possible"
        for name in names
    ]
    return (
        f"Line chart: the probabilities of the {EPISODE_11_RANKS} likeliest bytes "
        f"after 'def ', in order. The likeliest, {shown['best']}, has, " + "; ".join(parts) + "."
    )


def _episode_11_chart(names: list[str], title: str) -> str:
    from opbyop.plot import line_chart, svg

    shown = episode_11_distributions()
    drawing = line_chart(
        list(range(1, EPISODE_11_RANKS + 1)),
        {name: shown["curves"][name] for name in names},
        title=title,
        x_label="the model's likeliest bytes after 'def ', in order",
        y_label="probability",
    )
    drawing.axes[0].set_xlim(0.5, EPISODE_11_RANKS + 0.5)
    return svg(drawing, episode_11_alt(shown, names))


EPISODE_11_TEMPERATURES = ["as the model gives it", "temperature 0.5", "temperature 1.5"]
EPISODE_11_CUTS = ["as the model gives it", "top-k 5", "top-p 0.9", "min-p 0.1"]


@figure("figures/11-temperature.svg")
def episode_11_temperature() -> str:
    return _episode_11_chart(EPISODE_11_TEMPERATURES, "One guess, at three temperatures")


@figure("figures/11-cuts.svg")
def episode_11_cuts() -> str:
    return _episode_11_chart(EPISODE_11_CUTS, "One guess, cut three ways")


EPISODE_11_BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def episode_11_step_times() -> dict[str, dict[str, float]]:
    """Milliseconds per step by length, from the recorded benchmark."""
    import json

    run = json.loads((EPISODE_11_BENCHMARK / "generate.json").read_text(encoding="utf-8"))
    steps: dict[str, dict[str, float]] = run["result"]["step_ms_by_length"]
    return steps


def episode_11_cache_alt(steps: dict[str, dict[str, float]]) -> str:
    """The alt text: both curves' ends and the cached curve's range."""
    lengths = list(steps)
    cached = [steps[n]["cached"] for n in lengths]
    again = [steps[n]["recomputed"] for n in lengths]
    return (
        "Line chart: milliseconds per new byte against the bytes of text so far, "
        f"from {lengths[0]} to {lengths[-1]}. With the cache, between "
        f"{min(cached):.1f} and {max(cached):.1f} ms at every length; running "
        f"the whole text again, from {again[0]:.1f} ms to {again[-1]:.1f} ms."
    )


@figure("figures/11-cache.svg")
def episode_11_cache() -> str:
    from opbyop.plot import line_chart, svg

    steps = episode_11_step_times()
    drawing = line_chart(
        [int(n) for n in steps],
        {
            "with the cache": [row["cached"] for row in steps.values()],
            "running the whole text again": [row["recomputed"] for row in steps.values()],
        },
        title="The time per new byte, as the text grows",
        x_label="bytes of text so far",
        y_label="milliseconds per new byte",
    )
    drawing.axes[0].set_xlim(left=0)
    drawing.axes[0].set_ylim(bottom=0)
    return svg(drawing, episode_11_cache_alt(steps))


# ---------------------------------------------------------------- episode 12

EPISODE_12_RUNS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "equal_time.json"


def episode_12_curves() -> tuple[list[float], dict[str, list[float]]]:
    """The equal-time vocabulary runs: bits per byte on the validation sample
    against minutes on the recorded machine (a run's step times its step-time
    ratio, at the 5-minute run's pace), each vocabulary the mean of its seeds,
    after step 0. Every run validates at the same fractions of its steps, so
    the k-th points of all runs fall at the same minutes (checked)."""
    import json

    recorded = json.loads(EPISODE_12_RUNS.read_text(encoding="utf-8"))
    ratios = recorded["step_times"]["vocabulary"]["ratios"]
    base_steps = recorded["base"]["steps"]
    runs = [run for run in recorded["runs"] if run["comparison"] == "vocabulary"]

    def minutes(run: dict[str, Any]) -> list[float]:
        pace = 5 * ratios[run["name"]] / base_steps  # minutes per step
        return [step * pace for step, _, _ in run["validation_curve"][1:]]

    shown = [round(m, 2) for m in minutes(runs[0])]  # step 0 is 8 bits, untrained
    curves = {}
    for name in ratios:
        seeds = [run for run in runs if run["name"] == name]
        for run in seeds:
            if any(abs(a - b) > 0.01 for a, b in zip(minutes(run), shown, strict=True)):
                raise ValueError(f"run {name} seed {run['seed']} validates at other times")
        points = zip(*(run["validation_curve"][1:] for run in seeds), strict=True)
        mean = [sum(bits for _, _, bits in point) / len(seeds) for point in points]
        curves[f"vocab_size {int(name):,}"] = [round(bits, 2) for bits in mean]
    return shown, curves


def episode_12_alt(curves: dict[str, list[float]], shown: list[float]) -> str:
    """The alt text: each curve's first and last point."""
    ends = "; ".join(
        f"{name}, from {values[0]:.2f} to {values[-1]:.2f}" for name, values in curves.items()
    )
    return (
        "Line chart: bits per byte on the validation sample against minutes of "
        f"training, from {shown[0]:.1f} to {shown[-1]:.1f} minutes, the mean of two "
        f"seeds for each vocabulary: {ends}."
    )


@figure("figures/12-equal-time.svg")
def episode_12_equal_time() -> str:
    from opbyop.plot import line_chart, svg

    shown, curves = episode_12_curves()
    drawing = line_chart(
        shown,
        curves,
        title="The tiny GPT at equal time, three vocabularies",
        x_label="minutes of training (the recorded machine's pace)",
        y_label="bits per byte, validation sample",
    )
    return svg(drawing, episode_12_alt(curves, shown))


# ---------------------------------------------------------------- episode 13


def episode_13_silu_alt() -> str:
    """The alt text: where each curve is lowest, and both at x = 1."""
    import numpy as np

    from opbyop import gelu, silu

    x = np.linspace(-4.0, 4.0, 801)  # steps of 0.01
    parts = []
    for name, y in [("SiLU", silu(x)), ("GELU", gelu(x, approximate="tanh"))]:
        low = int(y.argmin())
        one = float(y[500])  # x = 1
        parts.append(f"{name} dips to {y[low]:.2f} at x = {x[low]:.2f} and is {one:.2f} at x = 1")
    return (
        "Two curves for x from -4 to 4, both near 0 far to the left and near x far "
        f"to the right: {'; '.join(parts)}."
    )


@figure("figures/13-silu.svg")
def episode_13_silu() -> str:
    import numpy as np

    from opbyop import gelu, silu
    from opbyop.plot import line_chart, svg

    x = np.linspace(-4.0, 4.0, 801)
    drawing = line_chart(
        x,
        {"SiLU, x sigmoid(x)": silu(x), "GELU, GPT-2's tanh form": gelu(x, approximate="tanh")},
        title="SiLU beside GELU",
        x_label="input x",
        y_label="output",
    )
    return svg(drawing, episode_13_silu_alt())


EPISODE_13_RESULTS = EPISODE_8_ROOT / "benchmarks" / "results" / "equal_time.json"
EPISODE_13_NAMES = ["GPT-2", "RMSNorm", "SwiGLU", "rotary", "all three"]


def episode_13_runs() -> dict[str, list[float]]:
    """Each variant's bits per byte on all the held-out files, seed 0 first,
    from the recorded equal-time comparison."""
    import json

    recorded = json.loads(EPISODE_13_RESULTS.read_text(encoding="utf-8"))
    runs = [run for run in recorded["runs"] if run["comparison"] == "modern"]
    return {
        name: [
            run["validation_bits_per_byte"]
            for run in sorted(runs, key=lambda run: run["seed"])
            if run["name"] == name
        ]
        for name in EPISODE_13_NAMES
    }


def episode_13_alt(runs: dict[str, list[float]]) -> str:
    """The alt text: every dot, and each row's mean (the page states them)."""
    rows = "; ".join(
        f"{name}: {' and '.join(f'{bits:.3f}' for bits in values)}, "
        f"mean {sum(values) / len(values):.3f}"
        for name, values in runs.items()
    )
    return (
        "Dot chart: the tiny GPT with each swap, at equal training time, in bits "
        f"per byte on the held-out files; one dot per seed, a line between them. {rows}."
    )


@figure("figures/13-equal-time.svg")
def episode_13_equal_time() -> str:
    from opbyop.plot import spread_chart, svg

    runs = episode_13_runs()
    drawing = spread_chart(
        runs,
        title="Each swap at equal training time, two seeds each",
        value_label="bits per byte, all held-out files (lower is better)",
    )
    return svg(drawing, episode_13_alt(runs))


# ---------------------------------------------------------------- performance

SWEEP = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "sweep.json"


def sweep_curves() -> tuple[list[float], dict[str, list[float]]]:
    """The sweep's 5-minute runs, best first: bits per byte on the validation
    sample against minutes, each run's curve read at the first run's times."""
    import json

    import numpy as np

    runs = json.loads(SWEEP.read_text(encoding="utf-8"))["runs"]
    confirmed = sorted(
        (run for run in runs if run["phase"] == "confirm"),
        key=lambda run: run["validation_bits_per_byte"],
    )[:4]
    # From the first minute on: the untrained 8 bits would flatten the rest.
    minutes = [t / 60 for _, t, _ in confirmed[0]["validation_curve"] if t >= 60]
    curves = {}
    for run in confirmed:
        curve = np.array(run["validation_curve"])
        name = f"{run['name']} ({run['parameters'] / 1e6:.2f} M)"
        curves[name] = np.interp(minutes, curve[:, 1] / 60, curve[:, 2]).round(2).tolist()
    return minutes, curves


def sweep_alt(curves: dict[str, list[float]]) -> str:
    """The alt text: each run's curve from its first point to its last."""
    ends = "; ".join(
        f"{name}, from {values[0]:.2f} to {values[-1]:.2f}" for name, values in curves.items()
    )
    return (
        "Line chart: bits per byte on the validation sample against minutes of "
        f"training, from 1 to 5 minutes, for the sweep's 5-minute runs: {ends}."
    )


@figure("figures/performance-sweep.svg")
def performance_sweep() -> str:
    from opbyop.plot import line_chart, svg

    minutes, curves = sweep_curves()
    drawing = line_chart(
        minutes,
        curves,
        title="Five minutes of training, one setting changed each",
        x_label="minutes of training",
        y_label="bits per byte, validation sample",
    )
    return svg(drawing, sweep_alt(curves))
