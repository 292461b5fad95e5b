"""String tests that replaced regular expressions on an agent's summary update (none
is compiled there) take exactly what those expressions took."""

from __future__ import annotations

import io
import re

import yaml
from hypothesis import given
from hypothesis import strategies as st

from orange.store import flat, taskfile
from orange.store.layout import valid_task_id
from tests.conftest import examples

FAST = examples(300)

# The characters on either side of each expression's classes, and a few beyond ASCII
# that Unicode calls digits or letters.
EDGES = "09azAZ_-+.:'\n \t/@`[{~\x7f\u00e9\u00b2\u0661\u0130\u0131infaNINF"
TEXT = st.text(alphabet=EDGES, max_size=70) | st.text(max_size=12)


IDS = st.from_regex(r"[0-9a-z][0-9a-z_-]{0,64}\n{0,2}", fullmatch=True)


@FAST
@given(text=TEXT | IDS)
def test_task_ids(text: str) -> None:
    assert valid_task_id(text) == bool(re.match(r"^[0-9a-z][0-9a-z_-]{0,63}$", text))


@FAST
@given(text=TEXT | st.text(alphabet="aZ_-9", min_size=120, max_size=135))
def test_frontmatter_keys(text: str) -> None:
    expected = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,127}", text) is not None
    assert flat._good_key(text) == (expected and text not in flat._RESERVED_KEYS)


@FAST
@given(text=st.text(alphabet="+-0123456789a\u0661\u00b2", min_size=1, max_size=6))
def test_numbers(text: str) -> None:
    if re.fullmatch(r"[-+]?(?:0|[1-9][0-9]*)", text):
        assert flat._number(text) == int(text)
    else:
        assert flat._number(text) == text


NUMBERS = st.from_regex(r"[-+]{0,2}\.?(inf|nan|INF|Nan|[0-9]|\u0130nf|x)", fullmatch=True)


@FAST
@given(text=TEXT | NUMBERS)
def test_number_like_strings(text: str) -> None:
    pattern = r"^[-+]?(?:\.?[0-9]|\.(?:inf|nan))"
    assert flat.number_like(text) == bool(re.match(pattern, text, re.IGNORECASE))


def _dumper_reads_as_text(text: str) -> bool:
    """Whether PyYAML's dumper (YAML 1.1) reads ``text``, written plain, as a string."""
    resolver = yaml.SafeDumper(io.StringIO())
    tag: str = resolver.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return tag == "tag:yaml.org,2002:str"


# YAML 1.1's words for booleans and nulls, the merge and value keys, and near misses.
WORDS = st.sampled_from(
    [
        *taskfile._NOT_TEXT,
        "y",
        "n",
        "Y",
        "N",
        "yES",
        "nO",
        "oN",
        "ofF",
        "tRUE",
        "NuLL",
        "<",
        "<<<",
        "!!",
        "&a",
        "**",
    ]
) | st.sampled_from(["==", "~~", "null ", " no", "on!", "Off.", "x", "_", "e", "inf", "NaN"])


@FAST
@given(text=WORDS | TEXT)
def test_text_the_dumper_reads_as_another_type(text: str) -> None:
    """The flat writer tells without PyYAML (not loaded by a summary update) which text
    the dumper's resolver takes for something else: what `flat.number_like` does not
    catch is one of a few words."""
    if text and not flat.number_like(text):
        assert taskfile._resolves_as_text(text) == _dumper_reads_as_text(text)


def test_the_dumpers_resolvers_begin_where_the_writer_looks() -> None:
    """Every first character PyYAML's dumper resolves by is one `flat.number_like` takes
    (a digit, a sign, a dot) or begins one of the words (the empty text, null, is never
    written plain): a resolver added by a newer PyYAML would show here."""
    words = {"", *(word[0] for word in taskfile._NOT_TEXT)}
    firsts = set(yaml.SafeDumper.yaml_implicit_resolvers)
    assert firsts - words - set("-+.0123456789") == set()
    assert all(not _dumper_reads_as_text(word) for word in taskfile._NOT_TEXT)


# YAML 1.1's words (its booleans and nulls; the merge and value keys, the lone
# indicators PyYAML resolves), written here, not taken from the set under test.
YAML11_WORDS = ["yes", "no", "on", "off", "true", "false", "null", "y", "n", "~", "<<", "="]
YAML11_WORDS += ["!", "&", "*", "yes!", "nulls", "offf", "<<<"]


def _casings(word: str) -> set[str]:
    """Every spelling of ``word`` in upper and lower case letters."""
    spellings = {""}
    for char in word:
        spellings = {done + case for done in spellings for case in {char.lower(), char.upper()}}
    return spellings


def test_every_casing_of_yaml_11s_words_is_told_as_the_dumper_tells_it() -> None:
    """The flat writer's words agree with the dumper on every upper/lower spelling of
    YAML 1.1's words and a few near them (``Off``, ``oFF``, ``NULL``, ``nUll``...)."""
    spellings = sorted({s for word in YAML11_WORDS for s in _casings(word)})
    assert len(spellings) == 155
    told = {s for s in spellings if not taskfile._resolves_as_text(s)}
    assert told == {s for s in spellings if not _dumper_reads_as_text(s)}
