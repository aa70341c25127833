"""Training a GPT on text: random windows, AdamW on a schedule, a log.

`fit` is the whole loop, as a function: pick random windows of the text,
measure the loss and its gradients (`opbyop.gpt.loss_and_grads`), clip
them, and take an AdamW step at the learning rate of the schedule
(`opbyop.optim`). Every so often it measures bits per byte on a fixed part
of the held-out text, and at the end on all of it (`evaluate`).

From a terminal, ``python -m opbyop.train`` runs `fit` on the corpus
(`opbyop.corpus`) with a progress bar, and writes a folder that
``transformers`` loads (`opbyop.gpt.save`), with ``log.json`` beside:

.. code-block:: text

    python -m opbyop.train --minutes 5 --out runs/first
    python -m opbyop.train --steps 2000 --seed 1 --out runs/repeatable
    python -m opbyop.train --resume runs/first

``--minutes`` runs the schedule on wall-clock time, so the run fits the
reader's machine; ``--steps`` counts steps, so a run repeats exactly.
Ctrl-C stops at the end of the step and saves a checkpoint that
``--resume`` continues.

The text is read as bytes (a vocabulary of 256) unless a tokenizer with
merges is given (`opbyop.bpe`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from tqdm import tqdm

from . import corpus, gpt, optim
from ._threads import blas_controller, usable_cores
from .bpe import BytePairs

__all__ = [
    "DEFAULT_CONFIG",
    "Recipe",
    "TrainingDiverged",
    "batch_of_windows",
    "evaluate",
    "fit",
    "main",
    "resume",
    "validation_sample",
]

Array = NDArray[Any]

#: The model `python -m opbyop.train` trains: 2 layers, 64 wide (0.12 M
#: parameters), a context of 128. ``benchmarks/sweep.py`` chose it: in 5
#: minutes on 2 cores it takes about 3 times the steps of nanoGPT's CPU size
#: (4 layers of 128), and ends lower on the held-out files.
DEFAULT_CONFIG = gpt.Config(
    vocab_size=256, context=128, n_layers=2, n_heads=4, d_model=64
)


@dataclass(frozen=True)
class Recipe:
    """How to train: the batch, the schedule and the optimiser's settings.

    The defaults take nanoGPT's character-level settings for AdamW's beta2
    (0.99), the weight decay (0.1), the warm-up (100 steps) and clipping
    (1.0), with 8 windows a step and a peak learning rate of 3e-3.
    ``benchmarks/sweep.py`` screened a batch of 4 and 16 and peak rates of
    1e-3 and 6e-3 against them, for a minute each: none did better.
    """

    batch: int = 8  # windows per step
    lr: float = 3e-3  # the peak learning rate
    min_lr: float = 3e-4  # where the cosine ends
    warmup: int = 100  # steps of linear warm-up
    weight_decay: float = 0.1  # on matrices only
    beta2: float = 0.99
    clip: float = 1.0  # the largest gradient norm


class TrainingDiverged(ValueError):
    """The loss or the gradient norm stopped being a finite number."""


# ------------------------------------------------------------------- data
def tokens_of(tokenizer: BytePairs | None, text: str) -> Array:
    """`text` as token ids: its UTF-8 bytes, or `tokenizer`'s ids."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if tokenizer is None or tokenizer.vocab_size == 256:
        return np.frombuffer(text.encode("utf-8"), np.uint8).astype(np.intp)
    return np.asarray(tokenizer.encode(text), np.intp)


# --8<-- [start:batch_of_windows]
def batch_of_windows(
    tokens: Array, batch: int, context: int, rng: np.random.Generator
) -> tuple[Array, Array]:
    """`batch` random windows of `context` tokens, and their targets.

    Each window's targets are the same window moved one token on, so one
    window gives `context` predictions at once (the causal mask keeps each
    position from seeing its answer).
    """
    starts = rng.integers(0, len(tokens) - context, size=batch)
    windows = tokens[starts[:, None] + np.arange(context + 1)]
    return windows[:, :-1], windows[:, 1:]


# --8<-- [end:batch_of_windows]


