"""The text of a PDF (a research report, an announcement) with pypdf, page by page.

Scanned PDFs have no text layer and are refused as such; there is no OCR.
"""

from __future__ import annotations

import io
import logging

from wyckoff.cli.tools import ToolFailure

MAX_PDF_PAGES = 300


def pdf_text(data: bytes, name: str) -> str:
    """Every page's text under a "--- 第 N 页 ---" line; a clear refusal when there is none."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # warnings about sloppy PDFs
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ToolFailure(f"{name} 是加密的 PDF，无法提取文字。")
        total = len(reader.pages)
        pages = [page.extract_text() or "" for page in reader.pages[:MAX_PDF_PAGES]]
    except ToolFailure:
        raise
    except Exception as exc:  # pypdf raises many kinds of error for damaged files
        detail = f"{type(exc).__name__}: {exc}"  # may quote the file's own bytes
        raise ToolFailure(f"{name} 看起来是 PDF，但无法解析。", untrusted=detail) from None
    if not any(page.strip() for page in pages):
        raise ToolFailure(f"{name} 是 PDF，但没有可提取的文字（可能是扫描件，本工具不做 OCR）。")
    text = "\n\n".join(f"--- 第 {n} 页 ---\n{page.strip()}" for n, page in enumerate(pages, 1))
    if total > MAX_PDF_PAGES:
        text += f"\n\n……（共 {total} 页，只提取了前 {MAX_PDF_PAGES} 页）"
    return text
