"""How deep an HTML page nests, estimated from its tags before it is parsed: the HTML parser's time
grows with the depth of its stack of open elements times the length of the page (a page nested
100,000 deep took it minutes), so a page nested past a bound is refused before the parser sees it.

The estimate follows the rules of the HTML tree builder that decide depth, roughly: void elements
and those of foreign content closed with `/>` open nothing; a start tag of an element whose end tag
is optional (p, li, dt, dd, tr, td, ...) closes an open one of its kind within its container; an
end tag closes up to its element unless an element the tree builder stops at lies between (a block
for an inline element's end tag, a table or a cell for a block's); a formatting element closed past
a block (`<b><p>..</b></p>`, which old pages are full of) is taken out; the text of scripts, styles
and comments holds no tags. It errs low on crafted misnesting (the parse is then still bounded by
the reader's time limit, and the walk of the parsed page checks the real depth) and never high on
a page closed as browsers close it."""

from __future__ import annotations

import re

# comments and the text of the elements whose content is not markup (up to their end tag, or the
# end of the page when it has none)
_OPAQUE = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style|textarea|title|xmp|iframe|noembed|noframes|noscript|plaintext)\b"
    rb".*?(?:</\1\s*>|\Z)",
    re.S | re.I,
)
# a tag (of a page in lower case, cut after its last `>`): its slash, name and attributes, up to the
# first `>` (as the tokenizer reads a name: `<div<div>` is one element); a last `/` closes it in
# foreign content. With a `>` after every `<`, each try ends at the next `>`: linear.
_TAG = re.compile(rb"<(/?)([a-z][^\s/>]*)([^>]*)>")
_VOID = frozenset(
    b"area base br col embed hr img input link meta source track wbr param keygen basefont bgsound frame image "
    b"html head body".split()  # (the last three: one each, wherever their tags stand)
)
_FORMATTING = frozenset(b"a b big code em font i nobr s small strike strong tt u".split())
_SCOPE = frozenset(b"applet caption html table td th marquee object template".split())
_SPECIAL = _SCOPE | frozenset(
    b"address article aside blockquote button center dd details dir div dl dt fieldset figcaption figure "
    b"footer form frameset h1 h2 h3 h4 h5 h6 header hgroup li listing main menu nav ol p pre search section "
    b"select summary tbody textarea tfoot thead tr ul".split()
)
_HEADINGS = (b"h1", b"h2", b"h3", b"h4", b"h5", b"h6")
_CELLS = (b"td", b"th")
_SECTIONS = (b"thead", b"tbody", b"tfoot", b"caption", b"colgroup")
_RUBY = (b"rb", b"rt", b"rtc", b"rp")
_SOMEWHERE = frozenset[bytes]()  # no container stops the search
# the start tags that close an open p first (within the p's scope)
_CLOSE_P = frozenset(
    b"address article aside blockquote center details dialog dir div dl fieldset figcaption figure footer form "
    b"header hgroup main menu nav ol p search section summary ul h1 h2 h3 h4 h5 h6 pre listing hr li dd dt".split()
)
_P_SCOPE = _SCOPE | {b"button"}
# a start tag that closes an open element of these names (the deepest one above its nearest
# container of these, and what is open inside it): an element whose end tag is optional, and those
# a second one of closes or is ignored within
_CLOSES: dict[bytes, tuple[tuple[bytes, ...], frozenset[bytes]]] = {
    b"p": ((b"p",), _P_SCOPE),
    b"li": ((b"li",), frozenset({b"ul", b"ol", b"menu"})),
    **{name: ((b"dt", b"dd"), frozenset({b"dl"})) for name in (b"dt", b"dd")},
    b"option": ((b"option",), frozenset({b"select", b"datalist", b"optgroup"})),
    b"optgroup": ((b"optgroup", b"option"), frozenset({b"select", b"datalist"})),
    **{name: (_CELLS, frozenset({b"tr", b"table"})) for name in _CELLS},
    b"tr": ((b"tr",), frozenset({b"table", *_SECTIONS})),
    **{name: (_SECTIONS, frozenset({b"table"})) for name in _SECTIONS},
    **{name: (_RUBY, frozenset({b"ruby"})) for name in _RUBY},
    **{name: ((name,), _SCOPE) for name in (b"a", b"nobr", b"button")},
    **{name: ((name,), _SOMEWHERE) for name in (b"form", b"select")},
    b"table": ((b"table",), frozenset({*_CELLS, b"caption"})),
    **{name: (_HEADINGS, _SPECIAL - set(_HEADINGS)) for name in _HEADINGS},
}


def _find(names: list[bytes], wanted: tuple[bytes, ...], stops: frozenset[bytes]) -> int | None:
    """Where the deepest of the wanted names stands above the topmost element of `stops`, if any."""
    found = None
    for at in range(len(names) - 1, -1, -1):
        if names[at] in wanted:
            found = at
        elif names[at] in stops:
            break
    return found


def _cut(names: list[bytes], count: dict[bytes, int], at: int | None) -> None:
    """Close the element at `at` and every one open inside it."""
    if at is not None:
        for name in names[at:]:
            count[name] -= 1
        del names[at:]


def _end(names: list[bytes], count: dict[bytes, int], name: bytes) -> None:
    """An end tag whose element is open, but not the one last opened."""
    if name not in _FORMATTING:
        _cut(names, count, _find(names, (name,), _SCOPE if name in _SPECIAL else _SPECIAL))
        return
    at = _find(names, (name,), _SOMEWHERE)
    if at is not None and any(above in _SPECIAL for above in names[at + 1 :]):
        del names[at]  # closed past a block: the tree builder moves it into the block
        count[name] -= 1
    else:
        _cut(names, count, at)


def too_deep(page: bytes, limit: int) -> bool:
    """Whether the page nests deeper than `limit` elements (an estimate: see the module)."""
    names: list[bytes] = []  # the open elements
    count: dict[bytes, int] = {}  # how many of each are open
    markup = _OPAQUE.sub(b"", page).lower()
    for closing, name, attributes in _TAG.findall(markup, 0, markup.rfind(b">") + 1):
        if closing:
            if names and names[-1] == name:  # the element last opened, as most end tags close
                names.pop()
                count[name] -= 1
            elif count.get(name):
                _end(names, count, name)
            continue
        if name in _VOID or (attributes.endswith(b"/") and (count.get(b"svg") or count.get(b"math"))):
            continue
        if name in _CLOSE_P and count.get(b"p"):
            _cut(names, count, _find(names, (b"p",), _P_SCOPE))
        rule = _CLOSES.get(name)
        if rule is not None and any(count.get(closed) for closed in rule[0]):
            _cut(names, count, _find(names, *rule))
        names.append(name)
        count[name] = count.get(name, 0) + 1
        if len(names) > limit:
            return True
    return False