def validation_sample(text: str, pieces: int = 8, size: int = 1024) -> str:
    """A fixed part of `text` to validate on while training: fast, spread.

    `pieces` runs of about `size` characters, taken at evenly spaced
    places and cut at line ends, joined in order. The whole text is
    measured only at the end (`evaluate` on all of it takes seconds).
    """
    if len(text) <= pieces * size:
        return text
    chunks = []
    for i in range(pieces):
        start = text.find("\n", i * len(text) // pieces) + 1
        end = text.find("\n", start + size) + 1 or len(text)
        chunks.append(text[start:end])
    return "".join(chunks)


# ------------------------------------------------------------- evaluation
def evaluate(
    params: gpt.Params,
    tokenizer: BytePairs | None,
    text: str,
    *,
    stride: int | None = None,
) -> float:
    """Bits per byte: how well the model predicts `text`, token by token.

    The text is encoded once. Windows of ``context`` tokens start every
    `stride` tokens (default: ``context``, windows side by side); each
    token after the first is predicted once, by the first window that
    reaches it. The total cross-entropy in bits is divided by the text's
    UTF-8 bytes, so models with different tokenizers compare fairly.

    Parameters
    ----------
    params : gpt.Params
    tokenizer : opbyop.bpe.BytePairs or None
        None reads the text as bytes (a vocabulary of 256).
    text : str
        At least two tokens long.
    stride : int, optional
        From 1 to ``context``; a smaller stride gives each prediction more
        text before it, and costs more.

    Returns
    -------
    float
    """
    config = params.config
    context = config.context
    stride = context if stride is None else stride
    if isinstance(stride, bool) or not isinstance(stride, int):
        raise TypeError(f"stride must be an int, got {stride!r}")
    if not 1 <= stride <= context:
        raise ValueError(f"stride must be in [1, {context}], got {stride}")
    tokens = tokens_of(tokenizer, text)
    if len(tokens) < 2:
        raise ValueError("text must be at least two tokens long")
    rows = max(1, min(16, 2**22 // (context * config.vocab_size)))
    nats = 0.0
    for ids, targets, first in _windows(tokens, context, stride, rows):
        logits = gpt.forward(params, ids).astype(np.float64)
        logits -= logits.max(axis=-1, keepdims=True)
        log_norm = np.log(np.exp(logits).sum(axis=-1))
        picked = np.take_along_axis(logits, targets[..., None], -1)[..., 0]
        nats += float((log_norm - picked)[:, first:].sum())
    return nats / math.log(2) / len(text.encode("utf-8"))


def _windows(
    tokens: Array, context: int, stride: int, rows: int = 16
) -> Iterator[tuple[Array, Array, int]]:
    """Batches of windows: their ids, targets, and where the new part starts.

    The window at ``s`` predicts positions ``s + 1`` to ``s + context``;
    only those no window before it reached count. Windows of the same
    length and the same new part come up to `rows` at a time.
    """
    last = len(tokens) - 1  # the last position to predict
    plan = []  # (start, end, first new target index)
    start, done = 0, 0
    while done < last:
        end = min(start + context, last)
        plan.append((start, end, done - start))
        start, done = start + stride, end
    i = 0
    while i < len(plan):
        s0, e0, f0 = plan[i]
        group = [s0]
        i += 1
        while i < len(plan) and len(group) < rows:
            s, e, f = plan[i]
            if e - s != e0 - s0 or f != f0:
                break
            group.append(s)
            i += 1
        windows = tokens[np.add.outer(group, np.arange(e0 - s0 + 1))]
        yield windows[:, :-1], windows[:, 1:], f0


# ------------------------------------------------------------------- loop
@dataclass
class _Run:
    """What a checkpoint holds: enough to go on as if never stopped."""

    params: gpt.Params
    optimizer: optim.AdamW
    rng: np.random.Generator
    tokenizer: BytePairs
    recipe: Recipe
    log: dict[str, Any]

    @property
    def step(self) -> int:
        return self.optimizer.steps


def fit(
    config: gpt.Config,
    train_text: str,
    validation_text: str,
    *,
    steps: int | None = None,
    minutes: float | None = None,
    seed: int = 0,
    tokenizer: BytePairs | None = None,
    out: str | Path | None = None,
    progress: bool = True,
    **recipe: Any,
) -> tuple[gpt.Params, dict[str, Any]]:
    """Train a new GPT on `train_text`; return its parameters and the log.

    Parameters
    ----------
    config : gpt.Config
        The model's sizes; ``vocab_size`` is 256 unless `tokenizer` has
        merges.
    train_text, validation_text : str
        The text to learn from, and held-out text to measure on.
    steps, minutes : optional
        How long to train: exactly one of them. ``steps`` repeats exactly
        (with the same `seed`, machine and library); ``minutes`` runs the
        schedule on the clock, estimating the steps that fit.
    seed : int
        Seeds the initial weights and the windows drawn.
    tokenizer : opbyop.bpe.BytePairs, optional
        Default: bytes (``BytePairs.train("", 256)``).
    out : str or pathlib.Path, optional
        A folder for checkpoints (`opbyop.gpt.save`, with the tokenizer,
        ``log.json`` and the optimiser's state), written at every
        validation and at the end; `resume` goes on from it.
    progress : bool
        Show a progress bar.
    **recipe
        `Recipe`'s fields: ``batch``, ``lr``, ``min_lr``, ``warmup``,
        ``weight_decay``, ``beta2``, ``clip``.

    Returns
    -------
    params : gpt.Params
    log : dict
        The curves (``train``: step, seconds, mean loss in nats;
        ``validation``: step, seconds, bits per byte on
        `validation_sample`), samples, the final figures (``final``) and
        the machine. It is what ``log.json`` holds.

    Raises
    ------
    TrainingDiverged
        If the loss or the gradients stop being finite (for example with
        a learning rate too high): the message gives the step, the
        learning rate and the gradient norm.
    """
    tokenizer = BytePairs.train("", 256) if tokenizer is None else tokenizer
    if not isinstance(tokenizer, BytePairs):
        raise TypeError(f"tokenizer must be a BytePairs, got {tokenizer!r}")
    if tokenizer.vocab_size != config.vocab_size:
        raise ValueError(
            f"the tokenizer has {tokenizer.vocab_size} tokens, and "
            f"config.vocab_size is {config.vocab_size}: they must agree"
        )
    budget = _budget(steps, minutes)
    try:
        checked = Recipe(**recipe)
    except TypeError as error:
        names = ", ".join(f.name for f in fields(Recipe))
        raise TypeError(f"{error}; the recipe's fields are {names}") from None
    params = gpt.init(config, seed=seed)
    run = _Run(
        params=params,
        optimizer=_adamw(params, checked),
        rng=np.random.default_rng(seed),
        tokenizer=tokenizer,
        recipe=checked,
        log=_new_log(config, checked, budget, seed, tokenizer),
    )
    return _train(run, train_text, validation_text, out, progress)


def resume(
    folder: str | Path,
    train_text: str,
    validation_text: str,
    *,
    progress: bool = True,
) -> tuple[gpt.Params, dict[str, Any]]:
    """Go on with the run whose checkpoint is in `folder`, to its end.

    The same texts must be given. The result is the run's as if it had
    never stopped (in steps; a run on the clock gets the minutes it had
    left).
    """
    path = Path(folder)
    if not (path / "log.json").is_file():
        raise FileNotFoundError(
            f"{path} holds no log.json: it is not a folder that "
            "`python -m opbyop.train` wrote"
        )
    log = json.loads((path / "log.json").read_text(encoding="utf-8"))
    if log["status"] == "finished":
        raise ValueError(f"the run in {path} has already finished")
    model = gpt.load(path)
    assert model.tokenizer is not None, "fit saves the tokenizer"
    recipe = Recipe(**log["recipe"])
    optimizer = _adamw(model.params, recipe)
    with np.load(path / "optimizer.npz") as state:
        for key in optimizer.params:
            optimizer.exp_avg[key][...] = state[f"exp_avg/{key}"]
            optimizer.exp_avg_sq[key][...] = state[f"exp_avg_sq/{key}"]
        optimizer.steps = int(state["steps"])
    rng = np.random.default_rng()
    rng.bit_generator.state = log["resume"]["rng"]
    run = _Run(model.params, optimizer, rng, model.tokenizer, recipe, log)
    return _train(run, train_text, validation_text, path, progress)


def _budget(steps: object, minutes: object) -> dict[str, Any]:
    """``{"steps": n, "minutes": None}`` or the other way round, checked."""
    if (steps is None) == (minutes is None):
        raise ValueError("give exactly one of steps and minutes")
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, int):
            raise TypeError(f"steps must be an int, got {steps!r}")
        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        return {"steps": steps, "minutes": None}
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)):
        raise TypeError(f"minutes must be a number, got {minutes!r}")
    if not 0 < minutes < math.inf:
        raise ValueError(f"minutes must be more than 0, got {minutes}")
    return {"steps": None, "minutes": float(minutes)}


