"""The report's HTML building blocks: tables and images, escaped, shared by every section."""
import html
from typing import List


def table(header: List[str], rows: List[List[object]], text: bool = False) -> str:
    """Numbers align right; a table of text (text=True) aligns left."""
    def cells(tag, values):
        return ''.join(f'<{tag}>{html.escape(fmt(v))}</{tag}>' for v in values)
    body = ''.join(f'<tr>{cells("td", row)}</tr>' for row in rows)
    attributes = ' class="text"' if text else ''
    return f'<table{attributes}><tr>{cells("th", header)}</tr>{body}</table>'


def fmt(value) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) > 1 else f'{value:.4f}'
    return str(value)


def img(name: str, alt: str) -> str:
    return f'<p><img src="{html.escape(name)}" alt="{html.escape(alt)}"></p>'
