"""Text out of PDF, DOCX, TXT, MD, CSV and XLSX files, as sections with page and heading."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from reos_memory.errors import DocumentUnreadable, PayloadTooLarge

FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".xlsx": "xlsx",
}


@dataclass
class Section:
    text: str
    page: int | None = None
    heading: str | None = None


@dataclass
class Extracted:
    format: str
    sections: list[Section]
    pages: int | None


def format_of(filename: str) -> str:
    """The format name for a file name, or DocumentUnreadable(kind=unsupported)."""
    ext = PurePath(filename).suffix.lower()
    if ext not in FORMATS:
        supported = ", ".join(sorted({e.lstrip(".") for e in FORMATS}))
        raise DocumentUnreadable(
            "unsupported",
            f"{filename!r}: unsupported file type {ext or '(none)'}; supported: {supported}",
        )
    return FORMATS[ext]


class _TooManyPages(Exception):
    def __init__(self, pages: int, unit: str) -> None:
        self.pages = pages
        self.unit = unit


def _check_pages(pages: int, max_pages: int | None, unit: str) -> None:
    if max_pages is not None and pages > max_pages:
        raise _TooManyPages(pages, unit)


def extract(
    data: bytes,
    filename: str,
    progress: Callable[[int, int | None], None] | None = None,
    *,
    max_pages: int | None = None,
    field: str = "$.path",
) -> Extracted:
    """Parse a file's bytes; an unreadable, encrypted or text-less file raises DocumentUnreadable.

    A PDF of more than `max_pages` pages (counted in its page tree, before any page is read)
    or an XLSX of more than `max_pages` worksheets raises PayloadTooLarge naming `field`.
    """
    fmt = format_of(filename)
    if not data:
        raise DocumentUnreadable("empty", f"{filename!r} is empty")
    try:
        out = _PARSERS[fmt](data, progress, max_pages)
    except _TooManyPages as exc:
        raise PayloadTooLarge(
            f"{filename!r} has {exc.pages} {exc.unit}, over the limit of {max_pages}"
            f" (max_document_pages); split it into smaller files - at `{field}`",
            field=field,
            limit="max_document_pages",
            limit_pages=max_pages,
            pages=exc.pages,
        ) from None
    except DocumentUnreadable as exc:
        raise DocumentUnreadable(exc.data["kind"], f"{filename!r}: {exc.message}") from exc
    except Exception as exc:  # each parser library has its own error types for broken files
        raise DocumentUnreadable(
            "corrupt", f"{filename!r} is not a readable {fmt.upper()} file: {exc}"
        ) from exc
    out.sections = [s for s in out.sections if s.text.strip()]
    if not out.sections:
        hint = " (a scanned PDF has images, not text)" if fmt == "pdf" else ""
        raise DocumentUnreadable("empty", f"{filename!r} contains no text{hint}")
    return out


def _pdf(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            ok = bool(reader.decrypt(""))  # an owner-only password still opens with ""
        except Exception:
            ok = False
        if not ok:
            raise DocumentUnreadable("encrypted", "the PDF is encrypted with a password")
    pages = len(reader.pages)  # walks the page tree only: no page's content is parsed yet
    _check_pages(pages, max_pages, "pages")
    sections = []
    for i, page in enumerate(reader.pages, 1):
        sections.append(Section(page.extract_text() or "", page=i))
        if progress and (i % 10 == 0 or i == pages):
            progress(i, pages)
    return Extracted("pdf", sections, pages)


def _docx(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    import docx

    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentUnreadable("corrupt", "not a DOCX file (not a zip archive)")
    document = docx.Document(io.BytesIO(data))
    sections: list[Section] = []
    heading: str | None = None
    buf: list[str] = []

    def flush() -> None:
        if buf:
            sections.append(Section("\n\n".join(buf), heading=heading))
            buf.clear()

    for para in document.paragraphs:
        style = (para.style.name if para.style is not None else "") or ""
        text = para.text.strip()
        if not text:
            continue
        if style.startswith("Heading") or style == "Title":
            flush()
            heading = text
        else:
            buf.append(text)
    flush()
    for table in document.tables:
        rows = [" | ".join(cell.text.strip() for cell in row.cells) for row in table.rows]
        sections.append(Section("\n".join(r for r in rows if r.strip(" |")), heading="Table"))
    return Extracted("docx", sections, None)


def _decode(data: bytes) -> str:
    if b"\x00" in data[:4096]:
        raise DocumentUnreadable("corrupt", "the file is binary, not text")
    for enc in (
        ("utf-8-sig", "utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ("utf-8-sig",)
    ):
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    return data.decode("cp1252", errors="replace")  # old Windows text files


def _txt(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    return Extracted("txt", [Section(_decode(data))], None)


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _md(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    sections: list[Section] = []
    heading: str | None = None
    buf: list[str] = []
    in_code = False
    for line in _decode(data).splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        m = None if in_code else _MD_HEADING.match(line)
        if m:
            if "".join(buf).strip():
                sections.append(Section("\n".join(buf).strip(), heading=heading))
            buf = []
            heading = m.group(2)
        else:
            buf.append(line)
    if "".join(buf).strip():
        sections.append(Section("\n".join(buf).strip(), heading=heading))
    return Extracted("md", sections, None)


def _rows_text(header: list[str] | None, rows: list[list[str]]) -> str:
    lines = []
    for row in rows:
        if not any(c.strip() for c in row):
            continue
        if header:
            lines.append(
                "; ".join(f"{h}: {v}" for h, v in zip(header, row, strict=False) if v.strip())
            )
        else:
            lines.append(" | ".join(row))
    return "\n".join(lines)


def _csv(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    text = _decode(data)
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096])
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    if not rows:
        return Extracted("csv", [], None)
    header, body = rows[0], rows[1:]
    return Extracted(
        "csv", [Section(_rows_text(header, body) if body else " | ".join(header))], None
    )


def _xlsx(
    data: bytes, progress: Callable[[int, int | None], None] | None, max_pages: int | None
) -> Extracted:
    import openpyxl

    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise DocumentUnreadable("corrupt", "not an XLSX file (not a zip archive)")
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    sections = []
    try:
        _check_pages(len(book.sheetnames), max_pages, "worksheets")
        for sheet in book.worksheets:
            rows = [
                ["" if v is None else str(v) for v in row]
                for row in sheet.iter_rows(values_only=True)
            ]
            rows = [r for r in rows if any(c.strip() for c in r)]
            if rows:
                sections.append(
                    Section(
                        _rows_text(rows[0], rows[1:]) if len(rows) > 1 else " | ".join(rows[0]),
                        heading=sheet.title,
                    )
                )
    finally:
        book.close()
    return Extracted("xlsx", sections, len(book.sheetnames))


_PARSERS: dict[
    str, Callable[[bytes, Callable[[int, int | None], None] | None, int | None], Extracted]
] = {
    "pdf": _pdf,
    "docx": _docx,
    "txt": _txt,
    "md": _md,
    "csv": _csv,
    "xlsx": _xlsx,
}