def _adamw(params: gpt.Params, recipe: Recipe) -> optim.AdamW:
    return optim.AdamW(
        params,
        lr=recipe.lr,
        betas=(0.9, recipe.beta2),
        weight_decay=recipe.weight_decay,
    )


def _new_log(
    config: gpt.Config,
    recipe: Recipe,
    budget: dict[str, Any],
    seed: int,
    tokenizer: BytePairs,
) -> dict[str, Any]:
    return {
        "config": config._asdict(),
        "parameters": sum(
            a.size for a in optim.named_arrays(gpt.init(config)).values()
        ),
        "recipe": asdict(recipe),
        "budget": budget,
        "seed": seed,
        "vocab_size": tokenizer.vocab_size,
        "machine": _machine(),
        "train": [],  # [step, seconds, mean loss in nats since the last]
        "validation": [],  # [step, seconds, bits per byte on the sample]
        "samples": [],  # {"step", "prompt", "text"}
        "final": None,
        "status": "running",
    }


def _machine() -> dict[str, Any]:
    """Where the run ran: what its speed depends on."""
    blas = [
        {k: info.get(k) for k in ("internal_api", "version", "num_threads")}
        for info in blas_controller().info()
    ]
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "system": f"{platform.system()} {platform.machine()}",
        "cores": usable_cores(),
        "blas": blas,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "load_before": _load(),
    }


