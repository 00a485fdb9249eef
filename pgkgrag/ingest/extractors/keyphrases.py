"""The keyphrases extractor: a graph for any text, without an LLM, a names list or a model download.

Two kinds of entity per document, found in its text:
- Names: runs of capitalized words, with the short lowercase connectors names carry inside
  ("University of Oxford", "Banco do Brasil"); a run's leading and trailing stop words are dropped
  ("The", "Em"), so a capitalized sentence start is not a name, and so is one word the text also
  writes in lowercase ("Files" opening a sentence, a listing's "REAL": common words, not names).
- Concepts: the document's best keyphrases by YAKE! (the `yake` library: statistics of the text
  itself, no model, no download), kept when they are two or three lowercase words, none of them a
  stop word ("payment gateway", "contrato de renovação" is not: "de").

Stop words are yake's own lists for the document's language (English and Portuguese, and the
other languages yake ships): the text search configuration its language stands for in the tenant
(kgrag.text_search_config, the same that stems its words), or, for a document that names no
language, the language whose stop words its text holds most of. An entity is cited by the chunks
whose text contains it (word-bounded, case and accent insensitive: kgrag.canonical_name), and
entities cited by the same chunk are linked by co-occurrence, as for every extractor. The names in
a document's title are what the whole document is about: the first chunk cites them too, even
where the text never repeats them.
"""

from __future__ import annotations

import functools
import hashlib
import re
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from pgkgrag.ingest.extractors.base import Extraction, FoundEntity, PreparedDocument, normalized

# yake's language code of each PostgreSQL text search configuration that has one
_YAKE_LANGUAGE = {"english": "en", "portuguese": "pt", "spanish": "es", "french": "fr", "german": "de",
                  "italian": "it", "dutch": "nl", "danish": "da", "finnish": "fi", "hungarian": "hu",
                  "norwegian": "no", "romanian": "ro", "russian": "ru", "swedish": "sv", "turkish": "tr"}  # fmt: skip
_GUESSED = ("en", "pt", "es", "fr", "de", "it")  # for a document that names no language
_CONNECTORS = frozenset({"of", "the", "de", "da", "do", "das", "dos", "del", "la", "le", "von", "van"})
# a title before a surname ("Ms. Liu"): it starts a name, and its period ends no sentence (the same
# words kgrag_private.fold_short_forms folds such a name by)
_HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "sr", "sra", "srta", "dra", "dom", "dona"})
_WORD = re.compile("[^\\W\\d_](?:[\\w'\u2019.-]*\\w)?")  # a word starts with a letter
_SENTENCE_END = re.compile(r"[.!?;:]\s*$|\n\s*$")
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")  # letters, an inner apostrophe or hyphen
_EDGE_PUNCTUATION = "\"'\u2018\u2019\u201c\u201d()[]{}<>,.;:!?\u00bf\u00a1*_`"
KEYPHRASES_PER_DOCUMENT = 10
NAME_MAX_WORDS = 6
NAME_WORD_MAX_CHARS = 40  # a longer "word" (a hash, a key, a base64 line) is no part of a name or concept

if TYPE_CHECKING:
    import yake


@functools.cache
def stop_words(language: str) -> frozenset[str]:
    """yake's stop-word list for a yake language code (English when it has none)."""
    import yake  # loaded when text is extracted, not with pgkgrag

    folder = Path(yake.__file__).parent / "core" / "StopwordsList"
    path = folder / f"stopwords_{language}.txt"
    if not path.is_file():
        path = folder / "stopwords_en.txt"
    lines = path.read_text(encoding="utf-8", errors="ignore").splitlines()
    return frozenset(w.strip().lower() for w in lines if w.strip())


def language_of(config: str | None, text: str) -> str:
    """The yake language of a document: that of the text search configuration its language stands
    for (kgrag.text_search_config), else the one whose stop words its first 2,000 characters hold
    most of."""
    if config and config in _YAKE_LANGUAGE:
        return _YAKE_LANGUAGE[config]
    words = [w.lower() for w in _WORD.findall(text[:2000])]
    return max(_GUESSED, key=lambda language: (sum(w in stop_words(language) for w in words), language == "en"))


