"""Read back what a test wrote into an HTML page with the standard library only: the text of headings, table cells
(row by row) and list items inside the first element of a given class (pytest-tom's block in pytest-html's report).
"""

from __future__ import annotations

from html.parser import HTMLParser

TEXT_TAGS = ("h3", "h4", "th", "td", "li")


class Block(HTMLParser):
    """`rows`: each table row's cells; `texts`: each text tag's contents, in order; `found`: whether the block exists."""

    def __init__(self, css_class: str) -> None:
        super().__init__()
        self.css_class = css_class
        self.found = False
        self.rows: list[list[str]] = []
        self.texts: dict[str, list[str]] = {}
        self._depth = 0  # open elements inside the block; 0 outside it
        self._tag: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._depth:
            self._depth += 1
        elif not self.found and self.css_class in (dict(attrs).get("class") or "").split():
            self.found, self._depth = True, 1
            return
        if not self._depth:
            return
        if tag == "tr":
            self.rows.append([])
        if tag in TEXT_TAGS:
            self._tag = tag
            self.texts.setdefault(tag, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if not self._depth:
            return
        self._depth -= 1
        if tag == self._tag:
            if tag in ("th", "td"):
                self.rows[-1].append(self.texts[tag][-1])
            self._tag = None

    def handle_data(self, data: str) -> None:
        if self._depth and self._tag is not None:
            self.texts[self._tag][-1] += data


def read_block(page: str, css_class: str = "pytest-tom") -> Block:
    block = Block(css_class)
    block.feed(page)
    block.close()
    return block