def _load() -> list[float] | None:
    """The 1, 5 and 15-minute load averages, where the system has them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


SAMPLE_PROMPT = "def "
VALIDATIONS = 10  # per run, on the validation sample
TRAIN_POINTS = 200  # per run, on the train curve


# --8<-- [start:loop]
def _train(
    run: _Run,
    train_text: str,
    validation_text: str,
    out: str | Path | None,
    progress: bool,
) -> tuple[gpt.Params, dict[str, Any]]:
    """The loop: draw a batch, loss and gradients, clip, step; measure."""
    config, recipe, log = run.params.config, run.recipe, run.log
    tokens = tokens_of(run.tokenizer, train_text)
    if len(tokens) <= config.context:
        raise ValueError(
            f"train_text has {len(tokens)} tokens: it needs more than the "
            f"context ({config.context})"
        )
    sample = validation_sample(validation_text)
    clock = _Clock(log["budget"], run.step, log.get("seconds", 0.0))
    bar = tqdm(
        total=round(clock.total_steps(run.step, recipe.warmup)),
        initial=run.step,
        unit="step",
        disable=not progress,
        dynamic_ncols=True,
    )
    losses: list[float] = []
    spent = _Spent(log.setdefault("spent", {}))
    with bar, _ctrl_c() as stop:
        if run.step == 0:
            _validate(run, sample, clock, out)
        while not clock.done(run.step) and not stop.requested:
            total = clock.total_steps(run.step, recipe.warmup)
            run.optimizer.lr = optim.lr_schedule(
                run.step,
                max_lr=recipe.lr,
                min_lr=recipe.min_lr,
                warmup=clock.warmup(recipe.warmup),
                total=total,
            )
            with spent("sampling"):
                ids, targets = batch_of_windows(
                    tokens, recipe.batch, config.context, run.rng
                )
            with spent("step"):
                loss, grads = gpt.loss_and_grads(run.params, ids, targets)
                norm = optim.clip_grad_norm(grads, recipe.clip)
                if not (math.isfinite(loss) and math.isfinite(norm)):
                    raise TrainingDiverged(_diverged(run, loss, norm))
                run.optimizer.step(grads)
            with spent("logging"):
                losses.append(loss)
                if clock.passed(run.step, TRAIN_POINTS):
                    log["train"].append(
                        [run.step, clock.seconds(), float(np.mean(losses))]
                    )
                    losses = []
                bar.total = round(total)
                bar.set_postfix(_shown(log, loss), refresh=False)
                bar.update()
            if clock.passed(run.step, VALIDATIONS):
                with spent("validation"):
                    _validate(run, sample, clock, out)
    log["status"] = "stopped" if stop.requested else "finished"
    if not stop.requested:
        _finish(run, validation_text, clock)
    _checkpoint(run, clock, out)
    return run.params, log


# --8<-- [end:loop]


class _Spent:
    """Seconds spent on each part of the loop, added up in `totals`."""

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals = totals

    @contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            self.totals[part] = self.totals.get(part, 0.0) + seconds


class _Clock:
    """How far along the run is: in steps, or in seconds on the clock."""

    def __init__(self, budget: dict[str, Any], step: int, seconds: float):
        self.steps = budget["steps"]
        minutes = budget["minutes"]
        self.limit = None if minutes is None else minutes * 60
        self.start = time.perf_counter() - seconds  # seconds already run
        self.marks: dict[int, int] = {}
        self.first = self.fraction(step)

    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 3)

    def fraction(self, step: int) -> float:
        """How much of the run is done, from 0 to 1."""
        if self.limit is None:
            return step / self.steps
        return self.seconds() / self.limit

    def done(self, step: int) -> bool:
        return self.fraction(step) >= 1

    def total_steps(self, step: int, warmup: int) -> float:
        """The step where the schedule ends: given, or estimated.

        On the clock, the estimate is the steps per second so far times the
        time allowed; it settles during the warm-up, which is in steps.
        """
        if self.limit is None:
            return float(self.steps)
        rate = step / self.seconds() if step else 0.0  # steps per second
        return max(rate * self.limit, step + 1.0, warmup + 1.0)

    def warmup(self, warmup: int) -> float:
        """The warm-up in steps: a tenth of a run shorter than ten of them."""
        if self.limit is None:
            return min(warmup, self.steps / 10)
        return warmup

    def passed(self, step: int, points: int) -> bool:
        """Whether this step crossed one of `points` evenly spaced marks."""
        mark = math.floor(self.fraction(step) * points + 1e-9)
        last = self.marks.get(points, math.floor(self.first * points + 1e-9))
        self.marks[points] = mark
        return mark > last


class _Stop:
    requested = False


@contextmanager
def _ctrl_c() -> Iterator[_Stop]:
    """Ctrl-C asks the loop to stop after its step; a second one stops now.

    Only the main thread can catch signals; elsewhere Ctrl-C acts as usual.
    """
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def ask(signum: int, frame: object) -> None:
        stop.requested = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, ask)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _validate(
    run: _Run, sample: str, clock: _Clock, out: str | Path | None
) -> None:
    """Bits per byte on the validation sample, a sample of text, a save."""
    bits = evaluate(run.params, run.tokenizer, sample)
    run.log["validation"].append([run.step, clock.seconds(), round(bits, 5)])
    run.log["samples"].append(
        {
            "step": run.step,
            "prompt": SAMPLE_PROMPT,
            "text": _write(run, SAMPLE_PROMPT, 60),
        }
    )
    _checkpoint(run, clock, out)


def _write(run: _Run, prompt: str, new: int) -> str:
    """What the model writes after `prompt`: sampled, seeded, repeatable."""
    model = gpt.Model(run.params, tokenizer=run.tokenizer)
    room = run.params.config.context - len(run.tokenizer.encode(prompt))
    return model.write(prompt, min(new, room), do_sample=True, seed=0)


def _shown(log: dict[str, Any], loss: float) -> dict[str, str]:
    """The progress bar's figures: this step's loss, the last validation."""
    shown = {"loss": f"{loss:.3f}"}
    if log["validation"]:
        shown["val bits/byte"] = f"{log['validation'][-1][2]:.3f}"
    return shown


def _diverged(run: _Run, loss: float, norm: float) -> str:
    return (
        f"training stopped at step {run.step + 1}: the loss is {loss} and "
        f"the gradient norm {norm} (learning rate {run.optimizer.lr:.3g}). "
        "A learning rate too high is the usual cause: try a lower --lr."
    )


def _finish(run: _Run, validation_text: str, clock: _Clock) -> None:
    """The final figures: all the held-out text, and samples."""
    log = run.log
    seconds = clock.seconds()
    full = evaluate(run.params, run.tokenizer, validation_text)
    sample = evaluate(
        run.params, run.tokenizer, validation_sample(validation_text)
    )
    log["final"] = {
        "step": run.step,
        "seconds": seconds,
        "validation_bits_per_byte": round(full, 5),
        "validation_sample_bits_per_byte": round(sample, 5),
        "validation_bytes": len(validation_text.encode("utf-8")),
    }
    for prompt in ("def ", "class ", "import "):
        log["samples"].append(
            {
                "step": run.step,
                "prompt": prompt,
                "text": _write(run, prompt, 200),
            }
        )
    log["machine"]["load_after"] = _load()


def _checkpoint(run: _Run, clock: _Clock, out: str | Path | None) -> None:
    """The model, the tokenizer, the log and the optimiser's state."""
    if out is None:
        return
    folder = gpt.save(run.params, out, tokenizer=run.tokenizer)
    state = {"steps": np.array(run.optimizer.steps)}
    for key in run.optimizer.params:
        state[f"exp_avg/{key}"] = run.optimizer.exp_avg[key]
        state[f"exp_avg_sq/{key}"] = run.optimizer.exp_avg_sq[key]
    np.savez(folder / "optimizer.npz", **state)  # type: ignore[arg-type]
    run.log["step"] = run.step
    run.log["seconds"] = clock.seconds()
    run.log["resume"] = {"rng": run.rng.bit_generator.state}
    text = json.dumps(run.log, indent=1) + "\n"
    (folder / "log.json").write_text(text, encoding="utf-8")


