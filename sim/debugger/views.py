"""Tables the debugger prints: plain text in a terminal, HTML in Jupyter (``_repr_html_``)."""
from __future__ import annotations

import html


class Table:
    """Rows under headers, with a title; ``str()`` is aligned text, ``_repr_html_()`` an HTML table."""

    def __init__(self, headers: list, rows: list, title: str = ""):
        self.headers = [str(h) for h in headers]
        self.rows = [[("" if c is None else str(c)) for c in r] for r in rows]
        self.title = title

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list:
        i = self.headers.index(name)
        return [r[i] for r in self.rows]

    def __str__(self) -> str:
        widths = [len(h) for h in self.headers]
        for r in self.rows:
            for i, c in enumerate(r):
                widths[i] = max(widths[i], len(c))
        fmt = "  ".join("{:<%d}" % w for w in widths)
        out = [self.title] if self.title else []
        out.append(fmt.format(*self.headers).rstrip())
        for r in self.rows:
            out.append(fmt.format(*r).rstrip())
        if not self.rows:
            out.append("(none)")
        return "\n".join(out)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.headers)
        body = "".join("<tr>" + "".join(f"<td><code>{html.escape(c)}</code></td>" for c in r) + "</tr>"
                       for r in self.rows)
        cap = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
