"""How a patch's indentation maps onto a file's, when the patch's lines matched the file only ignoring whitespace.

Pure functions on strings. Two mappings are recognised, and nothing else is guessed:

- one string offset: every matched line of the file is the patch's line with the same prefix added (or removed);
- tabs against spaces at one tab width (4, 8 or 2 columns): the file indents with tabs where the patch has spaces
  (or the reverse), with one column offset for every line. Added lines are then written in the file's style.

Each mapping has two readings of an added line: shifted by the offset the context lines show (the default), or
as the patch wrote it (the context alone may have drifted). The caller picks between them.
"""

from __future__ import annotations

from dataclasses import dataclass

TAB_WIDTHS = (4, 8, 2)
_BLANKS = frozenset(" \t")


def indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


@dataclass(frozen=True, slots=True)
class Reindent:
    """The mapping from the patch's indentation to the file's.

    ``shift``/``grow``: the string added to (or removed from) the patch's indentation. ``width`` > 0: tabs against
    spaces, a tab being ``width`` columns, ``drift`` columns added, written with tabs when ``tabs``.
    """

    shift: str = ""
    grow: bool = True
    width: int = 0
    drift: int = 0
    tabs: bool = False

    @property
    def drifts(self) -> bool:
        """The two readings differ: the context lines are indented differently from the file's."""
        return self.drift != 0 if self.width else bool(self.shift)

    def line(self, text: str, shifted: bool) -> str | None:
        """``text`` (an added line) indented for the file; None when it is indented less than the offset removes."""
        if not text.strip():
            return text
        if self.width:
            return self._columns(text, shifted)
        if not shifted or not self.shift:
            return text
        if self.grow:
            return self.shift + text
        return text[len(self.shift) :] if text.startswith(self.shift) else None

    def _columns(self, text: str, shifted: bool) -> str | None:
        lead = indent(text)
        if not set(lead) <= _BLANKS:
            return None
        columns = len(lead.expandtabs(self.width)) + (self.drift if shifted else 0)
        if columns < 0:
            return None
        lead = "\t" * (columns // self.width) + " " * (columns % self.width) if self.tabs else " " * columns
        return lead + text.lstrip()

    def describe(self) -> str | None:
        """A note for the model when the file's indentation style was written instead of the patch's."""
        if not self.width:
            return None
        file_style, patch_style = ("tabs", "spaces") if self.tabs else ("spaces", "tabs")
        return (
            f"the patch is indented with {patch_style} where the file uses {file_style} (a tab read as {self.width} "
            f"columns); the added lines were written with {file_style}"
        )


Mismatch = tuple[int, str, str]  # the offset of the first line that breaks the mapping, the patch's, the file's


def infer(pairs: list[tuple[int, str, str]]) -> Reindent | Mismatch:
    """The mapping that every (offset, patch indent, file indent) pair of non-blank matched lines agrees with.

    The string offset is tried first (it keeps any mix of whitespace as the file has it); tab widths only when
    it fails and the indentation is made of spaces and tabs alone.
    """
    by_string = _string_shift(pairs)
    if isinstance(by_string, Reindent):
        return by_string
    by_columns = _column_shift(pairs)
    return by_columns if by_columns is not None else by_string


def _string_shift(pairs: list[tuple[int, str, str]]) -> Reindent | Mismatch:
    shift: str | None = None
    grow = True
    for offset, ours, theirs in pairs:
        if shift is None:
            if theirs.endswith(ours):
                shift, grow = theirs[: len(theirs) - len(ours)], True
            elif ours.endswith(theirs):
                shift, grow = ours[: len(ours) - len(theirs)], False
        if shift is None or (theirs != shift + ours if grow else ours != shift + theirs):
            return offset, ours, theirs
    return Reindent(shift or "", grow)


def _column_shift(pairs: list[tuple[int, str, str]]) -> Reindent | None:
    if not pairs or not all(set(ours) <= _BLANKS and set(theirs) <= _BLANKS for _, ours, theirs in pairs):
        return None
    file_tabs = any("\t" in theirs for _, _, theirs in pairs)
    patch_tabs = any("\t" in ours for _, ours, _ in pairs)
    if file_tabs == patch_tabs:
        return None  # not a tabs-against-spaces slip: the same style indented inconsistently
    found: list[Reindent] = []
    for width in TAB_WIDTHS:
        drifts = {len(theirs.expandtabs(width)) - len(ours.expandtabs(width)) for _, ours, theirs in pairs}
        if len(drifts) == 1:
            found.append(Reindent(width=width, drift=drifts.pop(), tabs=file_tabs))
    if not found:
        return None
    return next((r for r in found if r.drift == 0), found[0])