def names_in(text: str, stops: frozenset[str]) -> list[str]:
    """Runs of capitalized words (connectors allowed inside), leading and trailing stop words dropped."""
    found: list[str] = []
    run: list[str] = []
    previous_end = 0

    def close() -> None:
        words = list(run)
        titled = bool(words) and words[0].rstrip(".").lower() in _HONORIFICS
        while not titled and words and (words[0].lower() in stops or words[0].lower() in _CONNECTORS):
            words.pop(0)
        while words and (words[-1].lower() in stops or words[-1].lower() in _CONNECTORS):
            words.pop()
        if words and len(words) <= NAME_MAX_WORDS and not (titled and len(words) == 1):
            found.append(" ".join(words))
        run.clear()

    for match in _WORD.finditer(text):
        word = match.group()
        gap = text[previous_end : match.start()]
        previous_end = match.end()
        after_title = len(run) == 1 and run[0].lower() in _HONORIFICS and gap.strip() in ("", ".")
        if after_title and gap.strip():
            run[0] += "."  # "Ms. Liu" as written
        elif run and (gap.strip() or _SENTENCE_END.search(gap)):  # punctuation between words ends a name
            close()
        if word[0].isupper() and word.lower() in _HONORIFICS and run:  # a title starts a name
            close()
        if len(word) <= NAME_WORD_MAX_CHARS and (word[0].isupper() or (run and word.lower() in _CONNECTORS)):
            run.append(word)
        elif run:
            close()
    if run:
        close()
    return found


def lowercase_words(text: str) -> frozenset[str]:
    """The words a text writes in lowercase somewhere, as words: not a part of an address, a path or
    code (ana@contoso.com, /etc/postgresql, git_status), which a name may be part of."""
    words = (token.strip(_EDGE_PUNCTUATION) for token in text.split())
    return frozenset(w for w in words if w.islower() and _PLAIN_WORD.fullmatch(w))


def common_word(name: str, lowercase: frozenset[str]) -> bool:
    """A one-word name the same text also writes in lowercase is a common word capitalized (at a
    sentence's start, in a heading) or shouted (a code listing's FILE, REAL), not a name."""
    return " " not in name and name.lower() in lowercase


class KeyphraseExtractor:
    """Names and YAKE! keyphrases found in each document, cited by the chunks that contain them."""

    name = "keyphrases"

    def fingerprint(self) -> str:
        settings = f"{metadata.version('yake')}:{KEYPHRASES_PER_DOCUMENT}:{NAME_MAX_WORDS}:{NAME_WORD_MAX_CHARS}"
        return "keyphrases:v5:" + hashlib.sha256(settings.encode()).hexdigest()[:12]

    @staticmethod
    @functools.cache
    def _yake(language: str) -> yake.KeywordExtractor:
        import yake

        return yake.KeywordExtractor(lan=language, n=3, top=3 * KEYPHRASES_PER_DOCUMENT)

    def _phrases(self, prepared: PreparedDocument) -> list[tuple[str, str, bool]]:
        """(phrase, type, in the title) of one document: the title's names first, the text's
        names, then concepts."""
        text = prepared.document.text
        language = language_of(prepared.config if prepared.document.language else None, text)
        stops = stop_words(language)
        common = lowercase_words(text)
        phrases = [
            (name, "Name", True) for name in names_in(prepared.document.title, stops) if not common_word(name, common)
        ]
        phrases += [(name, "Name", False) for name in names_in(text, stops) if not common_word(name, common)]
        # a concept is a phrase of lowercase content words: capitalized words are the names' (a
        # yake phrase that runs over a name, "Costa runs", is neither), one word alone is too common
        concepts = [
            phrase
            for phrase, _ in self._yake(language).extract_keywords(text)
            if len(phrase.split()) > 1
            and all(
                word.islower() and word not in stops and len(word) <= NAME_WORD_MAX_CHARS for word in phrase.split()
            )
        ]
        phrases += [(phrase, "Concept", False) for phrase in concepts[:KEYPHRASES_PER_DOCUMENT]]
        return phrases

    def extract(self, conn: psycopg.Connection, docs: list[PreparedDocument]) -> dict[str, Extraction | Exception]:
        found = [self._phrases(prepared) for prepared in docs]
        texts = [chunk.text for prepared in docs for chunk in prepared.chunks]
        texts += [phrase for phrases in found for phrase, _, _ in phrases]
        canon = iter(normalized(conn, "canonical_name", texts))
        haystacks = [[f" {next(canon)} " for _ in prepared.chunks] for prepared in docs]
        results: dict[str, Extraction | Exception] = {}
        for prepared, phrases, hays in zip(docs, found, haystacks, strict=True):
            entities: dict[str, FoundEntity] = {}
            for phrase, kind, in_title in phrases:
                key = next(canon)
                if not key or key in entities:
                    continue  # a name found again, or a concept that is also a name
                ordinals = [
                    c.ordinal
                    for i, (c, hay) in enumerate(zip(prepared.chunks, hays, strict=True))
                    if (in_title and i == 0) or f" {key} " in hay
                ]
                if ordinals:
                    entities[key] = FoundEntity(phrase, kind, ordinals=ordinals)
            results[prepared.document.doc_id] = Extraction(entities=sorted(entities.values(), key=lambda e: e.name))
        return results
