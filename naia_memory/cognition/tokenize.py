"""Korean-aware tokenization shared by BM25, the graph and the FTS5 path.

Korean is agglutinative: "회사로", "회사를", "회사에서" must all index as
"회사". The reference stripped particles with regexes; here a real
morphological analyser (Kiwi, its model bundled in ``kiwipiepy_model``) keeps
content morphemes (nouns, verb/adjective stems, roots, foreign words,
numbers) and drops particles and endings.
"""
from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_HANGUL = re.compile(r"[가-힣]")


def has_hangul(text: str) -> bool:
    """Any Hangul syllable: the one test for "read this with Kiwi / as Korean words"."""
    return _HANGUL.search(text) is not None

EN_STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as is am are was were be been being
    i me my mine myself you your yours he him his she her hers it its we us our they them their this that
    these those do does did doing have has had having not no yes will would can could should shall may might
    must just very really also too about into over under again there here what which who whom whose when
    where why how all any both each few more most other some such only own same than s t don now user other""".split()
)

# Content morphemes kept for retrieval; particles (J*), endings (E*), suffixes
# (XS*), punctuation (S* except SL/SN/SH) and bound nouns (NNB) are dropped.
_KEEP_TAG_PREFIXES = ("NNG", "NNP", "NR", "VV", "VA", "XR", "SL", "SN", "SH", "MAG")
_DROP_MAG = frozenset({"이제", "지금", "그냥", "좀", "막", "정말", "진짜", "너무", "많이", "아주", "다", "또", "잘", "더", "꼭", "안", "못"})
_KO_STOPWORDS = frozenset({"것", "수", "때", "거", "요즘", "오늘", "사용자", "하", "있", "되", "없", "같", "이렇", "그렇", "어떻", "보", "주", "알"})


def stem_en(word: str) -> str:
    """Snowball (Porter2) English stem, possessive dropped: "painting",
    "paints" and "painted" index as "paint". Measured on the LoCoMo dev half:
    BM25 turn R@5 0.475 -> 0.534 against the plural-only stemmer. A number
    is its own stem: it skips the stemmer (~25 us a word) and the memo,
    where a store full of distinct numbers (dates, prices, ids) would push
    out the words that repeat."""
    if word.isascii() and word.isdigit():
        return word
    return _stem(word)


@functools.lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    if word.endswith("'s"):
        word = word[:-2]
    return _snowball().stemWord(word)


@functools.lru_cache(maxsize=1)
def _snowball():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def tokens(self, text: str) -> list[str]: ...

    def nouns(self, text: str) -> list[str]: ...


def _english_tokens(text: str) -> list[str]:
    """Latin-script words of ``text``: a contraction or possessive keeps its
    head ("i'm" -> "i", "caroline's" -> "caroline"), stopwords go, the rest is stemmed."""
    out = []
    for w in _WORD.findall(text.lower()):
        w = w.split("'", 1)[0]
        if w and w not in EN_STOPWORDS:
            out.append(stem_en(w))
    return out


@dataclass
class KiwiTokenizer:
    """Morpheme tokens via Kiwi; one analyser per process (loading takes ~1.5 s)."""

    name: str = "kiwi"

    _lock = threading.Lock()
    _kiwi = None

    @classmethod
    def _analyser(cls):
        if cls._kiwi is None:
            with cls._lock:
                if cls._kiwi is None:
                    from kiwipiepy import Kiwi

                    cls._kiwi = Kiwi()
        return cls._kiwi

    def warm_up(self) -> None:
        """Load the analyser now: Kiwi takes ~0.5 s to load and its first
        analysis ~0.9 s more, which the first turn stored would otherwise pay."""
        self._analyser().tokenize("기억을 준비합니다")

    def _morphs(self, text: str) -> tuple[tuple[str, str], ...]:
        if not text.strip():
            return ()
        return _analyse(text)

    def tokens(self, text: str) -> list[str]:
        """Korean content morphemes from Kiwi, then Latin words and numbers
        from the text itself (Kiwi cuts some English words, "amaz" + "ing")."""
        out: list[str] = []
        for form, tag in self._morphs(text):
            if not tag.startswith(_KEEP_TAG_PREFIXES) or tag in ("SL", "SN"):
                continue
            if tag == "MAG":
                if form not in _DROP_MAG:
                    out.append(form)
            elif form not in _KO_STOPWORDS:
                out.append(form.lower())
        return out + _english_tokens(text)

    def nouns(self, text: str) -> list[str]:
        """Entity candidates: nouns and foreign words, for the knowledge graph."""
        out: list[str] = []
        for form, tag in self._morphs(text):
            if tag in ("NNG", "NNP") and len(form) >= 2 and form not in _KO_STOPWORDS:
                out.append(form)
        return out + [w for w in _english_tokens(text) if len(w) >= 3 and not w.isdigit()]

    def sentences(self, text: str) -> list[str]:
        """Kiwi's sentences, with a Korean afterthought joined to the sentence it
        completes: a clause that ends in a connective ending of reason ("볼링
        동호회는 나왔어 / 사람들이랑 안 맞아서") or has no predicate at all
        ("유기견 입양했어! / 이름은 콩이") says nothing on its own. English prose
        is split at sentence ends, which Kiwi leaves whole."""
        if not text.strip():
            return []
        out: list[str] = []
        pieces = (p for s in self._analyser().split_into_sents(text) for p in _latin_sentences(s.text))
        for sent in pieces:
            if out and has_hangul(sent) and _afterthought(self._morphs(sent)):
                out[-1] = f"{out[-1]} {sent}"
            else:
                out.append(sent)
        return out


_LATIN_STOP = re.compile(r"[.!?]+\s+(?=[\"'(\[]?[A-Z])")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:[A-Z][a-z]{0,2}|[A-Z](?:\.[A-Z])*|e\.g|i\.e|etc|vs|approx|no)\.$")  # "St.", "Dr.", "U.S.", "e.g."


def _latin_sentences(text: str) -> list[str]:
    """Kiwi leaves English prose whole ("I quit. Then I left." is one sentence);
    split it where a sentence ends and a capital opens the next, but not after
    an abbreviation ("a nurse at St. Mary's")."""
    if has_hangul(text):
        return [text]
    out, start = [], 0
    for m in _LATIN_STOP.finditer(text):
        head = text[start:m.start() + len(m.group(0).rstrip())]
        if _ABBREVIATION.search(head):
            continue
        out.append(head.strip())
        start = m.end()
    out.append(text[start:].strip())
    return [p for p in out if p]


_REASON_ENDINGS = frozenset({"어서", "아서", "여서", "라서", "서", "니까", "으니까"})  # "…, because …"
_PREDICATE_TAGS = ("VV", "VA", "VX", "VCP", "VCN", "XSV", "XSA", "EF")


def _afterthought(morphs: tuple[tuple[str, str], ...]) -> bool:
    words = [(f, t) for f, t in morphs if not t.startswith("S")]
    if not words:
        return False
    return words[-1][1] == "EC" and words[-1][0] in _REASON_ENDINGS or not any(t in _PREDICATE_TAGS for _, t in words)


@functools.lru_cache(maxsize=8192)
def _analyse(text: str) -> tuple[tuple[str, str], ...]:
    """Encode tokenizes a turn for BM25, entities and surprise: analyse it once."""
    return tuple((t.form, t.tag) for t in KiwiTokenizer._analyser().tokenize(text))


@dataclass
class WhitespaceTokenizer:
    """For English-only data or tests that must not load Kiwi; says so by name."""

    name: str = "whitespace"

    def tokens(self, text: str) -> list[str]:
        return _english_tokens(text) + [w for w in re.findall(r"[가-힣]+", text)]

    def nouns(self, text: str) -> list[str]:
        return [w for w in self.tokens(text) if len(w) >= 3]

    def sentences(self, text: str) -> list[str]:
        return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]