# ---------------------------------------------------------- the command
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m opbyop.train``: train on the corpus, write a folder."""
    parser = _parser()
    args = parser.parse_args(argv)
    chosen = [k for k, v in vars(args).items() if v is not None]
    if args.resume is not None and chosen != ["resume"]:
        other = next(k for k in chosen if k != "resume").replace("_", "-")
        parser.error(
            "--resume goes on with the saved run's own settings: give it "
            f"alone (not with --{other})"
        )
    train_text, validation_text = corpus.load()
    try:
        if args.resume is not None:
            out = Path(args.resume)
            _, log = resume(out, train_text, validation_text)
        else:
            out = Path(args.out or time.strftime("runs/%Y-%m-%d-%H%M%S"))
            config = DEFAULT_CONFIG._replace(
                **{
                    k: getattr(args, k)
                    for k in gpt.Config._fields[1:]  # all but the vocabulary
                    if getattr(args, k) is not None
                },
            )
            recipe = {
                f.name: getattr(args, f.name)
                for f in fields(Recipe)
                if getattr(args, f.name) is not None
            }
            minutes = args.minutes
            if args.steps is None and minutes is None:
                minutes = 5.0
            _, log = fit(
                config,
                train_text,
                validation_text,
                steps=args.steps,
                minutes=minutes,
                seed=args.seed or 0,
                out=out,
                **recipe,
            )
    except TrainingDiverged as error:
        print(f"\n{error}", file=sys.stderr)
        return 1
    if log["status"] == "stopped":
        print(
            f"\nStopped at step {log['step']}; the checkpoint is in "
            f"{out}. Go on with: python -m opbyop.train --resume {out}"
        )
        return 130
    final = log["final"]
    print(
        f"\n{final['step']:,} steps in {final['seconds'] / 60:.1f} minutes: "
        f"{final['validation_bits_per_byte']:.3f} bits per byte on the "
        f"{final['validation_bytes']:,} held-out bytes.\n"
        f"Saved to {out} ({_who_loads(log)}).\n\n"
        f"It writes, after {log['samples'][-3]['prompt']!r}:\n"
        f"{log['samples'][-3]['prompt']}{log['samples'][-3]['text']}"
    )
    return 0


def _who_loads(log: dict[str, Any]) -> str:
    """Which libraries load the saved folder: a swapped piece is ours only."""
    if gpt.is_variant(gpt.Config(**log["config"])):
        return "gpt.load reads it; transformers refuses its model type"
    return "transformers loads it too"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m opbyop.train",
        description="Train a GPT on the Python standard library's source.",
    )
    length = parser.add_mutually_exclusive_group()
    length.add_argument(
        "--minutes", type=float, help="train for this long (default 5)"
    )
    length.add_argument(
        "--steps", type=int, help="train for this many steps (repeatable)"
    )
    length.add_argument(
        "--resume", metavar="DIR", help="go on with the run saved in DIR"
    )
    parser.add_argument("--seed", type=int, help="default 0")
    parser.add_argument(
        "--out", metavar="DIR", help="default: runs/ and the time"
    )
    model = parser.add_argument_group(
        "the model", f"default: {DEFAULT_CONFIG}"
    )
    for name in ("context", "n_layers", "n_heads", "d_model"):
        model.add_argument("--" + name.replace("_", "-"), type=int)
    pieces = parser.add_argument_group(
        "the pieces", "default: GPT-2's; episode 13 swaps them"
    )
    pieces.add_argument("--norm", choices=("layer", "rms"))
    pieces.add_argument("--mlp", choices=("gelu", "swiglu"))
    pieces.add_argument("--positions", choices=("learned", "rotary"))
    recipe = parser.add_argument_group("the recipe", f"default: {Recipe()}")
    for f in fields(Recipe):
        kind = int if f.type in ("int", int) else float
        recipe.add_argument("--" + f.name.replace("_", "-"), type=kind)
    return parser


if __name__ == "__main__":
    sys.exit(main())
